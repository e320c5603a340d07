"""Financial statements out of documents, and a slide outline comparing several of them.

`extract_statement` finds revenue, cost of revenue, gross profit, operating income, net income
and cash in a document's tables (CSV, XLSX) or text lines (PDF), by their usual labels, and
computes the margins. `slide_outline` turns statements into key ratios, an outline (structured
JSON and Markdown) and chart suggestions; `render_charts` draws the suggested charts (PNG).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypedDict

from ember.tools.packs.documents import Document

__all__ = ["Statement", "extract_statement", "outline_markdown", "render_charts", "slide_outline"]

LABELS = {
    "revenue": ("total revenue", "revenue", "net sales", "sales", "turnover", "net revenue"),
    "cost_of_revenue": ("cost of revenue", "cost of sales", "cost of goods sold", "cogs"),
    "gross_profit": ("gross profit", "gross margin"),
    "operating_income": ("operating income", "operating profit", "ebit", "income from operations"),
    "net_income": ("net income", "net profit", "profit for the year", "net earnings"),
    "cash": ("cash and cash equivalents", "cash and equivalents", "cash"),
}
_META = {
    "company": r"^[ \t]*(?:company|entity|issuer)[ \t]*[:\t,][ \t]*(\S.*?)[ \t,]*$",
    "period": r"^[ \t]*(?:period|fiscal year|year)[ \t]*[:\t,][ \t]*(\S.*?)[ \t,]*$",
    "currency": r"^[ \t]*currency[ \t]*[:\t,][ \t]*([A-Za-z]{3})\b",
}
_NUMBER = re.compile(r"^\(?-?[\d,]+(?:\.\d+)?\)?$")


class Statement(TypedDict):
    source: str
    company: str | None
    period: str | None
    currency: str | None
    revenue: float | None
    cost_of_revenue: float | None
    gross_profit: float | None
    operating_income: float | None
    net_income: float | None
    cash: float | None
    gross_margin: float | None
    operating_margin: float | None
    net_margin: float | None
    evidence: dict[str, str]
    missing: list[str]


def extract_statement(document: Document) -> Statement:
    """The key figures of the statement in `document` (see the module docstring)."""
    pairs = _pairs(document)
    found: dict[str, Any] = {}
    evidence: dict[str, str] = {}
    for field, labels in LABELS.items():
        for label, value, line in pairs:
            if label in labels and field not in found:
                found[field], evidence[field] = value, line
    for field, pattern in _META.items():
        match = re.search(pattern, document["text"], re.I | re.M)
        if match:
            found[field], evidence[field] = match.group(1).strip(), match.group(0).strip()
    revenue = found.get("revenue")
    if "gross_profit" not in found and revenue is not None and "cost_of_revenue" in found:
        found["gross_profit"] = round(revenue - abs(found["cost_of_revenue"]), 2)
        evidence["gross_profit"] = "revenue - cost of revenue"

    def margin(field: str) -> float | None:
        value = found.get(field)
        return round(value / revenue, 4) if value is not None and revenue else None

    figures = ("revenue", "cost_of_revenue", "gross_profit", "operating_income", "net_income")
    statement: Statement = {
        "source": document["path"],
        "company": found.get("company") or Path(document["path"]).stem,
        "period": found.get("period"),
        "currency": (found.get("currency") or "").upper() or None,
        **{f: found.get(f) for f in (*figures, "cash")},  # type: ignore[typeddict-item]
        "gross_margin": margin("gross_profit"),
        "operating_margin": margin("operating_income"),
        "net_margin": margin("net_income"),
        "evidence": evidence,
        "missing": [f for f in (*figures, "cash") if f not in found and f != "cost_of_revenue"],
    }
    return statement


def _pairs(document: Document) -> list[tuple[str, float, str]]:
    """(normalised label, value, source line) of every row or line that ends in a number."""
    rows = [row for table in document["tables"] for row in table["rows"]]
    rows += [re.split(r"\t|:|\s{2,}|(?<=[A-Za-z)])\s+(?=[(\-]?\d)", line) for line in
             document["text"].splitlines()]  # fmt: skip
    pairs = []
    for row in rows:
        cells = [cell.strip() for cell in row if cell and cell.strip()]
        if len(cells) < 2 or not _NUMBER.match(cells[-1].replace(" ", "")):
            continue
        label = re.sub(r"[^a-z ]", "", re.sub(r"\(.*?\)", "", cells[0]).lower()).strip()
        pairs.append((label, _number(cells[-1]), " ".join(cells)))
    return pairs


def _number(text: str) -> float:
    negative = text.startswith("(") or text.startswith("-")
    value = float(re.sub(r"[^\d.]", "", text))
    return -value if negative else value


def slide_outline(statements: list[Statement], title: str) -> dict[str, Any]:
    """Key ratios, slides (title + bullets) and chart suggestions for `statements`."""
    ratios = [
        {
            "company": s["company"],
            "currency": s["currency"],
            "revenue": s["revenue"],
            "gross_margin": s["gross_margin"],
            "operating_margin": s["operating_margin"],
            "net_margin": s["net_margin"],
            "cash_to_revenue": round(s["cash"] / s["revenue"], 4)
            if s["cash"] is not None and s["revenue"]
            else None,
        }
        for s in statements
    ]
    return {
        "title": title,
        "ratios": ratios,
        "slides": _slides(ratios),
        "chart_suggestions": [
            {"chart": "bar", "title": "Revenue by company", "metrics": ["revenue"],
             "why": "scale: who is biggest"},
            {"chart": "grouped_bar", "title": "Margins by company",
             "metrics": ["gross_margin", "operating_margin", "net_margin"],
             "why": "profitability at each level, comparable across sizes and currencies"},
            {"chart": "bar", "title": "Cash to revenue", "metrics": ["cash_to_revenue"],
             "why": "resilience: cash as a share of a year's sales"},
        ],
    }  # fmt: skip


def _slides(ratios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 100:.1f} %"

    def best(metric: str) -> str:
        known = [r for r in ratios if r[metric] is not None]
        return max(known, key=lambda r: r[metric])["company"] if known else "n/a"

    currencies = sorted({r["currency"] or "?" for r in ratios})
    return [
        {"title": "Competitors compared", "bullets": [
            f"{r['company']}: revenue {r['revenue']:,.0f} {r['currency'] or ''}".rstrip()
            for r in ratios if r["revenue"] is not None]
            + ([f"Figures in {', '.join(currencies)}: compare ratios, not amounts"]
               if len(currencies) > 1 else [])},
        {"title": "Profitability", "bullets": [
            f"{r['company']}: gross {pct(r['gross_margin'])}, operating "
            f"{pct(r['operating_margin'])}, net {pct(r['net_margin'])}" for r in ratios]},
        {"title": "Cash position", "bullets": [
            f"{r['company']}: cash is {pct(r['cash_to_revenue'])} of revenue" for r in ratios]},
        {"title": "Takeaways", "bullets": [
            f"Highest gross margin: {best('gross_margin')}",
            f"Highest operating margin: {best('operating_margin')}",
            f"Strongest cash position: {best('cash_to_revenue')}"]},
    ]  # fmt: skip


def outline_markdown(outline: dict[str, Any], charts: list[str]) -> str:
    lines = [f"# {outline['title']}", ""]
    for number, slide in enumerate(outline["slides"], start=1):
        lines += [f"## {number}. {slide['title']}", ""]
        lines += [f"- {bullet}" for bullet in slide["bullets"]] + [""]
    lines += ["## Suggested charts", ""]
    for suggestion, chart in zip(outline["chart_suggestions"], charts, strict=False):
        lines += [f"- {suggestion['title']} ({suggestion['chart']}): {suggestion['why']}"]
        lines += [f"  ![{suggestion['title']}]({Path(chart).name})"]
    return "\n".join(lines) + "\n"


def render_charts(outline: dict[str, Any], folder: Path) -> list[str]:
    """Draw each suggested chart as a PNG in `folder`; their paths, in order."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    ratios = outline["ratios"]
    names = [r["company"] for r in ratios]
    paths = []
    for number, suggestion in enumerate(outline["chart_suggestions"], start=1):
        figure, axes = pyplot.subplots(figsize=(6, 3.6), dpi=100)
        metrics = suggestion["metrics"]
        width = 0.8 / len(metrics)
        for index, metric in enumerate(metrics):
            values = [r[metric] or 0 for r in ratios]
            offsets = [i + (index - (len(metrics) - 1) / 2) * width for i in range(len(names))]
            axes.bar(offsets, values, width, label=metric.replace("_", " "))
        axes.set_xticks(range(len(names)), names)
        axes.set_title(suggestion["title"])
        if len(metrics) > 1:
            axes.legend()
        figure.tight_layout()
        path = folder / f"chart-{number}.png"
        figure.savefig(path)
        pyplot.close(figure)
        paths.append(str(path))
    return paths
