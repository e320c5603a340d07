"""ember's compact plan syntax: one Python-like call per line, then `done` (pure).

    1. search_hotels(city="Berlin", check_in="2026-01-20", nights=2)
    2. book_hotel(hotel_id=$1.hotels.0.hotel_id, check_in="2026-01-20", nights=2)
    3. send_email(to="sam@example.org", subject="Booked", body="Reference {$2.booking_id}")
    done

A coder model writes calls like these naturally and in fewer tokens than the JSON plan format.
References are written bare (`$1.hotels.0.hotel_id`) where the JSON format quotes them; an
ordering that no data carries is written after the call: `2. list_files(directory="/x") after 1`.
A step that runs once per item of an earlier list result says so before the call, and names the
item `$item`: `3. for each item in $2.rows: send_email(to=$item.email, body="Hi {$item.name}")`.
A plan with no tool call is the single line `done`.

This module renders plans in the syntax (for the prompt's examples) and lists, per argument,
the references a step may take: the fields of earlier steps' results whose type fits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ember.plan import Step

__all__ = [
    "DONE",
    "FOR_EACH",
    "VALUE_LENGTHS",
    "field_paths",
    "json_type",
    "literal_start",
    "render_plan",
    "render_step",
    "text_paths",
    "value_kind",
]

DONE = "done"
FOR_EACH = "for each item in "  # then `$N.path: tool(...)`
MAX_INDEX = 10  # list indexes offered in references: .0 .. .9
VALUE_LENGTHS = {"date": 10, "code3": 3, "hhmm": 5}  # the longest value of a kind (ASCII)


def render_step(step: Step) -> str:
    """`N. tool(arg=value, ...)`, with ` after M, K` when the step has an explicit ordering."""
    args = ", ".join(f"{name}={_render_value(value)}" for name, value in step.args.items())
    after = f" after {', '.join(map(str, step.after))}" if step.after else ""
    each = f"{FOR_EACH}{step.each}: " if step.each else ""
    return f"{step.id}. {each}{step.tool}({args}){after}"


def render_plan(steps: list[Step]) -> str:
    """Every step on its line, then `done`."""
    return "".join(f"{render_step(step)}\n" for step in steps) + DONE


def _render_value(value: Any) -> str:
    if isinstance(value, str) and value.startswith("$"):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(_render_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "True" if value else "False"
    return json.dumps(value, ensure_ascii=False)


def _nullable_member(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, {"type": "null"}]` (msgspec's schema of an `Annotated[int, ...] | None`) as
    X, with the outer keys (description, default) kept; any other schema as it is."""
    members = [m for m in schema.get("anyOf", []) if m.get("type") != "null"]
    if "anyOf" not in schema or len(members) != 1:
        return schema
    return {**members[0], **{k: v for k, v in schema.items() if k != "anyOf"}}


def json_type(schema: dict[str, Any]) -> str | None:
    """A schema's JSON type, with `null` left out of a list of types (`int | None`:
    `["integer", "null"]` is "integer", and so is `anyOf` of an integer and null): a plan omits
    a value it has none for, and a result's field that may be null holds the other type when
    it holds anything."""
    kind = _nullable_member(schema).get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return str(kinds[0]) if len(kinds) == 1 else None
    return None if kind is None else str(kind)


def value_kind(schema: dict[str, Any]) -> str:
    """How a parameter's literal value is decoded: `enum`, `date`, `code3`, `hhmm`, `integer`,
    `number`, `boolean`, `array` or `text`."""
    schema = _nullable_member(schema)
    if "enum" in schema:
        return "enum"
    kind = json_type(schema)
    if kind == "string":
        pattern = schema.get("pattern", "")
        if schema.get("format") == "date":
            return "date"
        if pattern == "^[A-Z]{3}$":
            return "code3"
        if pattern.startswith("^([01][0-9]|2[0-3])"):
            return "hhmm"
        return "text"
    if kind in ("integer", "number", "boolean", "array"):
        return str(kind)
    return "text"


def field_paths(
    returns: dict[str, Any] | None, parameter: dict[str, Any] | None = None
) -> list[str]:
    """The paths (`.hotels.0.hotel_id`, `.amount`) into a result of schema `returns`: all of
    them (for references embedded in text), or those whose value may be passed whole as an
    argument of schema `parameter`: the same JSON type (integer and number are
    interchangeable) and, if the parameter has a `format` (date, email), the same format; an
    object the parameter describes must have every field it requires, and may be the whole
    result (path "": `$1` for a statement from docs_financials)."""
    paths = list(_walk(returns or {}, ""))
    if parameter is None:
        return [path for path, _ in paths]
    if json_type(returns or {}) == "object":
        paths.insert(0, ("", returns or {}))
    wanted = _json_type(parameter)
    form = parameter.get("format")
    needed = set(parameter.get("required", [])) if json_type(parameter) == "object" else set()
    return [
        path
        for path, schema in paths
        if _json_type(schema) == wanted
        and (form is None or schema.get("format") == form)
        and needed <= schema.get("properties", {}).keys()
    ]


# "^A[0-9]", "^\+": a literal first character (not a class, "\d", nor one made optional)
_LITERAL_START = re.compile(r"\^(\\[^\w\s]|[A-Za-z0-9])(?![?*]|\{0)")
# one literal character of a pattern: an escaped sign ("\+", "\-") or a letter, digit, - or _
_LITERAL = re.compile(r"\\([^\w\s])|([A-Za-z0-9_-])")


def literal_start(schema: dict[str, Any], *, whole: bool = True) -> str | None:
    """The literal text a schema's `pattern` requires first: all of it (`^TCY-[0-9]{6}$`:
    "TCY-", `^\\+[1-9]`: "+"), or (not `whole`) its first character only; None where there is
    no pattern, or one that starts with a class or a group. A character made optional (`s?`)
    ends the text without it; one repeated (`A+`, `A{2}`) ends it with it."""
    pattern = schema.get("pattern", "")
    if not whole:
        match = _LITERAL_START.match(pattern)
        return None if match is None else match.group(1)[-1]
    if not pattern.startswith("^"):
        return None
    text, at = "", 1
    while (match := _LITERAL.match(pattern, at)) is not None:
        at = match.end()
        following = pattern[at : at + 2]
        if following[:1] in ("?", "*") or following == "{0":
            break
        text += match.group(1) or match.group(2)
        if following[:1] in ("+", "{"):
            break
    return text or None


def _same_code(one: str, other: str) -> bool:
    """Whether two patterns' literal starts may be the same kind of code: one begins the
    other ("TCY-" and "TCY-2026-"; not "TN" and "TCY-", a tenant's id and a tenancy's)."""
    return one.startswith(other) or other.startswith(one)


def coded_paths(
    returns: dict[str, Any] | None, parameter: dict[str, Any], *, whole: bool = True
) -> list[str]:
    """The paths of `field_paths(returns, parameter)` whose `pattern` starts with the literal
    text the parameter's does (a patient's `phone`, `^\\+...`, for a text's `to`, `^\\+...`):
    the same kind of code. Empty where the parameter's pattern starts with no literal.
    `whole`: the literal start is all the text the pattern requires first (rule
    `code-prefix`), else its first character."""
    start = literal_start(parameter, whole=whole)
    if start is None:
        return []
    coded = {
        path
        for path, schema in _walk(returns or {}, "")
        if (own := literal_start(schema, whole=whole)) is not None and _same_code(own, start)
    }
    return [path for path in field_paths(returns, parameter) if path in coded]


def clashing_paths(
    returns: dict[str, Any] | None, parameter: dict[str, Any], *, whole: bool = True
) -> set[str]:
    """The paths into a result whose `pattern` starts with other literal text than the
    parameter's: another kind of code (an appointment id `^A[0-9]{7}$` is no phone number
    `^\\+[1-9][0-9]{7,14}$`, a tenant's id `^TN[0-9]{6}$` no tenancy's `^TCY-[0-9]{6}$`)."""
    start = literal_start(parameter, whole=whole)
    if start is None:
        return set()
    return {
        path
        for path, schema in _walk(returns or {}, "")
        if (own := literal_start(schema, whole=whole)) is not None and not _same_code(own, start)
    }


def list_paths(returns: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    """The lists in a result a step may run over (`.hotels`, `.files`), with their items'
    schema: lists of objects or of plain values, not inside another list."""
    return [
        (path, schema.get("items", {}))
        for path, schema in _walk(returns or {}, "")
        if json_type(schema) == "array"
        and json_type(schema.get("items", {})) in ("object", "string", "number", "integer")
        and not any(segment.isdigit() for segment in path.split("."))
    ]


def text_paths(returns: dict[str, Any] | None) -> list[str]:
    """The paths to free text in a result (`.content`, `.summary`): strings with no format,
    pattern or enum, whose name is not an identifier's (`_id`)."""
    return [
        path
        for path, schema in _walk(returns or {}, "")
        if json_type(schema) == "string"
        and not {"format", "pattern", "enum"} & schema.keys()
        and not path.endswith(("_id", ".id"))
        and not path.rsplit(".", 1)[-1].isdigit()
    ]


def _walk(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = json_type(schema)
    if kind == "object":
        if path:
            yield path, schema
        for name, child in schema.get("properties", {}).items():
            yield from _walk(child, f"{path}.{name}")
    elif kind == "array":
        if path:
            yield path, schema
        items = schema.get("items", {})
        if json_type(items) in ("object", "string", "number", "integer"):
            for index in range(MAX_INDEX):
                yield from _walk(items, f"{path}.{index}")
    elif path:
        yield path, schema


def _json_type(schema: dict[str, Any]) -> str:
    kind = json_type(schema) or "any"
    if kind == "integer":
        return "number"
    if kind == "array":
        return "array of " + _json_type(schema.get("items", {}))
    return kind
