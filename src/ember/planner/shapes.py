"""Plan shapes: a plan remembered by the shape of its request, so that a request of the same
shape (other names, addresses, paths, codes, numbers, dates) is planned again without the model.

A request's shape is its text with the values it gives replaced by their kinds: quoted text,
e-mail addresses, paths, codes ("C-20417"), ISO dates, numbers and names (capitalised words,
but a sentence's first). The days its relative phrases mean (`grounding.named_dates`) and today
are values too; the phrases themselves stay in the shape. "Check the weather in Paris tomorrow
and email it to a@example.com" and "Check the weather in Lisbon tomorrow and email it to
b@example.org" have one shape. A plan's literal that is one of its request's values, or holds
one in a longer text, is remembered as that value's place; every other literal (a subject the
model wrote) is kept as written. Pure: the cache is the planner's to keep.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from datetime import date
from typing import Any, NamedTuple

from ember.plan import Step
from ember.planner import grounding
from ember.planner.quotes import QUOTED

__all__ = ["Shape", "ShapeCache", "shape_of"]

_KINDS = (
    ("quote", QUOTED),
    ("email", grounding.EMAIL),
    ("path", grounding.PATH),
    ("code", grounding.CODE),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("number", grounding.NUMBER),
    ("name", re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")),
)
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][a-z]+)\b")
_MARK = re.compile("\ue000([0-9]+)\ue001")  # a value's place inside a remembered text


class Shape(NamedTuple):
    key: str  # the request with its values replaced by their kinds
    values: list[str]  # the values in order, then the dates it names, then today


class _Place(NamedTuple):
    """A remembered literal that was the request's value `at`, of the type it had."""

    at: int
    type: str  # "str", "int" or "float"


def shape_of(request: str, today: date) -> Shape:
    """The shape of `request`, made on `today` (see the module docstring)."""
    starts = {match.start(1) for match in _SENTENCE_START.finditer(request)}
    found: list[tuple[int, int, str, str]] = []  # start, end, kind, value
    for kind, pattern in _KINDS:
        for match in pattern.finditer(request):
            if kind == "name" and match.start() in starts and " " not in match.group():
                continue  # a sentence's first word is part of the shape
            if any(s < match.end() and match.start() < e for s, e, _, _ in found):
                continue
            value = "".join(g for g in match.groups() if g) or match.group()
            found.append(
                (
                    match.start(),
                    match.end(),
                    kind,
                    value.replace(",", "") if kind == "number" else value,
                )
            )
    found.sort()
    key, at = [], 0
    for start, end, kind, _ in found:
        key += [request[at:start], f"<{kind}>"]
        at = end
    key.append(request[at:])
    values = [value for _, _, _, value in found]
    values += [*grounding.named_dates(request, today), today.isoformat()]
    return Shape("".join(key), values)


class ShapeCache:
    """Plans by request shape; the `size` most recently used are kept."""

    def __init__(self, size: int = 256) -> None:
        self._plans: OrderedDict[str, tuple[int, list[Step]]] = OrderedDict()
        self.size = size

    def remember(self, shape: Shape, steps: list[Step]) -> None:
        """Keep `steps`, planned for a request of `shape`, with its values as places."""
        if not steps:
            return  # an empty plan is no shape worth keeping: other words may need one
        places = [Step(s.id, s.tool, _template(s.args, shape.values), s.after) for s in steps]
        self._plans[shape.key] = (len(shape.values), places)
        self._plans.move_to_end(shape.key)
        while len(self._plans) > self.size:
            self._plans.popitem(last=False)

    def recall(self, shape: Shape) -> list[Step] | None:
        """The plan kept for requests of `shape`, with its values; None if there is none."""
        kept = self._plans.get(shape.key)
        if kept is None or kept[0] != len(shape.values):
            return None
        self._plans.move_to_end(shape.key)
        return [Step(s.id, s.tool, _fill(s.args, shape.values), s.after) for s in kept[1]]


def _template(value: Any, values: list[str]) -> Any:
    if isinstance(value, dict):
        return {key: _template(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_template(item, values) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        text = f"{value:g}" if isinstance(value, float) else str(value)
        return _Place(values.index(text), type(value).__name__) if text in values else value
    if not isinstance(value, str) or value.startswith("$"):
        return value
    if value in values:
        return _Place(values.index(value), "str")
    for index, given in sorted(enumerate(values), key=lambda pair: -len(pair[1])):
        if len(given) > 2 and not given.isdigit() and given in value:
            value = value.replace(given, f"\ue000{index}\ue001")
    return value


def _fill(value: Any, values: list[str]) -> Any:
    if isinstance(value, dict):
        return {key: _fill(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, values) for item in value]
    if isinstance(value, _Place):
        text = values[value.at]
        try:
            return {"int": int, "float": float}.get(value.type, str)(text)
        except ValueError:
            return text
    if isinstance(value, str):
        return _MARK.sub(lambda match: values[int(match.group(1))], value)
    return value
