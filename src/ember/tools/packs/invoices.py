"""Invoice fields out of an invoice's text, each with a confidence and the evidence span, the
arithmetic checked; and the ledger a batch of invoices is booked into, exactly once each.

Fields: number, vendor, issue and due dates (ISO), currency (ISO 4217), subtotal, tax, total,
line items. A labelled field ("Invoice number: ...") has confidence 0.95; one found without its
label (the vendor as the first line, the currency from a symbol) 0.6; a missing one 0.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypedDict

__all__ = ["LEDGER_COLUMNS", "Evidence", "Invoice", "Ledger", "extract_invoice"]

LABELLED, GUESSED = 0.95, 0.6
_SYMBOLS = {"€": "EUR", "$": "USD", "£": "GBP", "¥": "JPY"}
_PATTERNS = {
    "number": r"^[ \t]*invoice[ \t]*(?:number|no\.?|#|id)[ \t]*[:#]?[ \t]*([A-Za-z0-9][\w\-/.]*)",
    "vendor": r"^[ \t]*(?:vendor|supplier|seller|from)[ \t]*:[ \t]*(\S.*?)[ \t]*$",
    "issue_date": r"^[ \t]*(?:invoice date|issue date|date of issue|date)[ \t]*:"
    r"[ \t]*(\S.*?)[ \t]*$",
    "due_date": r"^[ \t]*(?:due date|payment due|due)[ \t]*:[ \t]*(\S.*?)[ \t]*$",
    "currency": r"^[ \t]*currency[ \t]*:[ \t]*([A-Za-z]{3})\b",
    "subtotal": r"^[ \t]*(?:subtotal|net amount|net total)[^\n:]*:?[ \t]*"
    r"([^\s\d]?[ \t]*-?\d[\d.,]*)",
    "tax": r"^[ \t]*(?:vat|tax|sales tax|gst)\b[^\n:]*:[ \t]*([^\s\d]?[ \t]*-?\d[\d.,]*)",
    "total": r"^[ \t]*(?:total due|amount due|grand total|total)\b[^\n:\d]*:?[ \t]*"
    r"([^\s\d]?[ \t]*-?\d[\d.,]*)",
}
_LINE = re.compile(
    r"^[ \t]*(?P<description>\S.*?\S)[ \t]+(?P<quantity>\d+(?:\.\d+)?)[ \t]+"
    r"(?P<unit_price>-?\d[\d,]*\.\d{2})[ \t]+(?P<amount>-?\d[\d,]*\.\d{2})[ \t]*$",
    re.M,
)
_DATE_FORMATS = ("%Y-%m-%d", "%d.%m.%Y", "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%B %d, %Y")


class Evidence(TypedDict):
    text: str
    start: int
    end: int


class LineItem(TypedDict):
    description: str
    quantity: float
    unit_price: float
    amount: float


class Invoice(TypedDict):
    number: str | None
    vendor: str | None
    issue_date: str | None
    due_date: str | None
    currency: str | None
    subtotal: float | None
    tax: float | None
    total: float | None
    line_items: list[LineItem]
    confidence: dict[str, float]
    evidence: dict[str, Evidence]
    valid: bool
    problems: list[str]


def extract_invoice(text: str) -> Invoice:
    """The invoice in `text` (see the module docstring); `problems` lists what does not add up
    or is missing, and `valid` is true when there is nothing in it."""
    found: dict[str, Any] = {}
    confidence: dict[str, float] = {}
    evidence: dict[str, Evidence] = {}
    for field, pattern in _PATTERNS.items():
        match: re.Match[str] | None = (
            _last(pattern, text) if field == "total" else re.search(pattern, text, re.I | re.M)
        )
        value = _convert(field, match.group(1)) if match else None
        if match and value is not None:
            found[field], confidence[field] = value, LABELLED
            evidence[field] = _span(text, match)
    _guess_missing(text, found, confidence, evidence)
    items: list[LineItem] = [
        {
            "description": m["description"],
            "quantity": float(m["quantity"]),
            "unit_price": _amount(m["unit_price"]) or 0.0,
            "amount": _amount(m["amount"]) or 0.0,
        }
        for m in _LINE.finditer(text)
    ]
    fields = ("number", "vendor", "issue_date", "due_date", "currency", "subtotal", "tax", "total")
    invoice: Invoice = {
        **{f: found.get(f) for f in fields},  # type: ignore[typeddict-item]
        "line_items": items,
        "confidence": {f: confidence.get(f, 0.0) for f in fields},
        "evidence": evidence,
        "valid": False,
        "problems": [],
    }
    invoice["problems"] = _check(invoice)
    invoice["valid"] = not invoice["problems"]
    return invoice


def _last(pattern: str, text: str) -> re.Match[str] | None:
    """The last match: the total is the last "Total" line, after any column header."""
    matches = list(re.finditer(pattern, text, re.I | re.M))
    return matches[-1] if matches else None


def _guess_missing(
    text: str, found: dict[str, Any], confidence: dict[str, float], evidence: dict[str, Evidence]
) -> None:
    if "vendor" not in found:
        for match in re.finditer(r"^[ \t]*(\S.*?)[ \t]*$", text, re.M):
            if not re.fullmatch(r"(?i)(tax )?invoice", match.group(1)):
                found["vendor"], confidence["vendor"] = match.group(1), GUESSED
                evidence["vendor"] = _span(text, match)
                break
    if "currency" not in found:
        symbol = re.search(r"\b(EUR|USD|GBP|CHF|JPY|CNY|SEK|NOK|DKK)\b|([€$£¥])", text)
        if symbol:
            found["currency"] = symbol.group(1) or _SYMBOLS[symbol.group(2)]
            confidence["currency"] = GUESSED
            evidence["currency"] = _span(text, symbol, 0)


def _check(invoice: Invoice) -> list[str]:
    problems = [
        f"no {field.replace('_', ' ')} found"
        for field in ("number", "vendor", "issue_date", "currency", "total")
        if invoice[field] is None  # type: ignore[literal-required,unused-ignore]
    ]
    for item in invoice["line_items"]:
        if abs(item["quantity"] * item["unit_price"] - item["amount"]) > 0.011:
            problems.append(
                f"line {item['description']!r}: {item['quantity']:g} x {item['unit_price']:.2f}"
                f" is not {item['amount']:.2f}"
            )
    lines = round(sum(item["amount"] for item in invoice["line_items"]), 2)
    subtotal, tax, total = invoice["subtotal"], invoice["tax"], invoice["total"]
    if invoice["line_items"] and subtotal is not None and abs(lines - subtotal) > 0.011:
        problems.append(f"the line items add up to {lines:.2f}, not the subtotal {subtotal:.2f}")
    if subtotal is not None and total is not None and abs(subtotal + (tax or 0) - total) > 0.011:
        problems.append(
            f"subtotal {subtotal:.2f} + tax {tax or 0:.2f} is not the total {total:.2f}"
        )
    return problems


def _convert(field: str, raw: str) -> Any:
    if field in ("subtotal", "tax", "total"):
        return _amount(raw)
    if field in ("issue_date", "due_date"):
        return _date(raw)
    if field == "currency":
        return raw.upper()
    return raw.strip()


def _amount(raw: str) -> float | None:
    """`1,234.56`, `1.234,56`, `€ 99.00` -> a number (None if it is not one)."""
    digits = re.sub(r"[^\d.,-]", "", raw)
    if "," in digits and (
        "." not in digits or digits.rfind(",") > digits.rfind(".")
    ):  # a decimal comma
        digits = digits.replace(".", "").replace(",", ".")
    try:
        return round(float(digits.replace(",", "")), 2)
    except ValueError:
        return None


def _date(raw: str) -> str | None:
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(raw.strip(), fmt).date().isoformat()
        except ValueError:
            continue
    try:
        return date.fromisoformat(raw.strip()[:10]).isoformat()
    except ValueError:
        return None


def _span(text: str, match: re.Match[str], group: int = 1) -> Evidence:
    start, end = match.span(group)
    if group and match.group(group) is None:
        start, end = match.span(0)
    return {"text": text[start:end], "start": start, "end": end}


LEDGER_COLUMNS = (
    "file", "sha256", "number", "vendor", "issue_date", "due_date", "currency",
    "subtotal", "tax", "total", "valid", "problems", "step",
)  # fmt: skip


class Ledger:
    """A CSV ledger that books each invoice once: its key is the SHA-256 of the invoice file,
    so the same invoice is never booked twice, by a resumed run or by another run.

    A row is one `write` of a whole line, flushed to disk before the next; a line torn by a
    crash (no newline at the end) is cut off when the ledger is opened again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.keys: set[str] = set()
        if path.exists():
            self._repair()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._write_line(LEDGER_COLUMNS)

    def _repair(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]
            with self.path.open("r+b") as handle:
                handle.truncate(len(data))
                os.fsync(handle.fileno())
        rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
        self.keys = {row["sha256"] for row in rows if row.get("sha256")}

    def book(self, file: Path, invoice: Invoice, step: str) -> bool:
        """Append the invoice's row unless it is booked already; True if it was appended."""
        key = hashlib.sha256(file.read_bytes()).hexdigest()
        if key in self.keys:
            return False
        row = (
            [file.name, key]
            + [
                "" if invoice[c] is None else invoice[c]  # type: ignore[literal-required]
                for c in LEDGER_COLUMNS[2:10]
            ]
        )
        self._write_line([*row, invoice["valid"], "; ".join(invoice["problems"]), step])
        self.keys.add(key)
        return True

    def _write_line(self, values: Any) -> None:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(values)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(buffer.getvalue())
            handle.flush()
            os.fsync(handle.fileno())
