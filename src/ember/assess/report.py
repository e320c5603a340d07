"""The assessment report: JSON data, a terminal report, a heatmap (PNG/SVG), self-contained HTML."""

from __future__ import annotations

import html
import io
import textwrap
from pathlib import Path
from typing import Any

import msgspec

from ember.assess.compute import FIT_RULE, fit, risk_band, sensitivity, tco
from ember.assess.model import DIMENSIONS, Scenario
from ember.extras import require

__all__ = ["build_report", "heatmap", "render_html", "render_terminal"]

COLOURS = {"none": "#d9d9d9", "green": "#2ca25f", "amber": "#f0a202", "red": "#d7301f"}


def build_report(scenario: Scenario) -> dict[str, Any]:
    """Everything computed, as JSON data (what `ember assess --json` prints)."""
    report: dict[str, Any] = {
        "scenario": scenario.name,
        "fit_rule": FIT_RULE,
        "weights": msgspec.to_builtins(scenario.weights),
        "horizon_years": scenario.horizon_years,
        "days_per_month": scenario.days_per_month,
        "candidates": [],
        "risks": scenario.risks,
    }
    for candidate in scenario.candidates:
        cost = tco(scenario, candidate)
        cost_data = msgspec.to_builtins(cost)
        cost_data.pop("monthly")
        report["candidates"].append(
            {
                "name": candidate.name,
                "kind": candidate.kind,
                "fit": msgspec.to_builtins(fit(scenario, candidate)),
                "sensitivity": sensitivity(scenario, candidate),
                "tco": cost_data,
                "tco_monthly": cost.monthly,
                "risks": {
                    risk: {"score": candidate.risks[risk], "band": risk_band(candidate.risks[risk])}
                    for risk in scenario.risks
                    if risk in candidate.risks
                },
            }
        )
    return report


def render_terminal(report: dict[str, Any]) -> None:
    """Print the report with rich tables."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{report['scenario']}[/bold]\nFit rule: {report['fit_rule']}\n")
    table = Table(title="Scenario fit (0-30)")
    for column in ("candidate", "weighted x6", "unweighted", "verdict", "smallest flip"):
        table.add_column(column)
    for c in report["candidates"]:
        flip = c["sensitivity"]
        flip_text = (
            f"{flip['dimension']} {flip['from']:g} -> {flip['to']:g}: {flip['new_verdict']}"
            if flip
            else "none within 0-5"
        )
        table.add_row(
            c["name"],
            f"{c['fit']['weighted_total']:.2f}",
            f"{c['fit']['unweighted_total']:.1f}",
            c["fit"]["verdict"],
            flip_text,
        )
    console.print(table)
    cost = Table(title=f"Total cost of ownership, {report['horizon_years']} years")
    for column in ("candidate", "item", "formula", "total"):
        cost.add_column(column)
    for c in report["candidates"]:
        for line in c["tco"]["lines"]:
            cost.add_row(c["name"], line["item"], line["formula"], f"{line['total']:,.2f}")
        cost.add_row(
            c["name"],
            "[bold]total[/bold]",
            c["tco"]["note"] or "",
            f"[bold]{c['tco']['total']:,.2f}[/bold]",
        )
    console.print(cost)
    risks = Table(title="Risk heatmap (red 8-10, amber 4-7, green 0-3)")
    risks.add_column("risk")
    for c in report["candidates"]:
        risks.add_column(c["name"])
    for risk in report["risks"]:
        cells = []
        for c in report["candidates"]:
            value = c["risks"].get(risk)
            cells.append(f"[{_rich_colour(value['band'])}]{value['score']:g}[/]" if value else "-")
        risks.add_row(risk.replace("_", " "), *cells)
    console.print(risks)


def _rich_colour(band: str) -> str:
    return {"red": "bold red", "amber": "yellow", "green": "green"}[band]


def heatmap(report: dict[str, Any], path: Path | None = None, *, fmt: str = "png") -> bytes:
    """Candidates x risks, coloured by band, as PNG or SVG bytes (written to `path` if given)."""
    require("the heatmap", "matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.colors import ListedColormap

    risks = report["risks"]
    names = [c["name"] for c in report["candidates"]]
    scored = [[c["risks"].get(r) for c in report["candidates"]] for r in risks]
    order = list(COLOURS)  # none, green, amber, red
    grid = [[order.index(cell["band"] if cell else "none") for cell in row] for row in scored]
    figure, axes = plt.subplots(figsize=(2.2 + 1.6 * len(names), 0.9 + 0.45 * len(risks)))
    axes.imshow(grid, cmap=ListedColormap(list(COLOURS.values())), vmin=0, vmax=3, aspect="auto")
    axes.set_xticks(range(len(names)), labels=[textwrap.fill(n, 16) for n in names])
    axes.set_yticks(range(len(risks)), labels=[r.replace("_", " ") for r in risks])
    for y, row in enumerate(scored):
        for x, cell in enumerate(row):
            text, colour = (f"{cell['score']:g}", "white") if cell else ("n/a", "#555555")
            axes.text(x, y, text, ha="center", va="center", color=colour, fontweight="bold")
    axes.set_title("Risk heatmap: red 8-10, amber 4-7, green 0-3, grey: not scored")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format=fmt, dpi=120)
    plt.close(figure)
    data = buffer.getvalue()
    if path is not None:
        path.write_bytes(data)
    return data


def render_html(report: dict[str, Any]) -> str:
    """A self-contained HTML page: the tables, the formulas and the heatmap (inline SVG)."""
    e = html.escape
    svg = heatmap(report, fmt="svg").decode()
    svg = svg[svg.index("<svg") :]
    rows = []
    for c in report["candidates"]:
        flip = c["sensitivity"]
        flip_text = (
            f"{flip['dimension']}: {flip['from']:g} &rarr; {flip['to']:g} gives "
            f"&ldquo;{e(flip['new_verdict'])}&rdquo;"
            if flip
            else "none within 0-5"
        )
        rows.append(
            f"<tr><td>{e(c['name'])}</td><td>{c['fit']['weighted_total']:.2f}</td>"
            f"<td>{c['fit']['unweighted_total']:.1f}</td><td>{e(c['fit']['verdict'])}</td>"
            f"<td>{flip_text}</td></tr>"
        )
    costs = []
    for c in report["candidates"]:
        for line in c["tco"]["lines"]:
            costs.append(
                f"<tr><td>{e(c['name'])}</td><td>{e(line['item'])}</td>"
                f"<td>{e(line['formula'])}</td><td class=n>{line['total']:,.2f}</td></tr>"
            )
        flag = f" <span class=flag>{e(c['tco']['note'])}</span>" if c["tco"]["note"] else ""
        costs.append(
            f"<tr class=total><td>{e(c['name'])}</td><td>total</td><td>{flag}</td>"
            f"<td class=n>{c['tco']['total']:,.2f}</td></tr>"
        )
    dims = "".join(
        f"<li><b>{e(label)}</b> ({report['weights'][key]:.0%}): 5 = {e(five)}; 0 = {e(zero)}</li>"
        for key, (label, five, zero) in DIMENSIONS.items()
    )
    return f"""<!doctype html>
<html lang=en><head><meta charset=utf-8><title>{e(report["scenario"])}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:.3em .6em}}
th{{background:#f3f3f3}}.n{{text-align:right;font-variant-numeric:tabular-nums}}
.total td{{font-weight:bold}}.flag{{color:#b00}}figure{{margin:1em 0}}
</style></head><body>
<h1>{e(report["scenario"])}</h1>
<h2>Scenario fit</h2><p>Rule: {e(report["fit_rule"])}. Verdicts: &ge; 22 hosted platform
first; 16-21 pilot first; &le; 15 self-host.</p><ul>{dims}</ul>
<table><tr><th>candidate</th><th>weighted &times;6</th><th>unweighted</th><th>verdict</th>
<th>smallest single change that flips it</th></tr>{"".join(rows)}</table>
<h2>Total cost of ownership, {report["horizon_years"]} years</h2>
<table><tr><th>candidate</th><th>item</th><th>formula</th><th>total</th></tr>{"".join(costs)}
</table>
<h2>Risks</h2><figure id=heatmap>{svg}</figure>
</body></html>
"""
