"""The docs pack on real documents made with fpdf2, openpyxl and python-docx: text and tables,
invoices with evidence, financial statements, the slide outline, the ledger's exactly-once."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from examples.fixtures import STATEMENTS, write_invoices, write_statements

from ember.config import DocsPack, FilesPack, Packs
from ember.errors import ToolCallError
from ember.tools.packs.docs import DocsTools
from ember.tools.packs.invoices import Ledger, extract_invoice

from .packs_support import failure, packs_registry


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_statements(root / "statements")
    write_invoices(root / "invoices", 6, bad_every=3)
    return root


@pytest.fixture
def docs(root: Path) -> DocsTools:
    return DocsTools(DocsPack(), [str(root)])


def test_text_and_tables_of_pdf_xlsx_csv_and_docx(docs: DocsTools, root: Path) -> None:
    import docx

    pdf = docs.docs_read("statements/cobalt.pdf")
    assert pdf["kind"] == "pdf"
    assert pdf["pages"] == 1
    assert "Company: Cobalt Automation" in pdf["text"]
    xlsx = docs.docs_read("statements/borealis.xlsx")
    assert ["Gross profit", "460000"] in xlsx["tables"][0]["rows"]
    table = docs.docs_read("statements/acme.csv")["tables"][0]
    assert table["rows"][0] == ["Company", "Acme Robotics"]
    document = docx.Document()
    document.add_paragraph("Board minutes")
    grid = document.add_table(rows=1, cols=2)
    grid.rows[0].cells[0].text, grid.rows[0].cells[1].text = "Decision", "Approved"
    document.save(str(root / "minutes.docx"))
    read = docs.docs_read("minutes.docx")
    assert read["text"].startswith("Board minutes")
    assert read["tables"] == [{"name": "table 1", "rows": [["Decision", "Approved"]]}]


def test_invoice_fields_with_confidence_evidence_and_checked_totals(docs: DocsTools) -> None:
    good = docs.docs_invoice("invoices/invoice-001.pdf")
    assert good["number"] == "INV-2026-0001"
    assert good["vendor"] == "Atlas Tooling Ltd"
    assert (good["issue_date"], good["due_date"]) == ("2026-01-06", "2026-02-05")
    assert good["currency"] == "EUR"
    assert good["valid"], good["problems"]
    assert good["confidence"]["total"] == 0.95
    assert round(sum(i["amount"] for i in good["line_items"]), 2) == good["subtotal"]
    text = docs.docs_read("invoices/invoice-001.pdf")["text"]
    span = good["evidence"]["number"]
    assert text[span["start"] : span["end"]] == "INV-2026-0001"
    bad = docs.docs_invoice("invoices/invoice-003.pdf")  # its total is 10.00 too high
    assert not bad["valid"]
    assert bad["problems"] == [
        f"subtotal {bad['subtotal']:.2f} + tax {bad['tax']:.2f} is not the total {bad['total']:.2f}"
    ]


def test_an_unlabelled_vendor_and_currency_are_guessed_with_lower_confidence() -> None:
    invoice = extract_invoice("Harbor Freight Co\nInvoice no. 77\nDate: 03.02.2026\nTotal: €12.00")
    assert (invoice["vendor"], invoice["confidence"]["vendor"]) == ("Harbor Freight Co", 0.6)
    assert (invoice["currency"], invoice["confidence"]["currency"]) == ("EUR", 0.6)
    assert invoice["issue_date"] == "2026-02-03"
    assert invoice["confidence"]["due_date"] == 0.0
    assert invoice["valid"]


def test_financial_statements_from_csv_xlsx_and_pdf(docs: DocsTools) -> None:
    found = {
        name: docs.docs_financials(f"statements/{name}")
        for name in ("acme.csv", "borealis.xlsx", "cobalt.pdf")
    }
    acme, borealis, cobalt = found.values()
    assert acme["company"] == "Acme Robotics"
    assert acme["currency"] == "EUR"
    assert acme["gross_profit"] == 550_000  # revenue - cost of revenue
    assert acme["gross_margin"] == 0.44
    assert borealis["revenue"] == STATEMENTS["Borealis Motion"]["Total revenue"]
    assert cobalt["operating_income"] == 210_000
    assert cobalt["cash"] == 180_000
    assert cobalt["net_margin"] == round(150_000 / 1_600_000, 4)
    assert all(not statement["missing"] for statement in found.values())


def test_the_slide_outline_writes_json_markdown_and_png_charts(docs: DocsTools) -> None:
    statements = [
        docs.docs_financials(f"statements/{n}") for n in ("acme.csv", "borealis.xlsx", "cobalt.pdf")
    ]
    outline = docs.docs_slide_outline(statements, "out/deck", "Peers")
    saved = json.loads(Path(outline["json_path"]).read_text())
    assert [r["company"] for r in saved["ratios"]] == [s["company"] for s in statements]
    assert "Highest gross margin: Borealis Motion" in saved["slides"][-1]["bullets"]
    markdown = Path(outline["markdown_path"]).read_text()
    assert markdown.startswith("# Peers")
    assert "![Margins by company](chart-2.png)" in markdown
    assert len(outline["charts"]) == len(outline["chart_suggestions"]) == 3
    for chart in outline["charts"]:
        assert Path(chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_batch_books_each_invoice_once_even_after_a_torn_ledger_line(
    docs: DocsTools, root: Path
) -> None:
    first = docs.docs_invoice_batch("invoices", "out/ledger.csv")
    assert (first["booked"], first["valid"], first["invalid"]) == (6, 4, 2)
    ledger = root / "out" / "ledger.csv"
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text("".join(lines[:-2]) + lines[-2][:30])  # a crash mid-row: torn, no newline
    again = docs.docs_invoice_batch("invoices", "out/ledger.csv")
    assert (again["booked"], again["already_booked"]) == (2, 4)
    with ledger.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["file"] for row in rows) == [f"invoice-00{i}.pdf" for i in range(1, 7)]
    assert len({row["sha256"] for row in rows}) == 6
    assert Ledger(ledger).keys == {row["sha256"] for row in rows}


def test_the_batch_writes_its_summary_as_markdown_inside_the_roots(
    docs: DocsTools, root: Path
) -> None:
    batch = docs.docs_invoice_batch("invoices", "out/ledger.csv", summary="out/summary.md")
    written = root / "out" / "summary.md"
    assert batch["summary"] == str(written.resolve())
    text = written.read_text()
    assert text.startswith("# Invoice batch\n")
    assert "- invoices: 6\n" in text
    assert "- booked by this batch: 6 (already in the ledger: 0)\n" in text
    assert "- valid: 4; totals do not add up: 2\n" in text
    totals = ", ".join(f"{code} {amount:,.2f}" for code, amount in sorted(batch["totals"].items()))
    assert f"- totals of the valid invoices: {totals}\n" in text
    assert docs.docs_invoice_batch("invoices", "out/ledger.csv")["summary"] is None
    with pytest.raises(ToolCallError, match="outside the allowed roots") as refused:
        docs.docs_invoice_batch("invoices", "out/ledger2.csv", summary="/etc/summary.md")
    assert "/etc/summary.md" in str(refused.value)
    assert not (root / "out" / "ledger2.csv").exists()  # refused before anything was booked


def test_bad_documents_are_clear_errors_recorded_on_the_step(root: Path, tmp_path: Path) -> None:
    import pypdf

    registry = packs_registry(Packs(files=FilesPack(roots=[str(root)]), docs=DocsPack()), tmp_path)
    original = root / "invoices" / "invoice-001.pdf"
    (root / "corrupt.pdf").write_bytes(original.read_bytes()[:400])
    writer = pypdf.PdfWriter(clone_from=original)
    writer.encrypt("secret", algorithm="AES-256")
    writer.write(root / "locked.pdf")
    (root / "image.pdf").write_bytes(_blank_pdf())
    cases = {
        "missing.pdf": "'missing.pdf' is no file",
        "corrupt.pdf": "is not a readable PDF",
        "locked.pdf": "is an encrypted PDF: save a copy without a password",
        "image.pdf": "has no text layer (a scanned image?): run OCR",
        "statements": "is a folder",
    }
    for index, (name, expected) in enumerate(cases.items()):
        error = failure(registry, "docs_invoice", {"path": name}, tmp_path / str(index))
        assert expected in error, error
        assert "step 1 (docs_invoice) failed" in error
    error = failure(registry, "docs_read", {"path": "/etc/hostname"}, tmp_path / "x")
    assert f"use a path inside {root}" in error


def _blank_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    return bytes(pdf.output())
