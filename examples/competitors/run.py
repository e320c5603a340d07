"""Flagship 1, competitor analysis: the statements folder listed, then each statement (CSV, XLSX,
PDF) read by a step over the list (one journaled call per file) -> key ratios
-> a slide outline as JSON and Markdown, chart suggestions, the charts as PNG; the latency of
each layer printed beside the 650 ms the hosted platform claims for this task.

    python -m examples.competitors.run [--work DIR] [--json] [--planner llama]
"""

from __future__ import annotations

import json
from pathlib import Path

from examples.fixtures import write_statements
from examples.runner import Flagship, main_args

REQUEST = next(iter(json.loads((Path(__file__).parent / "plan.json").read_text())))


def flagship(work: Path) -> Flagship:
    work.mkdir(parents=True, exist_ok=True)
    write_statements(work / "statements")
    packs = f'[packs.files]\nroots = ["{work}"]\n[packs.docs]\n'
    return Flagship("competitors", REQUEST, packs, work.resolve())


def main() -> int:
    args = main_args(__doc__.splitlines()[0], "ember-examples/competitors")
    run = flagship(Path(args.work))
    run.planner = args.planner
    result = run.run(resume=args.resume)
    outline = result.steps[-1].result or {}
    extra = {
        "outline": outline.get("markdown_path"),
        "json": outline.get("json_path"),
        "charts": outline.get("charts"),
    }
    return run.report(result, extra, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
