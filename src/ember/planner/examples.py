"""A deployment's own worked examples for the planner's prompt (`[planner] examples` in
ember.toml, `ember eval planner --examples`).

The embedded planner learns the plan syntax from worked examples. Its built-in ones use the
demo tools; a catalogue without them is shown those before its tools, as examples "from a
catalogue with other tools". Examples over a catalogue's own tools, shown after them, make its
first tool right more often (docs/benchmarks.md, "A catalogue's own worked examples").

The file holds one example a line (JSON Lines): the day it is planned on, the request, and the
plan's steps in ember's JSON plan format (`[]`: no tool fits):

    {"today": "2026-02-09", "request": "What is p95 latency on checkout-web?",
     "steps": [{"id": 1, "tool": "query_metric", "args": {"service": "checkout-web"}}]}
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated, Any

import msgspec

from ember.errors import PlanError, UserError
from ember.plan import Plan

__all__ = ["Example", "load_examples"]

# today (YYYY-MM-DD), the request, the plan's steps (JSON plan format)
Example = tuple[str, str, list[dict[str, Any]]]

_FORMAT = (
    'one JSON object a line: {"today": "YYYY-MM-DD", "request": "...", "steps": '
    '[{"id": 1, "tool": "...", "args": {...}}]}'
)


class _Line(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    today: date
    request: Annotated[str, msgspec.Meta(min_length=1)]
    steps: list[dict[str, Any]]


def load_examples(path: Path) -> tuple[Example, ...]:
    """The worked examples in `path`, each checked as a plan; a UserError names the line of the
    first that is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read the planner's worked examples at {path}: {exc}") from None
    examples: list[Example] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = msgspec.json.decode(line, type=_Line)
            Plan.from_json({"steps": item.steps})
        except (msgspec.ValidationError, msgspec.DecodeError, PlanError) as exc:
            raise UserError(f"{path}:{number}: {exc}; a worked example is {_FORMAT}") from None
        examples.append((item.today.isoformat(), item.request, item.steps))
    if not examples:
        raise UserError(f"{path} holds no worked examples: write {_FORMAT}")
    return tuple(examples)
