"""Plans: steps, references between them, and the pure functions that check and resolve them.

A plan is a list of steps `{"id": 2, "tool": "book_hotel", "args": {...}, "after": [1]}`. An
argument that is exactly `"$N"` or `"$N.path.to.field"` stands for step N's result (or a field
in it; list indexes are numbers: `"$1.hotels.0.hotel_id"`). Inside a longer string,
`"{$N.path}"` is replaced by that value as text (JSON for lists and objects). A step depends on
the steps its arguments reference and on those in `after`. Nothing here does I/O.

A step over a list (`"each": "$2.rows"`) runs once per item of that list: inside its arguments
`"$item"` / `"$item.field"` (and `"{$item.field}"` in a text) stand for the current item. Each
item is a call of its own (journaled, with its own idempotency key); the step's result is the
list of the items' results, in order.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec

from ember.errors import PlanError

__all__ = [
    "ITEM",
    "ITEM_TOOL",
    "Plan",
    "Reference",
    "Step",
    "canonical_args",
    "dependencies",
    "each_items",
    "find_cycle",
    "lookup",
    "references",
    "renumber",
    "resolve",
    "step_ref",
]

_SEGMENTS = r"((?:\.[^.\s{}\[\]$]+)*)"  # .field or .0 (a list index), any number of them
_WHOLE = re.compile(r"\$([0-9]+|item)" + _SEGMENTS)
_EMBEDDED = re.compile(r"\{\$([0-9]+|item)" + _SEGMENTS + r"\}")
_LOOKS_LIKE_REF = re.compile(r"\$(?:[0-9]|item\b)")
ITEM = 0  # the step id `$item` references stand for: the current item of a step over a list
# The item as a planner sees it while it writes a step over a list: an earlier "step" whose
# result is the item (`Step(ITEM, ITEM_TOOL)`); never a step of a plan.
ITEM_TOOL = "__item__"


class Step(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One tool call of a plan."""

    id: int
    tool: str
    args: dict[str, Any] = {}
    after: list[int] = []
    each: str | None = None  # `"$N.path"`: run once per item of that list (`$item` in args)

    def __post_init__(self) -> None:
        if self.id < 1 and (self.id, self.tool) != (ITEM, ITEM_TOOL):
            raise PlanError(f"step id must be a positive integer, got {self.id}")
        if self.each is not None:
            source = _parse_whole(self.each) if self.each.startswith("$") else None
            if source is None or source.step == ITEM:
                raise PlanError(
                    f"step {self.id}: 'each' must be a reference to an earlier result's list "
                    f'("$2.rows"), got {self.each!r}'
                )


class Plan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A whole plan. `{"steps": []}` means: no tool call."""

    steps: list[Step] = []

    @classmethod
    def from_json(cls, data: object) -> Plan:
        """Parse plan JSON data (or text), naming the offending field on failure."""
        try:
            if isinstance(data, str | bytes):
                return msgspec.json.decode(data, type=cls)
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise PlanError(f"malformed plan: {exc}") from None
        except msgspec.DecodeError as exc:
            raise PlanError(f"plan is not valid JSON: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        """The plan as plain JSON data."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


class Reference(msgspec.Struct, frozen=True):
    """`$step.path`: a step id and the path (field names and list indexes) inside its result."""

    step: int
    path: tuple[str, ...]

    def __str__(self) -> str:
        return "$" + ".".join((step_ref(self.step), *self.path))


@functools.lru_cache(maxsize=8192)  # plans repeat their strings; parsing is the hot part
def _parse_whole(text: str) -> Reference | None:
    """The reference a whole string stands for (`"$1.a"` or `"{$1.a}"`), or None."""
    if not text.startswith(("$", "{$")):
        return None
    match = _WHOLE.fullmatch(text) or _EMBEDDED.fullmatch(text)
    if match is None:
        if text.startswith("$") and _LOOKS_LIKE_REF.match(text):
            raise PlanError(
                f'malformed reference {text!r}: write "$N.field.0.field" (dots, no brackets)'
            )
        return None
    path = tuple(match.group(2).split(".")[1:]) if match.group(2) else ()
    return Reference(_step_id(match.group(1)), path)


def _step_id(text: str) -> int:
    return ITEM if text == "item" else int(text)


def step_ref(step_id: int) -> str:
    """How a reference names step `step_id`: its number, or `item` (`ITEM`)."""
    return "item" if step_id == ITEM else str(step_id)


def references(value: Any) -> Iterator[Reference]:
    """Every reference inside an argument value (whole-value and embedded), in order."""
    if isinstance(value, str):
        whole = _parse_whole(value)
        if whole is not None:
            yield whole
        elif "{$" in value:
            for match in _EMBEDDED.finditer(value):
                path = tuple(match.group(2).split(".")[1:]) if match.group(2) else ()
                yield Reference(_step_id(match.group(1)), path)
    elif isinstance(value, dict):
        for item in value.values():
            yield from references(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from references(item)


def canonical_args(args: dict[str, Any]) -> bytes:
    """The arguments' canonical JSON (keys sorted): what identifies a call."""
    return msgspec.json.encode(args, order="sorted")


def dependencies(step: Step) -> set[int]:
    """The ids of the steps `step` must wait for: those it references (its list's too), and its
    `after`."""
    refs = {ref.step for ref in references(step.args)} - {ITEM}
    if step.each is not None:
        refs |= {ref.step for ref in references(step.each)}
    return refs | set(step.after)


def each_items(step: Step, results: Mapping[int, Any]) -> list[Any]:
    """The items a step over a list runs for; PlanError if its `each` is not a list."""
    assert step.each is not None
    value = resolve(step.each, results)
    if not isinstance(value, list):
        raise PlanError(
            f"step {step.id} runs for each item of {step.each}, which is not a list: "
            f"{_preview(value)}"
        )
    return value


def lookup(result: Any, ref: Reference) -> Any:
    """The value at `ref.path` inside `result`; PlanError naming the missing segment."""
    value = result
    for depth, segment in enumerate(ref.path):
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            where = ".".join(ref.path[: depth + 1])
            raise PlanError(
                f"reference {ref} has no value at {where!r}: step {ref.step} "
                f"returned {_preview(value)}"
            )
    return value


def resolve(value: Any, results: Mapping[int, Any]) -> Any:
    """`value` with every reference replaced by the referenced result (or its text)."""
    if isinstance(value, str):
        whole = _parse_whole(value)
        if whole is not None:
            return lookup(results[whole.step], whole)
        if "{$" not in value:
            return value
        return _EMBEDDED.sub(
            lambda m: _as_text(
                lookup(
                    results[_step_id(m.group(1))],
                    Reference(
                        _step_id(m.group(1)),
                        tuple(m.group(2).split(".")[1:]) if m.group(2) else (),
                    ),
                )
            ),
            value,
        )
    if isinstance(value, dict):
        return {key: resolve(item, results) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, results) for item in value]
    return value


def renumber(step: Step, offset: int, above: int = 0) -> Step:
    """The step with its id, its references and its `after` moved up by `offset` (a replan's
    steps follow the failed plan's instead of reusing their ids). References to steps
    `above` or lower (steps kept from before, which new ones may use) stay as they are."""

    def moved(step_id: int) -> int:
        return step_id + offset if step_id > above else step_id

    def shift(value: Any) -> Any:
        if isinstance(value, str):
            whole = _parse_whole(value)
            if whole is not None:
                return str(
                    whole if whole.step == ITEM else Reference(moved(whole.step), whole.path)
                )
            return _EMBEDDED.sub(lambda m: f"{{${_shifted(m.group(1), moved)}{m.group(2)}}}", value)
        if isinstance(value, dict):
            return {key: shift(item) for key, item in value.items()}
        if isinstance(value, list):
            return [shift(item) for item in value]
        return value

    each = shift(step.each) if step.each is not None else None
    return Step(moved(step.id), step.tool, shift(step.args), [moved(a) for a in step.after], each)


def _shifted(step_id: str, moved: Callable[[int], int]) -> str:
    return step_id if step_id == "item" else str(moved(int(step_id)))


def find_cycle(dependencies: Mapping[int, Iterable[int]]) -> list[int] | None:
    """A list of step ids forming a dependency cycle, or None if the graph is acyclic.
    `dependencies` maps each step id to the ids it waits for (ids outside it are ignored)."""
    graph = {step_id: sorted(deps) for step_id, deps in dependencies.items()}
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    path: list[int] = []

    def visit(node: int) -> list[int] | None:
        state[node] = 1
        path.append(node)
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep in graph and dep not in state and (cycle := visit(dep)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in graph:
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _preview(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."
