"""The docs pack: documents' text and tables, invoices, financial statements, slide outlines.

```toml
[packs.docs]
roots = ["~/documents"]   # default: the files pack's roots
max_pages = 500
```

Reads (and the files it writes: ledgers, outlines, charts) stay inside the roots, as in the
files pack. `docs_invoice_batch` books a folder of invoices into a CSV ledger, each invoice
exactly once even across a crash and a resume (`ember.tools.packs.invoices.Ledger`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypedDict

import msgspec

from ember.config import DocsPack
from ember.tools.context import current_step
from ember.tools.decorator import ToolFunction, tool
from ember.tools.packs.documents import Document, read_document
from ember.tools.packs.files import atomic_write
from ember.tools.packs.finance import (
    Statement,
    extract_statement,
    outline_markdown,
    render_charts,
    slide_outline,
)
from ember.tools.packs.invoices import Invoice, Ledger, extract_invoice
from ember.tools.packs.roots import Roots

__all__ = ["DocsTools"]


class FileInvoice(Invoice):
    path: str


class Failure(TypedDict):
    file: str
    error: str


class Batch(TypedDict):
    ledger: str
    files: int
    booked: int
    already_booked: int
    valid: int
    invalid: int
    failed: list[Failure]
    totals: dict[str, float]
    summary: str | None


def _batch_markdown(batch: Batch) -> str:
    """A batch's summary as Markdown, for a person: counts, unreadable files, totals."""
    failed = "".join(f"\n  - {f['file']}: {f['error']}" for f in batch["failed"]) or " none"
    totals = ", ".join(f"{code} {amount:,.2f}" for code, amount in sorted(batch["totals"].items()))
    return (
        "# Invoice batch\n\n"
        f"- invoices: {batch['files']}\n"
        f"- booked by this batch: {batch['booked']} "
        f"(already in the ledger: {batch['already_booked']})\n"
        f"- valid: {batch['valid']}; totals do not add up: {batch['invalid']}\n"
        f"- unreadable:{failed}\n"
        f"- totals of the valid invoices: {totals or 'none'}\n"
        f"- ledger: {batch['ledger']}\n"
    )


class Outline(TypedDict):
    json_path: str
    markdown_path: str
    charts: list[str]
    ratios: list[dict[str, Any]]
    slides: list[dict[str, Any]]
    chart_suggestions: list[dict[str, Any]]


class DocsTools:
    """The docs pack's tools over one configuration."""

    def __init__(self, config: DocsPack, roots: list[str]) -> None:
        self.roots = Roots(config.roots or roots)
        self.max_pages = config.max_pages

    def tools(self) -> list[ToolFunction]:
        return [
            self.docs_read,
            self.docs_invoice,
            self.docs_invoice_batch,
            self.docs_financials,
            self.docs_slide_outline,
        ]

    def _read(self, tool: str, path: str) -> Document:
        return read_document(tool, self.roots.existing_file(tool, path), self.max_pages)

    @tool(idempotent=True, read_only=True)
    def docs_read(self, path: str) -> Document:
        """The text and tables of a PDF, XLSX, CSV or DOCX file (a sheet or table: rows of
        cells as text).

        Args:
            path: The document, absolute or relative to the first root.
        """
        return self._read("docs_read", path)

    @tool(idempotent=True, read_only=True)
    def docs_invoice(self, path: str) -> FileInvoice:
        """Extract an invoice from a text PDF (or DOCX, text): number, vendor, issue and due
        dates, currency, subtotal, tax, total and line items, each with a confidence and the
        text it came from; `valid` is true when the amounts add up.

        Args:
            path: The invoice file.
        """
        document = self._read("docs_invoice", path)
        return {"path": document["path"], **extract_invoice(document["text"])}

    @tool(idempotent=True, read_only=False)
    def docs_invoice_batch(
        self, folder: str, ledger: str, summary: str | None = None, pattern: str = "*.pdf"
    ) -> Batch:
        """Extract and check every invoice in a folder and book each into a CSV ledger,
        exactly once (a resumed or repeated batch skips invoices already booked). Returns a
        summary: counts, the files that could not be read, totals by currency; written as
        Markdown to a file too, given one.

        Args:
            folder: The folder of invoices.
            ledger: The CSV ledger to append to (created if missing).
            summary: The path of a Markdown file to write the summary to (replaced).
            pattern: Which files are invoices, a glob.
        """
        tool_name = "docs_invoice_batch"
        files = sorted(self.roots.existing_dir(tool_name, folder).glob(pattern))
        written = self.roots.inside(tool_name, summary) if summary is not None else None
        book = Ledger(self.roots.inside(tool_name, ledger))
        step = _step_label()
        batch: Batch = {
            "ledger": str(book.path), "files": len(files), "booked": 0, "already_booked": 0,
            "valid": 0, "invalid": 0, "failed": [], "totals": {}, "summary": None,
        }  # fmt: skip
        for file in files:
            try:
                invoice = extract_invoice(read_document(tool_name, file, self.max_pages)["text"])
            except Exception as exc:  # one bad file never stops the batch
                batch["failed"].append({"file": file.name, "error": str(exc)})
                continue
            batch["booked" if book.book(file, invoice, step) else "already_booked"] += 1
            batch["valid" if invoice["valid"] else "invalid"] += 1
            if invoice["valid"] and invoice["currency"] and invoice["total"] is not None:
                totals = batch["totals"]
                totals[invoice["currency"]] = round(
                    totals.get(invoice["currency"], 0.0) + invoice["total"], 2
                )
        if written is not None:
            atomic_write(written, _batch_markdown(batch).encode())
            batch["summary"] = str(written)
        return batch

    @tool(idempotent=True, read_only=True)
    def docs_financials(self, path: str) -> Statement:
        """Key figures of a financial statement (CSV, XLSX or text PDF): revenue, cost of
        revenue, gross profit, operating income, net income, cash, and the margins.

        Args:
            path: The statement file.
        """
        return extract_statement(self._read("docs_financials", path))

    @tool(idempotent=True, read_only=False)
    def docs_slide_outline(
        self,
        statements: Annotated[list[Statement], msgspec.Meta(min_length=1)],
        folder: str,
        title: str = "Competitor analysis",
    ) -> Outline:
        """Compare financial statements (from docs_financials): key ratios, a slide outline
        as JSON and Markdown, chart suggestions, and the charts drawn as PNG, all written to
        a folder.

        Args:
            statements: The statements to compare.
            folder: Where to write outline.json, outline.md and the charts.
            title: The outline's title.
        """
        out = self.roots.inside("docs_slide_outline", folder)
        out.mkdir(parents=True, exist_ok=True)
        outline = slide_outline(statements, title)
        charts = render_charts(outline, out)
        json_path, markdown_path = out / "outline.json", out / "outline.md"
        atomic_write(json_path, json.dumps(outline, indent=2, ensure_ascii=False).encode())
        atomic_write(markdown_path, outline_markdown(outline, charts).encode())
        return {
            "json_path": str(json_path),
            "markdown_path": str(markdown_path),
            "charts": charts,
            "ratios": outline["ratios"],
            "slides": outline["slides"],
            "chart_suggestions": outline["chart_suggestions"],
        }


def _step_label() -> str:
    try:
        step = current_step()
    except LookupError:
        return ""
    return f"{step.run_id}/{step.step_id}"
