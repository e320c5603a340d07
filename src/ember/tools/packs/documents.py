"""Text and tables out of PDF (pypdf), XLSX (openpyxl), CSV and DOCX (python-docx) files.

Every failure is a `ToolCallError` that names the file and says what to do: a missing file, a
corrupt or encrypted PDF, a PDF with no text layer (a scan), an unknown file type.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path
from typing import Any, TypedDict

from ember.errors import ToolCallError

__all__ = ["KINDS", "Document", "Table", "read_document"]

KINDS = {".pdf": "pdf", ".xlsx": "xlsx", ".xlsm": "xlsx", ".csv": "csv", ".docx": "docx"}
KINDS |= {".txt": "text", ".md": "text"}


class Table(TypedDict):
    name: str
    rows: list[list[str]]


class Document(TypedDict):
    path: str
    kind: str
    text: str
    tables: list[Table]
    pages: int


def read_document(tool: str, path: Path, max_pages: int = 500) -> Document:
    """The text and tables of the file at `path`, which exists (see the module docstring)."""
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise ToolCallError(
            tool,
            f"{path.name!r} is not a document this pack reads: give a "
            f"{', '.join(sorted(KINDS))} file",
        )
    reader = {"pdf": _pdf, "xlsx": _xlsx, "csv": _csv, "docx": _docx, "text": _text}[kind]
    text, tables, pages = reader(tool, path, max_pages)
    return {"path": str(path), "kind": kind, "text": text, "tables": tables, "pages": pages}


def _pdf(tool: str, path: Path, max_pages: int) -> tuple[str, list[Table], int]:
    import pypdf

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pypdf warns about every oddity it repairs
            reader = pypdf.PdfReader(path)
            if reader.is_encrypted:
                raise ToolCallError(
                    tool,
                    f"{path.name!r} is an encrypted PDF: save a copy without a password "
                    "and read that",
                )
            count = len(reader.pages)
            if count > max_pages:
                raise ToolCallError(
                    tool, f"{path.name!r} has {count} pages, more than max_pages={max_pages}"
                )
            texts = [page.extract_text() or "" for page in reader.pages]
    except ToolCallError:
        raise
    except Exception as exc:
        raise ToolCallError(
            tool,
            f"{path.name!r} is not a readable PDF ({type(exc).__name__}: {exc}): is it "
            "corrupt or truncated? Get the file again",
        ) from None
    text = "\n".join(texts).strip()
    if not text:
        raise ToolCallError(
            tool, f"{path.name!r} has no text layer (a scanned image?): run OCR on it first"
        )
    return text, [], count


def _xlsx(tool: str, path: Path, _: int) -> tuple[str, list[Table], int]:
    import openpyxl

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:
        raise ToolCallError(
            tool, f"{path.name!r} is not a readable XLSX workbook ({type(exc).__name__}: {exc})"
        ) from None
    try:
        tables: list[Table] = []
        for sheet in book.worksheets:
            rows = [[_cell(v) for v in row] for row in sheet.iter_rows(values_only=True)]
            tables.append({"name": sheet.title, "rows": [r for r in rows if any(r)]})
    finally:
        book.close()
    return _tables_text(tables), tables, len(tables)


def _csv(tool: str, path: Path, _: int) -> tuple[str, list[Table], int]:
    raw = _decoded(tool, path)
    try:
        dialect: Any = csv.Sniffer().sniff(raw[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = [row for row in csv.reader(io.StringIO(raw), dialect) if any(c.strip() for c in row)]
    tables: list[Table] = [{"name": path.stem, "rows": rows}]
    return _tables_text(tables), tables, 1


def _docx(tool: str, path: Path, _: int) -> tuple[str, list[Table], int]:
    import docx

    try:
        document = docx.Document(str(path))
    except Exception as exc:
        raise ToolCallError(
            tool, f"{path.name!r} is not a readable DOCX document ({type(exc).__name__}: {exc})"
        ) from None
    paragraphs = [p.text for p in document.paragraphs if p.text.strip()]
    tables: list[Table] = [
        {"name": f"table {i}", "rows": [[c.text for c in row.cells] for row in table.rows]}
        for i, table in enumerate(document.tables, start=1)
    ]
    text = "\n".join(paragraphs + ([_tables_text(tables)] if tables else []))
    return text, tables, 1


def _text(tool: str, path: Path, _: int) -> tuple[str, list[Table], int]:
    return _decoded(tool, path), [], 1


def _decoded(tool: str, path: Path) -> str:
    data = path.read_bytes()
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise ToolCallError(tool, f"{path.name!r} is not text in UTF-8 or Windows-1252")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _tables_text(tables: list[Table]) -> str:
    return "\n".join("\t".join(row) for table in tables for row in table["rows"])
