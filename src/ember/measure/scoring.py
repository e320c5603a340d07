# Vendored from ../shared/planner-tasks/score_plans.py, byte for byte below this header block,
# so that `ember eval planner` scores exactly as the task set's own scorer does. Do not edit:
# copy the file again when the task set's scorer changes (tests/test_eval.py checks they match).
#!/usr/bin/env python3
"""Score a planner's plans against the planner task set.

    python score_plans.py TASKS.jsonl PREDICTIONS.jsonl [--catalog catalog.json] [--json]
    python score_plans.py --selftest [TASKS.jsonl ...] [--catalog catalog.json]

TASKS.jsonl holds one task a line: {"id", "category", "request", "today", "expected": [plan, ...],
"notes"?}. PREDICTIONS.jsonl holds one {"id", "plan"} a line. The catalogue defaults to the
catalog.json beside this script. Python 3.11 standard library only.

Every predicted plan is first validated against the catalogue (see README.md, "Validation");
an invalid plan is wrong. A valid plan is right when it matches ANY expected alternative:

* the same number of steps and the same multiset of tools;
* a one-to-one pairing of steps (ids may differ) under which every argument matches:
  strings compare after NFKC, whitespace collapsing and case folding; numbers compare
  numerically; "$N.path" references compare as references to the paired step with the same
  path ("{$N.path}" alone in a string is the same reference); an expected
  {"$contains": [...]} (free text) matches any string, or list of strings, that contains each
  listed literal and, for each listed reference "$N.path", embeds a reference to the paired
  step whose path is a prefix of, or extends, that path; an expected {"$one_of": [...]}
  matches what any of its options matches;
* the same ordering: the transitive closure of the dependency edges (references in arguments
  plus "after"; references that a free-text argument adds beyond the listed ones are ignored)
  is the same on both sides, so a redundant "after" is harmless, a missing or an extra
  ordering between steps is not.

--selftest checks the catalogue and the task files, then that every expected plan validates
and scores correct against itself, still does with its step ids renumbered and its steps
shuffled, and scores incorrect with one argument changed, one step dropped, or a wrong tool.
"""
from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import random
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CATEGORIES = ("single", "chain", "parallel", "files", "no-tool")
HERE = Path(__file__).resolve().parent
DEFAULT_CATALOG = HERE / "catalog.json"
DEFAULT_TASK_FILES = ("dev.jsonl", "heldout.jsonl")

# ---------------------------------------------------------------------------------------------
# References: "$N", "$N.path.to.field" (segments are names or list indexes), and "{$N.path}"
# embedded in text.

_SEGMENT = r"(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+))"
WHOLE_REF = re.compile(rf"\$([0-9]+)({_SEGMENT}*)")
EMBEDDED_REF = re.compile(rf"\{{\$([0-9]+)({_SEGMENT}*)\}}")
LOOKS_LIKE_REF = re.compile(r"\$[0-9]+[.\[]\S*")


@dataclass(frozen=True)
class Ref:
    step: int
    path: tuple[str | int, ...]

    def __str__(self) -> str:
        return "$" + ".".join([str(self.step), *map(str, self.path)])


def _to_ref(match: re.Match[str]) -> Ref:
    segments = match.group(2).split(".")[1:]
    return Ref(int(match.group(1)), tuple(int(s) if s.isdigit() else s for s in segments))


def whole_ref(value: Any) -> Ref | None:
    """The reference that `value` is, when it is exactly "$N" or "$N.path"."""
    if not isinstance(value, str):
        return None
    match = WHOLE_REF.fullmatch(value)
    return _to_ref(match) if match else None


def sole_ref(value: Any) -> Ref | None:
    """Like whole_ref, but also accepts a string that is one embedded "{$N.path}" alone."""
    ref = whole_ref(value)
    if ref is not None or not isinstance(value, str):
        return ref
    match = EMBEDDED_REF.fullmatch(value.strip())
    return _to_ref(match) if match else None


def embed(ref: Ref) -> str:
    """The text form of a reference inside a string: "{$N.path}"."""
    return "{" + str(ref) + "}"


def embedded_refs(text: str) -> list[Ref]:
    return [_to_ref(m) for m in EMBEDDED_REF.finditer(text)]


def refs_in(value: Any) -> Iterator[Ref]:
    """Every reference in an argument value, whole or embedded, at any depth."""
    if isinstance(value, str):
        ref = whole_ref(value)
        if ref is not None:
            yield ref
        else:
            yield from embedded_refs(value)
    elif isinstance(value, list):
        for item in value:
            yield from refs_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from refs_in(item)


def malformed_ref(text: str) -> str | None:
    """A fragment that looks like a reference but is not one ("$1.hotels[0]", "{$x}")."""
    if LOOKS_LIKE_REF.fullmatch(text):
        return text
    leftover = EMBEDDED_REF.sub("", text)
    if "{$" in leftover:
        start = leftover.index("{$")
        return leftover[start : start + 30]
    return None


# ---------------------------------------------------------------------------------------------
# The JSON Schema subset the catalogue uses (draft 2020-12 keywords; "format" asserted for
# "date" and "email").

_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
ANNOTATIONS = {"$schema", "$id", "title", "description", "examples", "default", "$comment"}
ASSERTIONS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "pattern", "format", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minItems", "maxItems", "minProperties",
}
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {"date": _is_date, "email": lambda t: bool(_EMAIL.fullmatch(t))}


def schema_types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema admits, or None for any."""
    kind = schema.get("type")
    if kind is None:
        return None
    return {kind} if isinstance(kind, str) else set(kind)


def _json_type(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__


def _types_compatible(produced: set[str] | None, wanted: set[str] | None) -> bool:
    if produced is None or wanted is None:
        return True
    widened = set(produced)
    if widened & {"integer", "number"}:
        widened |= {"integer", "number"}
    return bool(widened & wanted)


def _fmt_types(types: set[str] | None) -> str:
    return "any" if types is None else "/".join(sorted(types))


class _Checker:
    """Validates argument values; resolves references through the catalogue's result schemas."""

    def __init__(self, catalog: dict[str, dict[str, Any]], steps: dict[int, dict[str, Any]]):
        self.catalog = catalog
        self.steps = steps

    def resolve(self, ref: Ref) -> tuple[dict[str, Any] | None, str | None]:
        step = self.steps.get(ref.step)
        if step is None:
            return None, f"reference {ref} points to no step (no step has id {ref.step})"
        tool = step.get("tool")
        if tool not in self.catalog:
            return {}, None  # the unknown tool is reported on its own step
        schema: dict[str, Any] = self.catalog[tool].get("returns") or {}
        walked = [str(ref.step)]
        for segment in ref.path:
            types = schema_types(schema)
            where = "$" + ".".join(walked)
            if isinstance(segment, int):
                if types is not None and "array" not in types:
                    return None, f"reference {ref}: {where} is {_fmt_types(types)}, not a list"
                schema = schema.get("items", {})
            else:
                if types is not None and "object" not in types:
                    return None, f"reference {ref}: {where} is {_fmt_types(types)}, not an object"
                properties = schema.get("properties", {})
                if segment in properties:
                    schema = properties[segment]
                elif schema.get("additionalProperties", True) is False:
                    known = ", ".join(properties) or "none"
                    return None, (f"reference {ref}: {tool}'s result at {where} has no field "
                                  f"{segment!r} (fields: {known})")
                else:
                    extra = schema.get("additionalProperties", {})
                    schema = extra if isinstance(extra, dict) else {}
            walked.append(str(segment))
        return schema, None

    def validate(self, value: Any, schema: dict[str, Any], where: str) -> list[str]:
        if isinstance(value, str):
            ref = whole_ref(value)
            if ref is not None:
                return self._check_whole_ref(ref, schema, where)
            bad = malformed_ref(value)
            if bad is not None:
                return [f"{where}: malformed reference {bad!r} (write \"$N.field.0\" or \"{{$N.field}}\")"]
            embedded = embedded_refs(value)
            if embedded:
                return self._check_template(embedded, schema, where)
        types = schema_types(schema)
        if types is not None and not any(_TYPE_CHECKS[t](value) for t in types):
            return [f"{where}: expected {_fmt_types(types)}, got {_json_type(value)} {_short(value)}"]
        errors: list[str] = []
        if "enum" in schema and not any(_same_json(value, e) for e in schema["enum"]):
            errors.append(f"{where}: {_short(value)} is not one of {schema['enum']}")
        if "const" in schema and not _same_json(value, schema["const"]):
            errors.append(f"{where}: must be {schema['const']!r}")
        if isinstance(value, str):
            errors += _check_string(value, schema, where)
        elif _TYPE_CHECKS["number"](value):
            errors += _check_number(value, schema, where)
        elif isinstance(value, list):
            errors += self._check_array(value, schema, where)
        elif isinstance(value, dict):
            errors += self._check_object(value, schema, where)
        return errors

    def _check_whole_ref(self, ref: Ref, schema: dict[str, Any], where: str) -> list[str]:
        target, error = self.resolve(ref)
        if error is not None:
            return [f"{where}: {error}"]
        produced, wanted = schema_types(target or {}), schema_types(schema)
        if not _types_compatible(produced, wanted):
            hint = f' (embed it in text as "{embed(ref)}" to pass it as a string)' if "string" in (wanted or ()) else ""
            return [f"{where}: reference {ref} gives {_fmt_types(produced)}, "
                    f"expected {_fmt_types(wanted)}{hint}"]
        return []

    def _check_template(self, embedded: list[Ref], schema: dict[str, Any], where: str) -> list[str]:
        errors = [f"{where}: {err}" for ref in embedded for err in [self.resolve(ref)[1]] if err]
        types = schema_types(schema)
        if types is not None and "string" not in types:
            errors.append(f"{where}: text with embedded references is a string, expected {_fmt_types(types)}")
        return errors

    def _check_array(self, value: list[Any], schema: dict[str, Any], where: str) -> list[str]:
        errors = []
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: needs at least {schema['minItems']} item(s)")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{where}: allows at most {schema['maxItems']} item(s)")
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                errors += self.validate(item, items, f"{where}[{index}]")
        return errors

    def _check_object(self, value: dict[str, Any], schema: dict[str, Any], where: str) -> list[str]:
        properties = schema.get("properties", {})
        errors = [f"{where}: missing required argument {name!r}"
                  for name in schema.get("required", []) if name not in value]
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{where}: give at least {schema['minProperties']} of {sorted(properties)}")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                errors += self.validate(item, properties[name], f"{where}.{name}")
            elif extra is False:
                errors.append(f"{where}: unknown argument {name!r} (allowed: {', '.join(properties)})")
            elif isinstance(extra, dict):
                errors += self.validate(item, extra, f"{where}.{name}")
        return errors


def _check_string(value: str, schema: dict[str, Any], where: str) -> list[str]:
    errors = []
    if len(value) < schema.get("minLength", 0):
        errors.append(f"{where}: must not be shorter than {schema['minLength']} character(s)")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{where}: must not be longer than {schema['maxLength']} characters")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {_short(value)} does not match {schema['pattern']}")
    check = FORMATS.get(schema.get("format", ""))
    if check is not None and not check(value):
        errors.append(f"{where}: {_short(value)} is not a valid {schema['format']}")
    return errors


def _check_number(value: float, schema: dict[str, Any], where: str) -> list[str]:
    errors = []
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{where}: {value} is below the minimum {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{where}: {value} is above the maximum {schema['maximum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        errors.append(f"{where}: {value} must be greater than {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        errors.append(f"{where}: {value} must be less than {schema['exclusiveMaximum']}")
    return errors


def _same_json(a: Any, b: Any) -> bool:
    if _TYPE_CHECKS["number"](a) and _TYPE_CHECKS["number"](b):
        return float(a) == float(b)
    return type(a) is type(b) and a == b


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------------------
# Plan validation


def load_catalog(path: Path) -> dict[str, dict[str, Any]]:
    tools = json.loads(path.read_text(encoding="utf-8"))
    return {tool["tool_name"]: tool for tool in tools}


def validate_plan(plan: Any, catalog: dict[str, dict[str, Any]]) -> list[str]:
    """Every reason `plan` is not a well-formed, executable plan for `catalog` (empty: valid)."""
    if not isinstance(plan, dict):
        return [f"plan must be a JSON object {{\"steps\": [...]}}, got {_json_type(plan)}"]
    errors = [f"plan has unknown key {key!r} (only 'steps')" for key in plan if key != "steps"]
    steps = plan.get("steps")
    if not isinstance(steps, list):
        return errors + ["plan['steps'] must be a list"]
    by_id: dict[int, dict[str, Any]] = {}
    for position, step in enumerate(steps, 1):
        errors += _index_step(step, position, by_id)
    checker = _Checker(catalog, by_id)
    deps = {}
    for step_id, step in by_id.items():
        step_errors, deps[step_id] = _check_step(step_id, step, checker)
        errors += step_errors
    cycle = find_cycle(deps)
    if cycle:
        errors.append("dependency cycle: " + " -> ".join(map(str, cycle)))
    return errors


def _index_step(step: Any, position: int, by_id: dict[int, dict[str, Any]]) -> list[str]:
    where = f"step #{position} in the list"
    if not isinstance(step, dict):
        return [f"{where}: must be an object, got {_json_type(step)}"]
    errors = [f"{where}: unknown key {key!r} (allowed: id, tool, args, after)"
              for key in step if key not in ("id", "tool", "args", "after")]
    step_id = step.get("id")
    if not (isinstance(step_id, int) and not isinstance(step_id, bool) and step_id >= 1):
        return errors + [f"{where}: 'id' must be a positive integer, got {_short(step_id)}"]
    if step_id in by_id:
        return errors + [f"{where}: duplicate step id {step_id}"]
    by_id[step_id] = step
    return errors


def _check_step(step_id: int, step: dict[str, Any], checker: _Checker) -> tuple[list[str], set[int]]:
    tool = step.get("tool")
    where = f"step {step_id} ({tool})" if isinstance(tool, str) else f"step {step_id}"
    errors = []
    if not isinstance(tool, str) or tool not in checker.catalog:
        known = ", ".join(sorted(checker.catalog))
        errors.append(f"{where}: unknown tool {_short(tool)} (known: {known})")
    after = step.get("after", [])
    if not (isinstance(after, list) and all(isinstance(a, int) and not isinstance(a, bool) for a in after)):
        errors.append(f"{where}: 'after' must be a list of step ids")
        after = []
    deps = set()
    for other in after:
        if other == step_id:
            errors.append(f"{where}: 'after' names the step itself")
        elif other not in checker.steps:
            errors.append(f"{where}: 'after' names step {other}, which does not exist")
        else:
            deps.add(other)
    if "args" not in step or not isinstance(step["args"], dict):
        return errors + [f"{where}: 'args' must be an object"], deps
    args = step["args"]
    for ref in refs_in(args):
        if ref.step == step_id:
            errors.append(f"{where}: refers to its own result ({ref})")
        elif ref.step in checker.steps:
            deps.add(ref.step)
    if tool in checker.catalog:
        errors += checker.validate(args, checker.catalog[tool]["parameters"], f"{where} args")
    return errors, deps


def find_cycle(deps: dict[int, set[int]]) -> list[int]:
    """One dependency cycle as a list of ids (first id repeated at the end), or []."""
    state: dict[int, int] = {}
    stack: list[int] = []

    def visit(node: int) -> list[int]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(deps.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(deps):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


# ---------------------------------------------------------------------------------------------
# Matching a (valid) predicted plan against one expected plan


def norm_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).casefold()


def _marker(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key in ("$contains", "$one_of"):
            return str(key)
    return None


def expected_deps(step: dict[str, Any]) -> set[int]:
    """Every step an expected step may depend on (all references, all options, and 'after')."""
    return {ref.step for ref in refs_in(step.get("args", {}))} | set(step.get("after", []))


def match_value(exp: Any, pred: Any, fwd: dict[int, int], back: dict[int, int]) -> set[int] | None:
    """Expected step ids this value depends on when `pred` matches `exp`, else None.

    `fwd` maps expected step ids to predicted ones, `back` the other way round."""
    marker = _marker(exp)
    if marker == "$contains":
        return _match_contains(exp["$contains"], pred, fwd)
    if marker == "$one_of":
        for option in exp["$one_of"]:
            found = match_value(option, pred, fwd, back)
            if found is not None:
                return found
        return None
    if isinstance(exp, str):
        return _match_string(exp, pred, fwd, back)
    if isinstance(exp, bool) or exp is None:
        return set() if type(pred) is type(exp) and pred == exp else None
    if isinstance(exp, (int, float)):
        ok = _TYPE_CHECKS["number"](pred) and abs(float(pred) - float(exp)) <= 1e-9 * max(1.0, abs(float(exp)))
        return set() if ok else None
    if isinstance(exp, list):
        if not isinstance(pred, list) or len(pred) != len(exp):
            return None
        return _match_all(list(zip(exp, pred, strict=True)), fwd, back)
    if isinstance(exp, dict):
        if not isinstance(pred, dict) or set(pred) != set(exp):
            return None
        return _match_all([(exp[k], pred[k]) for k in exp], fwd, back)
    return None


def _match_all(pairs: list[tuple[Any, Any]], fwd: dict[int, int], back: dict[int, int]) -> set[int] | None:
    deps: set[int] = set()
    for exp, pred in pairs:
        found = match_value(exp, pred, fwd, back)
        if found is None:
            return None
        deps |= found
    return deps


def _match_string(exp: str, pred: Any, fwd: dict[int, int], back: dict[int, int]) -> set[int] | None:
    if not isinstance(pred, str):
        return None
    exp_ref, pred_ref = sole_ref(exp), sole_ref(pred)
    if exp_ref is not None or pred_ref is not None:
        if exp_ref is None or pred_ref is None:
            return None
        same = fwd.get(exp_ref.step) == pred_ref.step and exp_ref.path == pred_ref.path
        return {exp_ref.step} if same else None
    rendered = []
    for ref in embedded_refs(pred):
        if ref.step not in back:
            return None
        rendered.append(embed(Ref(back[ref.step], ref.path)))
    pieces = EMBEDDED_REF.split(pred)[::3]  # text between the references
    text = "".join(p + (rendered[i] if i < len(rendered) else "") for i, p in enumerate(pieces))
    if norm_text(text) != norm_text(exp):
        return None
    return {ref.step for ref in embedded_refs(exp)}


def _match_contains(items: list[Any], pred: Any, fwd: dict[int, int]) -> set[int] | None:
    if isinstance(pred, str):
        strings = [pred]
    elif isinstance(pred, list) and all(isinstance(p, str) for p in pred):
        strings = pred
    else:
        return None
    refs: list[Ref] = []
    texts: list[str] = []
    for text in strings:
        ref = whole_ref(text)
        if ref is not None:
            refs.append(ref)
            continue
        refs += embedded_refs(text)
        texts.append(EMBEDDED_REF.sub(" ", text))
    haystack = norm_text("\n".join(texts))
    deps = set()
    for item in items:
        ref = sole_ref(item)
        if ref is None:
            if norm_text(item) not in haystack:
                return None
            continue
        target = fwd.get(ref.step)
        if not any(r.step == target and _prefix_related(r.path, ref.path) for r in refs):
            return None
        deps.add(ref.step)
    return deps


def _prefix_related(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def closure(edges: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Transitive closure of (before, after) pairs."""
    succ: dict[int, set[int]] = {}
    for before, after in edges:
        succ.setdefault(before, set()).add(after)
    result = set()
    for start in succ:
        todo, seen = list(succ[start]), set()
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(succ.get(node, ()))
        result |= {(start, node) for node in seen}
    return result


def topo_order(steps: dict[int, dict[str, Any]]) -> list[int]:
    order: list[int] = []
    done: set[int] = set()

    def visit(node: int, trail: tuple[int, ...]) -> None:
        if node in done:
            return
        if node in trail:
            raise ValueError(f"expected plan has a dependency cycle through step {node}")
        for dep in sorted(expected_deps(steps[node])):
            if dep not in steps:
                raise ValueError(f"expected plan refers to missing step {dep}")
            visit(dep, trail + (node,))
        done.add(node)
        order.append(node)

    for node in sorted(steps):
        visit(node, ())
    return order


class _Matcher:
    """Searches for a pairing of expected and predicted steps under which the plans match."""

    def __init__(self, expected: dict[str, Any], predicted: dict[str, Any], check_order: bool = True):
        self.exp = {s["id"]: s for s in expected["steps"]}
        self.pred = {s["id"]: s for s in predicted["steps"]}
        self.check_order = check_order
        self.fwd: dict[int, int] = {}
        self.back: dict[int, int] = {}
        self.arg_deps: dict[int, set[int]] = {}

    def run(self) -> bool:
        if Counter(s["tool"] for s in self.exp.values()) != Counter(s["tool"] for s in self.pred.values()):
            return False
        return self._search(topo_order(self.exp), 0)

    def _search(self, order: list[int], index: int) -> bool:
        if index == len(order):
            return not self.check_order or self._same_order()
        exp_id = order[index]
        exp_step = self.exp[exp_id]
        for pred_id in sorted(self.pred):
            pred_step = self.pred[pred_id]
            if pred_id in self.back or pred_step["tool"] != exp_step["tool"]:
                continue
            deps = match_value(exp_step["args"], pred_step.get("args"), self.fwd, self.back)
            if deps is None:
                continue
            self.fwd[exp_id], self.back[pred_id], self.arg_deps[exp_id] = pred_id, exp_id, deps
            if self._search(order, index + 1):
                return True
            del self.fwd[exp_id], self.back[pred_id], self.arg_deps[exp_id]
        return False

    def _same_order(self) -> bool:
        data = {(dep, step) for step, deps in self.arg_deps.items() for dep in deps}
        exp_edges = data | {(a, s) for s, step in self.exp.items() for a in step.get("after", [])}
        pred_edges = data | {(self.back[a], self.back[p])
                             for p, step in self.pred.items() for a in step.get("after", [])}
        return closure(exp_edges) == closure(pred_edges)


def plan_matches(predicted: dict[str, Any], expected: dict[str, Any]) -> bool:
    """True when a valid predicted plan matches one expected plan."""
    return _Matcher(expected, predicted).run()


def explain_mismatch(predicted: dict[str, Any], expected_plans: list[dict[str, Any]]) -> str:
    """A short reason why no alternative matched (against the closest one)."""
    pred_tools = Counter(s["tool"] for s in predicted["steps"])
    for expected in expected_plans:
        same_tools = Counter(s["tool"] for s in expected["steps"]) == pred_tools
        if same_tools and _Matcher(expected, predicted, check_order=False).run():
            return "arguments match but the ordering differs (dependencies / 'after')"
    for expected in expected_plans:
        if Counter(s["tool"] for s in expected["steps"]) == pred_tools:
            return "tools match but arguments differ"
    want = sorted(Counter(s["tool"] for s in expected_plans[0]["steps"]).elements())
    return f"tools differ: expected {want}, got {sorted(pred_tools.elements())}"


# ---------------------------------------------------------------------------------------------
# Scoring a predictions file


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SystemExit(f"{path.name}:{number}: not valid JSON ({exc})") from exc
    return records


def task_category(task: dict[str, Any]) -> str:
    return task.get("category") or "unknown"


def score_task(task: dict[str, Any], plan: Any, catalog: dict[str, dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {"id": task["id"], "category": task_category(task)}
    errors = validate_plan(plan, catalog)
    if errors:
        return result | {"correct": False, "valid": False, "errors": errors, "reason": "invalid plan"}
    correct = any(plan_matches(plan, expected) for expected in task["expected"])
    reason = None if correct else explain_mismatch(plan, task["expected"])
    return result | {"correct": correct, "valid": True, "errors": [], "reason": reason}


def score(tasks: list[dict[str, Any]], predictions: dict[str, Any],
          catalog: dict[str, dict[str, Any]]) -> dict[str, Any]:
    results = []
    for task in tasks:
        if task["id"] not in predictions:
            results.append({"id": task["id"], "category": task_category(task), "correct": False,
                            "valid": False, "missing": True, "errors": [], "reason": "no prediction"})
        else:
            results.append(score_task(task, predictions[task["id"]], catalog) | {"missing": False})
    by_category = {}
    for category in [*CATEGORIES, *sorted({r["category"] for r in results} - set(CATEGORIES))]:
        rows = [r for r in results if r["category"] == category]
        if rows:
            right = sum(r["correct"] for r in rows)
            by_category[category] = {"correct": right, "total": len(rows), "accuracy": right / len(rows)}
    right = sum(r["correct"] for r in results)
    return {
        "tasks": len(tasks),
        "correct": right,
        "accuracy": right / len(tasks) if tasks else 0.0,
        "invalid": sum(not r["valid"] and not r["missing"] for r in results),
        "missing": sum(r["missing"] for r in results),
        "by_category": by_category,
        "results": results,
    }


def print_summary(summary: dict[str, Any]) -> None:
    print(f"tasks: {summary['tasks']}   missing predictions: {summary['missing']}   "
          f"invalid plans: {summary['invalid']}")
    print(f"{'category':<10} {'correct':>9}  accuracy")
    for category, row in summary["by_category"].items():
        print(f"{category:<10} {row['correct']:>4}/{row['total']:<4}  {100 * row['accuracy']:6.1f}%")
    print(f"{'overall':<10} {summary['correct']:>4}/{summary['tasks']:<4}  {100 * summary['accuracy']:6.1f}%")
    failures = [r for r in summary["results"] if not r["correct"]]
    if failures:
        print("\nnot correct:")
        for row in failures:
            detail = "; ".join(row["errors"][:3]) if row["errors"] else row["reason"]
            kind = "invalid" if row["errors"] else "missing" if row["missing"] else "wrong"
            print(f"  {row['id']:<12} {kind}: {detail}")


def load_predictions(path: Path) -> dict[str, Any]:
    predictions: dict[str, Any] = {}
    for record in read_jsonl(path):
        if "id" not in record or "plan" not in record:
            raise SystemExit(f"{path.name}: every line needs 'id' and 'plan', got keys {sorted(record)}")
        if record["id"] in predictions:
            print(f"warning: {path.name}: several predictions for {record['id']}; the last one counts",
                  file=sys.stderr)
        predictions[record["id"]] = record["plan"]
    return predictions


# ---------------------------------------------------------------------------------------------
# Self-test


class SelfTest:
    def __init__(self, catalog: dict[str, dict[str, Any]]):
        self.catalog = catalog
        self.failures: list[str] = []
        self.counts: Counter[str] = Counter()

    def expect(self, ok: bool, label: str, message: str) -> None:
        self.counts[label] += 1
        if not ok:
            self.failures.append(f"[{label}] {message}")

    # -- concrete plans from expected ones --------------------------------------------------

    def concretise(self, plan: dict[str, Any], choices: dict[int, int] | None = None) -> dict[str, Any]:
        """A plan a planner could have written that matches `plan`: markers become values.

        `choices` picks, by occurrence number, which option of each "$one_of" to use (default 0)."""
        counter = iter(range(10_000))
        steps = []
        for step in plan["steps"]:
            properties = self.catalog[step["tool"]]["parameters"]["properties"]
            args = {name: self._concrete(value, properties.get(name, {}), counter, choices or {})
                    for name, value in step["args"].items()}
            steps.append({"id": step["id"], "tool": step["tool"], "args": args,
                          "after": list(step.get("after", []))})
        return {"steps": steps}

    def _concrete(self, value: Any, schema: dict[str, Any], counter: Iterator[int],
                  choices: dict[int, int]) -> Any:
        marker = _marker(value)
        if marker == "$one_of":
            option = value["$one_of"][choices.get(next(counter), 0)]
            return self._concrete(option, schema, counter, choices)
        if marker == "$contains":
            parts = [embed(ref) if (ref := sole_ref(i)) else i for i in value["$contains"]]
            if "array" in (schema_types(schema) or ()):
                return [f"Section: {p}" for p in parts] or ["Details follow."]
            return ("Here it is: " + " | ".join(parts)) if parts else "Hello"
        return value

    @staticmethod
    def one_of_counts(plan: dict[str, Any]) -> list[int]:
        counts: list[int] = []

        def walk(value: Any) -> None:
            if _marker(value) == "$one_of":
                counts.append(len(value["$one_of"]))
                walk(value["$one_of"][0])
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        for step in plan["steps"]:
            walk(step["args"])
        return counts

    def concretisations(self, plan: dict[str, Any]) -> list[dict[str, Any]]:
        plans = [self.concretise(plan)]
        for occurrence, options in enumerate(self.one_of_counts(plan)):
            plans += [self.concretise(plan, {occurrence: option}) for option in range(1, options)]
        return plans

    def correct(self, task: dict[str, Any], plan: dict[str, Any]) -> bool:
        return bool(score_task(task, plan, self.catalog)["correct"])

    # -- checks -------------------------------------------------------------------------------

    def check_catalog(self, raw: list[dict[str, Any]]) -> None:
        label = "catalog"
        names = [tool.get("tool_name") for tool in raw]
        self.expect(len(names) == len(set(names)), label, f"duplicate tool names in {names}")
        for tool in raw:
            name = tool.get("tool_name")
            keys = {"tool_name", "description", "parameters", "execution_mode", "returns"}
            self.expect(set(tool) == keys, label, f"{name}: keys {sorted(tool)} != {sorted(keys)}")
            self.expect(tool.get("execution_mode") in ("sync", "async"), label, f"{name}: execution_mode")
            for part in ("parameters", "returns"):
                schema = tool.get(part, {})
                self.expect(schema.get("type") == "object", label, f"{name}.{part}: type must be object")
                self.expect(schema.get("additionalProperties") is False, label,
                            f"{name}.{part}: additionalProperties must be false")
                self.expect(isinstance(schema.get("required"), list) and
                            set(schema["required"]) <= set(schema.get("properties", {})), label,
                            f"{name}.{part}: 'required' must list declared properties")
                for problem in _schema_problems(schema, f"{name}.{part}"):
                    self.expect(False, label, problem)

    def check_task_shape(self, task: dict[str, Any], source: str) -> None:
        label = "task records"
        tid = task.get("id")
        keys = set(task)
        self.expect({"id", "category", "request", "today", "expected"} <= keys <=
                    {"id", "category", "request", "today", "expected", "notes"}, label,
                    f"{source} {tid}: keys {sorted(keys)}")
        self.expect(task.get("category") in CATEGORIES, label, f"{tid}: category {task.get('category')}")
        self.expect(_is_date(str(task.get("today"))), label, f"{tid}: today {task.get('today')}")
        expected = task.get("expected")
        self.expect(isinstance(expected, list) and len(expected) >= 1, label, f"{tid}: expected must be a list")
        for plan in expected or []:
            self.expect(set(plan) == {"steps"}, label, f"{tid}: expected plan keys {sorted(plan)}")
            ids = [s["id"] for s in plan["steps"]]
            self.expect(len(ids) == len(set(ids)), label, f"{tid}: duplicate ids in expected plan")
            for step in plan["steps"]:
                for ref in refs_in(step["args"]):
                    self.expect(ref.step in ids, label, f"{tid}: expected plan refers to missing step {ref}")
                for value in step["args"].values():
                    for date in _dates_in(value):
                        self.expect(date >= task["today"], label, f"{tid}: date {date} is before today")
        for index, plan in enumerate(expected or []):
            if index == 0 or task.get("category") in ("single", "no-tool"):
                self._check_category_shape(task, plan)  # alternatives of a chain may, e.g., branch

    def _check_category_shape(self, task: dict[str, Any], plan: dict[str, Any]) -> None:
        label, tid, category = "category shape", task["id"], task["category"]
        steps = {s["id"]: s for s in plan["steps"]}
        edges = {(d, s) for s, step in steps.items() for d in expected_deps(step)}
        order = closure(edges)
        roots = [s for s in steps if not expected_deps(steps[s])]
        incomparable = [(a, b) for a in steps for b in steps
                        if a < b and (a, b) not in order and (b, a) not in order]
        if category == "no-tool":
            self.expect(not steps, label, f"{tid}: a no-tool task expects no steps")
        elif category == "single":
            self.expect(len(steps) == 1, label, f"{tid}: a single task expects one step")
        elif category == "chain":
            self.expect(2 <= len(steps) <= 4, label, f"{tid}: a chain has 2-4 steps")
            self.expect(bool(edges), label, f"{tid}: a chain needs data flowing between steps")
        elif category == "parallel":
            joins = [s for s in steps if any((a, s) in order and (b, s) in order for a, b in incomparable)]
            self.expect(bool(incomparable) and bool(joins), label,
                        f"{tid}: a parallel task needs independent branches that join")
        elif category == "files":
            file_tools = {"list_files", "read_file", "write_file", "extract_invoice", "query_sql",
                          "generate_report"}
            self.expect(len(steps) >= 2 and any(s["tool"] in file_tools for s in steps.values()),
                        label, f"{tid}: a files task has 2+ steps with file/invoice/sql/report tools")
        self.expect(category == "no-tool" or bool(roots), label, f"{tid}: no root step")

    def check_expected_plans(self, task: dict[str, Any]) -> None:
        """(a) valid and self-matching; (b) still matching with ids renumbered and steps shuffled."""
        rng = random.Random(f"shuffle:{task['id']}")
        for index, expected in enumerate(task["expected"]):
            for plan in self.concretisations(expected):
                errors = validate_plan(plan, self.catalog)
                self.expect(not errors, "(a) expected plan validates", f"{task['id']}#{index}: {errors}")
                self.expect(plan_matches(plan, expected), "(a) expected plan matches itself",
                            f"{task['id']}#{index}: concrete plan does not match its own alternative")
                self.expect(self.correct(task, plan), "(a) expected plan scores correct",
                            f"{task['id']}#{index}: scored incorrect")
                for _ in range(3):
                    shuffled = renumber(plan, rng)
                    self.expect(self.correct(task, shuffled), "(b) renumbered+shuffled scores correct",
                                f"{task['id']}#{index}: {json.dumps(shuffled)}")

    def check_mutations(self, task: dict[str, Any]) -> None:
        """(c) one argument changed, one step dropped, a wrong tool: all incorrect."""
        for index, expected in enumerate(task["expected"]):
            base = self.concretise(expected)
            tag = f"{task['id']}#{index}"
            for label, plan in self.arg_mutations(expected, base):
                self.expect(not self.correct(task, plan), "(c) one arg changed -> incorrect",
                            f"{tag}: {label} still scores correct")
                self.counts["(c)   ... of these, plans still valid"] += not validate_plan(plan, self.catalog)
            for step in base["steps"]:
                dropped = {"steps": [s for s in base["steps"] if s is not step]}
                self.expect(not self.correct(task, dropped), "(c) one step dropped -> incorrect",
                            f"{tag}: dropping step {step['id']} still scores correct")
                for tool in sorted(self.catalog):
                    if tool != step["tool"]:
                        swapped = copy.deepcopy(base)
                        next(s for s in swapped["steps"] if s["id"] == step["id"])["tool"] = tool
                        self.expect(not self.correct(task, swapped), "(c) wrong tool -> incorrect",
                                    f"{tag}: step {step['id']} as {tool} still scores correct")
                        still_valid = not validate_plan(swapped, self.catalog)
                        self.counts["(c)   ... wrong-tool plans still valid"] += still_valid
            self.check_structure_variants(task, expected, base, tag)

    def arg_mutations(self, expected: dict[str, Any], base: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        for position, step in enumerate(expected["steps"]):
            properties = self.catalog[step["tool"]]["parameters"]["properties"]
            for name, value in step["args"].items():
                if _marker(value) == "$contains":
                    for drop in range(len(value["$contains"])):
                        changed = copy.deepcopy(expected)
                        del changed["steps"][position]["args"][name]["$contains"][drop]
                        yield (f"step {step['id']} {name} without {value['$contains'][drop]!r}",
                               self.concretise(changed))
                    continue
                plan = copy.deepcopy(base)
                current = plan["steps"][position]["args"][name]
                plan["steps"][position]["args"][name] = self.mutate(current, properties.get(name, {}), plan)
                yield f"step {step['id']} {name}: {current!r} -> changed", plan
            if len(step["args"]) < len(properties):  # an optional argument added
                plan = copy.deepcopy(base)
                missing = next(n for n in properties if n not in step["args"])
                plan["steps"][position]["args"][missing] = _sample_value(properties[missing])
                yield f"step {step['id']} extra argument {missing}", plan

    def mutate(self, value: Any, schema: dict[str, Any], plan: dict[str, Any]) -> Any:
        """A different value of the same kind, valid for `schema` where that is easy."""
        ref = sole_ref(value)
        if ref is not None:
            return self._mutate_ref(ref, schema, plan)
        if isinstance(value, bool):
            return not value
        if isinstance(value, int):
            return value + 1
        if isinstance(value, float):
            return value + 1.5
        if isinstance(value, list):
            return value + ["extra"]
        if not isinstance(value, str):
            return "changed"
        if "enum" in schema:
            return next(e for e in schema["enum"] if e != value)
        if _is_date(value):
            return (dt.date.fromisoformat(value) + dt.timedelta(days=1)).isoformat()
        if re.fullmatch(r"[0-9]{2}:[0-9]{2}", value):
            return f"{(int(value[:2]) + 1) % 24:02d}{value[2:]}"
        if re.fullmatch(r"[A-Z]{3}", value):
            return "CHF" if value != "CHF" else "SEK"
        if _EMAIL.fullmatch(value):
            return "x" + value
        return value + " extra"

    def _mutate_ref(self, ref: Ref, schema: dict[str, Any], plan: dict[str, Any]) -> Any:
        indexes = [i for i, seg in enumerate(ref.path) if isinstance(seg, int)]
        if indexes:
            path = list(ref.path)
            path[indexes[-1]] = int(path[indexes[-1]]) + 1
            return str(Ref(ref.step, tuple(path)))
        checker = _Checker(self.catalog, {s["id"]: s for s in plan["steps"]})
        if ref.path:
            parent, _ = checker.resolve(Ref(ref.step, ref.path[:-1]))
            for name, sub in sorted((parent or {}).get("properties", {}).items()):
                if name != ref.path[-1] and _types_compatible(schema_types(sub), schema_types(schema)):
                    return str(Ref(ref.step, ref.path[:-1] + (name,)))
        return _sample_value(schema)

    def check_structure_variants(self, task: dict[str, Any], expected: dict[str, Any],
                                 base: dict[str, Any], tag: str) -> None:
        steps = {s["id"]: s for s in base["steps"]}
        data_edges = {(r.step, s["id"]) for s in base["steps"] for r in refs_in(s["args"])}
        order = closure({(d, s) for s, step in steps.items() for d in expected_deps(step)})
        for a in steps:
            for b in steps:
                if a == b:
                    continue
                plan = copy.deepcopy(base)
                target = next(s for s in plan["steps"] if s["id"] == b)
                target["after"] = sorted(set(target["after"]) | {a})
                if (a, b) in order:
                    self.expect(self.correct(task, plan), "redundant 'after' still correct",
                                f"{tag}: after {a}->{b} is implied, yet scores incorrect")
                elif (b, a) not in order:
                    self.expect(not validate_plan(plan, self.catalog) and not self.correct(task, plan),
                                "extra ordering -> incorrect",
                                f"{tag}: ordering {a}->{b} between independent steps scores correct")
        for step in expected["steps"]:
            for a in step.get("after", []):
                if (a, step["id"]) not in closure(data_edges):
                    plan = copy.deepcopy(base)
                    target = next(s for s in plan["steps"] if s["id"] == step["id"])
                    target["after"] = [x for x in target["after"] if x != a]
                    self.expect(not self.correct(task, plan), "missing 'after' -> incorrect",
                                f"{tag}: dropping after {a}->{step['id']} still scores correct")
        if base["steps"]:
            plan = copy.deepcopy(base)
            extra = copy.deepcopy(plan["steps"][-1])
            extra["id"] = max(steps) + 1
            plan["steps"].append(extra)
            self.expect(not self.correct(task, plan), "extra step -> incorrect", f"{tag}: duplicated step")
            self.check_lenient_forms(task, expected, base, tag)
        else:
            plan = {"steps": [{"id": 1, "tool": "get_weather", "args": {"city": "Paris", "date": task["today"]}}]}
            self.expect(not self.correct(task, plan), "no-tool task with a step -> incorrect", tag)
            self.expect(self.correct(task, {"steps": []}), "no-tool task, empty plan -> correct", tag)

    def check_lenient_forms(self, task: dict[str, Any], expected: dict[str, Any],
                            base: dict[str, Any], tag: str) -> None:
        """Case, spacing, 250 vs 250.0, "$N.x" vs "{$N.x}", no 'after' key: all still correct."""
        plan = copy.deepcopy(base)
        for exp_step, step in zip(expected["steps"], plan["steps"], strict=True):
            properties = self.catalog[step["tool"]]["parameters"]["properties"]
            for name, value in step["args"].items():
                schema = properties.get(name, {})
                if _marker(exp_step["args"][name]) is not None:
                    continue
                if isinstance(value, int) and not isinstance(value, bool) and "number" in (schema_types(schema) or ()):
                    step["args"][name] = float(value)
                elif sole_ref(value) is not None and schema_types(schema) == {"string"}:
                    step["args"][name] = "{" + value + "}"
                elif (isinstance(value, str) and not list(refs_in(value))
                      and not ({"enum", "pattern", "format"} & set(schema))):
                    step["args"][name] = "  " + value.upper().replace(" ", "   ") + " "
            if not step["after"]:
                del step["after"]
        self.expect(not validate_plan(plan, self.catalog) and self.correct(task, plan),
                    "lenient forms still correct", f"{tag}: {json.dumps(plan, ensure_ascii=False)}")

    def check_validator(self) -> None:
        """Plans that must be rejected, each for one reason; and a few that must pass."""
        good = {"steps": [
            {"id": 1, "tool": "search_hotels", "args": {"city": "Rome", "check_in": "2026-03-12", "nights": 2}},
            {"id": 2, "tool": "book_hotel", "args": {"hotel_id": "$1.hotels.0.hotel_id",
                                                     "check_in": "2026-03-12", "nights": 2}},
            {"id": 3, "tool": "send_email", "after": [], "args": {
                "to": "a@example.com", "subject": "Booked", "body": "Your booking {$2.booking_id} is confirmed"}},
        ]}
        self.expect(not validate_plan(good, self.catalog), "validator accepts good plans",
                    str(validate_plan(good, self.catalog)))
        self.expect(not validate_plan({"steps": []}, self.catalog), "validator accepts good plans", "empty plan")

        def broken(step_id: int, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
            plan = copy.deepcopy(good)
            change(next(s for s in plan["steps"] if s["id"] == step_id))
            return plan

        def set_arg(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
            return lambda step: step["args"].__setitem__(name, value)

        cases = {
            "unknown tool": broken(3, lambda s: s.__setitem__("tool", "send_sms")),
            "missing required arg": broken(1, lambda s: s["args"].pop("nights")),
            "type violation (string for integer)": broken(1, set_arg("nights", "2")),
            "type violation (bool for integer)": broken(1, set_arg("nights", True)),
            "minimum violation": broken(1, set_arg("nights", 0)),
            "date format violation": broken(1, set_arg("check_in", "tomorrow")),
            "impossible date": broken(1, set_arg("check_in", "2026-02-30")),
            "email format violation": broken(3, set_arg("to", "anna at example.com")),
            "unknown argument": broken(1, set_arg("stars", 4)),
            "dangling reference": broken(2, set_arg("hotel_id", "$7.hotels.0.hotel_id")),
            "dangling embedded reference": broken(3, set_arg("body", "Booked: {$9.booking_id}")),
            "reference to a missing field": broken(2, set_arg("hotel_id", "$1.hotels.0.id")),
            "reference indexes an object": broken(2, set_arg("hotel_id", "$1.0")),
            "malformed reference": broken(2, set_arg("hotel_id", "$1.hotels[0].hotel_id")),
            "reference of the wrong type": broken(3, set_arg("body", "$1.hotels")),
            "self reference": broken(2, set_arg("hotel_id", "$2.booking_id")),
            "cycle": broken(1, lambda s: s.__setitem__("after", [3])),
            "after names a missing step": broken(3, lambda s: s.__setitem__("after", [8])),
            "duplicate id": broken(3, lambda s: s.__setitem__("id", 2)),
            "id not an integer": broken(3, lambda s: s.__setitem__("id", "3")),
            "unknown step key": broken(3, lambda s: s.__setitem__("depends_on", [2])),
            "args not an object": broken(3, lambda s: s.__setitem__("args", ["a@example.com"])),
            "unknown plan key": {**good, "thoughts": "..."},
            "plan not an object": [],
            "steps not a list": {"steps": {"id": 1}},
        }
        cases["enum violation"] = {"steps": [{"id": 1, "tool": "generate_report", "args": {
            "title": "T", "sections": ["x"], "format": "pdf"}}]}
        cases["empty sections"] = {"steps": [{"id": 1, "tool": "generate_report", "args": {
            "title": "T", "sections": [], "format": "json"}}]}
        cases["lookup_customer with no key"] = {"steps": [{"id": 1, "tool": "lookup_customer", "args": {}}]}
        cases["bad currency code"] = {"steps": [{"id": 1, "tool": "convert_currency", "args": {
            "amount": 5, "from_currency": "usd", "to_currency": "EUR"}}]}
        cases["bad time"] = {"steps": [{"id": 1, "tool": "create_calendar_event", "args": {
            "title": "x", "date": "2026-03-03", "time": "9:30"}}]}
        for name, plan in cases.items():
            self.expect(bool(validate_plan(plan, self.catalog)), "validator rejects bad plans",
                        f"{name}: accepted {json.dumps(plan)}")

    def check_matching_rules(self) -> None:
        """Hand-made cases for the normalisation and $contains rules."""
        task = {"id": "rules", "category": "chain", "today": "2026-03-02", "expected": [{"steps": [
            {"id": 1, "tool": "get_weather", "args": {"city": "Paris", "date": "2026-03-03"}, "after": []},
            {"id": 2, "tool": "send_email", "after": [], "args": {
                "to": "anna@example.com", "subject": {"$contains": []},
                "body": {"$contains": ["$1.forecast", "Paris"]}}},
        ]}]}

        def email(body: str, city: str = "paris  ") -> dict[str, Any]:
            return {"steps": [
                {"id": 7, "tool": "send_email", "args": {"to": "ANNA@example.com", "subject": "Weather",
                                                          "body": body}},
                {"id": 4, "tool": "get_weather", "args": {"city": city, "date": "2026-03-03"}},
            ]}

        good = {
            "field reference": email("Paris: {$4.forecast}"),
            "whole result contains the field": email("PARIS tomorrow: {$4}"),
            "extra reference in free text": email("Paris: {$4.forecast}, {$4.temp_c} C"),
        }
        bad = {
            "reference to another field": email("Paris: {$4.temp_c}"),
            "literal missing": email("Tomorrow: {$4.forecast}"),
            "reference missing": email("Paris will be sunny"),
            "city differs": email("Paris: {$4.forecast}", city="Lyon"),
        }
        for name, plan in good.items():
            self.expect(self.correct(task, plan), "matching rules", f"{name} should be correct")
        for name, plan in bad.items():
            self.expect(not self.correct(task, plan), "matching rules", f"{name} should be incorrect")
        summary_task = {"id": "rules2", "category": "chain", "today": "2026-03-02", "expected": [{"steps": [
            {"id": 1, "tool": "read_file", "args": {"path": "/a/b.txt"}, "after": []},
            {"id": 2, "tool": "summarize_text", "args": {"text": {"$contains": ["$1.content"]},
                                                          "max_words": 50}, "after": []},
        ]}]}
        for text, ok in (("$1.content", True), ("{$1.content}", True), ("Summarise: {$1.content}", True),
                         ("{$1}", True), ("some text", False)):
            plan = {"steps": [{"id": 1, "tool": "read_file", "args": {"path": "/A/B.txt"}},
                              {"id": 2, "tool": "summarize_text", "args": {"text": text, "max_words": 50.0}}]}
            self.expect(self.correct(summary_task, plan) == ok, "matching rules", f"text={text!r} should be {ok}")


def renumber(plan: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The same plan with new step ids (references and 'after' rewritten) in a shuffled order."""
    old = [s["id"] for s in plan["steps"]]
    new = dict(zip(old, rng.sample(range(1, 100), len(old)), strict=True))

    def fix(value: Any) -> Any:
        if isinstance(value, str):
            ref = whole_ref(value)
            if ref is not None:
                return str(Ref(new[ref.step], ref.path))
            return EMBEDDED_REF.sub(lambda m: embed(Ref(new[_to_ref(m).step], _to_ref(m).path)), value)
        if isinstance(value, list):
            return [fix(v) for v in value]
        if isinstance(value, dict):
            return {k: fix(v) for k, v in value.items()}
        return value

    steps = [{"id": new[s["id"]], "tool": s["tool"], "args": fix(s["args"]),
              "after": [new[a] for a in s.get("after", [])]} for s in plan["steps"]]
    rng.shuffle(steps)
    return {"steps": steps}


def _sample_value(schema: dict[str, Any]) -> Any:
    """A plain valid value for a parameter schema."""
    if "enum" in schema:
        return schema["enum"][0]
    types = schema_types(schema) or {"string"}
    if "integer" in types:
        return max(7, schema.get("minimum", 0))
    if "number" in types:
        return 12345.5
    if "array" in types:
        return ["changed"]
    if schema.get("format") == "date":
        return "2026-04-01"
    if schema.get("format") == "email":
        return "someone.else@example.org"
    if "pattern" in schema and "A-Z" in schema["pattern"]:
        return "CHF"
    if "pattern" in schema:
        return "23:45"
    return "changed text"


def _schema_problems(schema: Any, where: str) -> Iterator[str]:
    if not isinstance(schema, dict):
        yield f"{where}: a schema must be an object"
        return
    for key in schema:
        if key not in ANNOTATIONS | ASSERTIONS:
            yield f"{where}: keyword {key!r} is not supported by this scorer"
    for name in schema_types(schema) or ():
        if name not in _TYPE_CHECKS:
            yield f"{where}: unknown type {name!r}"
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except re.error as exc:
            yield f"{where}: bad pattern ({exc})"
    if "format" in schema and schema["format"] not in FORMATS:
        yield f"{where}: format {schema['format']!r} is not asserted by this scorer"
    for name, sub in schema.get("properties", {}).items():
        yield from _schema_problems(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _schema_problems(schema["items"], f"{where}[]")


def _dates_in(value: Any) -> Iterator[str]:
    if isinstance(value, str) and _is_date(value):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _dates_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _dates_in(item)


def run_selftest(task_files: list[Path], catalog_path: Path) -> int:
    raw_catalog = json.loads(catalog_path.read_text(encoding="utf-8"))
    catalog = {tool["tool_name"]: tool for tool in raw_catalog}
    test = SelfTest(catalog)
    test.check_catalog(raw_catalog)
    test.check_validator()
    test.check_matching_rules()
    print(f"catalogue: {catalog_path.name}, {len(catalog)} tools")
    all_ids: set[str] = set()
    for path in task_files:
        tasks = read_jsonl(path)
        counts = Counter(task_category(t) for t in tasks)
        plans = sum(len(t["expected"]) for t in tasks)
        print(f"tasks: {path.name}: {len(tasks)} tasks, {plans} expected plans; " +
              ", ".join(f"{c} {counts[c]}" for c in CATEGORIES))
        for task in tasks:
            test.expect(task["id"] not in all_ids, "task records", f"duplicate task id {task['id']}")
            all_ids.add(task["id"])
            test.check_task_shape(task, path.name)
        if any(f.startswith("[task records]") or f.startswith("[category shape]") for f in test.failures):
            break
        for task in tasks:
            test.check_expected_plans(task)
            test.check_mutations(task)
        predictions = {t["id"]: test.concretise(t["expected"][-1]) for t in tasks}
        summary = score(tasks, predictions, catalog)
        test.expect(summary["correct"] == len(tasks) and summary["invalid"] == 0, "end-to-end score",
                    f"{path.name}: expected plans as predictions score {summary['correct']}/{len(tasks)}")
        wrong: dict[str, Any] = {tid: {"steps": []} if plan["steps"] else {"steps": [{"id": 1, "tool": "read_file",
                 "args": {"path": "/nope.txt"}}]} for tid, plan in predictions.items()}
        wrong[tasks[0]["id"]] = {"steps": [{"id": 1, "tool": "fly_to", "args": {}}]}
        summary = score(tasks, wrong, catalog)
        test.expect(summary["correct"] == 0 and summary["invalid"] == 1, "end-to-end score",
                    f"{path.name}: wrong predictions score {summary['correct']}, invalid {summary['invalid']}")
    width = max(map(len, test.counts), default=10)
    for label, count in test.counts.items():
        print(f"  {label:<{width}}  {count:6d}")
    if test.failures:
        print(f"\nselftest FAILED: {len(test.failures)} of {sum(test.counts.values())} checks")
        for failure in test.failures[:60]:
            print("  " + failure)
        return 1
    checks = sum(n for label, n in test.counts.items() if "..." not in label)
    print(f"\nselftest passed: {checks} checks")
    return 0


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", help="TASKS.jsonl PREDICTIONS.jsonl (with --selftest: task files)")
    parser.add_argument("--catalog", type=Path, default=DEFAULT_CATALOG,
                        help="tool catalogue (default: the catalog.json beside this script)")
    parser.add_argument("--json", action="store_true", help="print a machine-readable summary instead")
    parser.add_argument("--selftest", action="store_true", help="check the scorer and the task files")
    args = parser.parse_args(argv)
    if args.selftest:
        files = [Path(f) for f in args.files] or [HERE / n for n in DEFAULT_TASK_FILES if (HERE / n).exists()]
        if not files:
            parser.error("no task files given and none found beside the script")
        return run_selftest(files, args.catalog)
    if len(args.files) != 2:
        parser.error("give TASKS.jsonl and PREDICTIONS.jsonl")
    catalog = load_catalog(args.catalog)
    tasks = read_jsonl(Path(args.files[0]))
    predictions = load_predictions(Path(args.files[1]))
    unknown = sorted(set(predictions) - {t["id"] for t in tasks})
    if unknown:
        print(f"warning: predictions for unknown task ids ignored: {', '.join(unknown[:10])}", file=sys.stderr)
    summary = score(tasks, predictions, catalog)
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        print_summary(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
