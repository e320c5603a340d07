"""`ember eval bfcl`: a planner on the Berkeley Function Calling Leaderboard, scored offline by
BFCL's own checker.

The data and the checker come from the `bfcl-eval` package (Apache-2.0), installed without its
dependencies, which pull several GB and do not resolve:
`pip install --no-deps bfcl-eval==2026.3.23 filelock mpmath`. Each BFCL entry becomes a
planning task: its functions become the catalogue (dotted names such as `math.hypot` are sent
as `math_hypot`, since tool names are identifiers, and mapped back before scoring), its question
the request. The plan's steps, as `[{name: {argument: value}}]`, are scored by
`ast_checker`; in the `irrelevance` category a plan is correct when it calls no tool.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import types
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path
from typing import Any

from ember.errors import PlanError, PlannerError, UserError
from ember.extras import require
from ember.measure.planner_eval import latency_summary, plan_timed
from ember.plan import Step
from ember.planner.base import Planner, PlanningTask
from ember.tools.descriptor import ToolDescriptor

__all__ = ["CATEGORIES", "Checker", "evaluate_bfcl", "load_category", "oracle_output"]

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
TODAY = date(2026, 1, 5)  # BFCL questions name their dates; a fixed one keeps runs comparable
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}


def _package_dir() -> Path:
    require("ember eval bfcl", "bfcl_eval", "filelock", "mpmath")
    spec = importlib.util.find_spec("bfcl_eval")
    assert spec is not None
    assert spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def load_category(category: str, limit: int | None = None) -> list[dict[str, Any]]:
    """BFCL's entries of `category`, each with its `ground_truth` (none for irrelevance)."""
    if category not in CATEGORIES:
        raise UserError(f"unknown BFCL category {category!r}: choose from {', '.join(CATEGORIES)}")
    data = _package_dir() / "data"
    entries = _read_lines(data / f"BFCL_v4_{category}.json")[:limit]
    if category != "irrelevance":
        answers = {
            a["id"]: a for a in _read_lines(data / "possible_answer" / f"BFCL_v4_{category}.json")
        }
        for entry in entries:
            entry["ground_truth"] = answers[entry["id"]]["ground_truth"]
    return entries


def _read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def catalogue(
    functions: Iterable[dict[str, Any]],
) -> tuple[tuple[ToolDescriptor, ...], dict[str, str]]:
    """BFCL function documents as tool descriptors, and each tool name's BFCL name."""
    tools = []
    names = {}
    for function in functions:
        name = function["name"].replace(".", "_").replace("-", "_")
        names[name] = function["name"]
        tools.append(
            ToolDescriptor(
                tool_name=name,
                description=function.get("description", ""),
                parameters=_schema(function.get("parameters", {"type": "dict"})),
            )
        )
    return tuple(tools), names


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema (types `dict`, `float`, `tuple`, `any`) as JSON Schema."""
    converted = {k: v for k, v in schema.items() if k not in ("properties", "items", "type")}
    converted["type"] = _TYPES.get(schema.get("type", "string"), schema.get("type", "string"))
    if "properties" in schema:
        converted["properties"] = {k: _schema(v) for k, v in schema["properties"].items()}
    if "items" in schema:
        converted["items"] = _schema(schema["items"])
    return converted


def request_text(entry: dict[str, Any]) -> str:
    """The user's words of a single-turn entry."""
    turns = entry["question"][0]
    return "\n".join(turn["content"] for turn in turns if turn["role"] == "user")


def output(steps: Iterable[Step], names: dict[str, str]) -> list[dict[str, Any]]:
    """A plan's steps in BFCL's model-output form, with BFCL's function names."""
    return [{names.get(step.tool, step.tool): dict(step.args)} for step in steps]


def oracle_output(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The first acceptable answer of each expected call (for testing the wiring)."""
    calls = []
    for call in entry.get("ground_truth", []):
        for name, args in call.items():
            chosen = {}
            for arg, options in args.items():
                values = [value for value in options if value != ""]
                if values:
                    chosen[arg] = values[0]
            calls.append({name: chosen})
    return calls


class Checker:
    """BFCL's `ast_checker`, imported without the model SDKs it would otherwise pull in."""

    MODEL = "ember-planner"

    def __init__(self) -> None:
        _package_dir()
        os.environ.setdefault("BFCL_PROJECT_ROOT", tempfile.mkdtemp(prefix="ember-bfcl-"))
        config = types.ModuleType("bfcl_eval.constants.model_config")
        config.MODEL_CONFIG_MAPPING = {  # type: ignore[attr-defined]
            self.MODEL: types.SimpleNamespace(underscore_to_dot=False)
        }
        sys.modules.setdefault("bfcl_eval.constants.model_config", config)
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

        self._check = ast_checker
        self._language = Language.PYTHON

    def __call__(self, category: str, entry: dict[str, Any], calls: list[dict[str, Any]]) -> bool:
        if category == "irrelevance":
            return not calls
        if not calls:
            return False
        try:
            result = self._check(
                entry["function"],
                calls,
                entry["ground_truth"],
                self._language,
                category,
                self.MODEL,
            )
        except Exception:  # the checker raises on some malformed outputs: they are wrong
            return False
        return bool(result["valid"])


async def evaluate_bfcl(
    planner: Planner,
    categories: Iterable[str],
    *,
    limit: int | None = None,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    record: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Plan every entry of `categories` and score it with BFCL's checker; hand `record` each
    entry's `{"id", "category", "correct", "calls"}` as it is scored (to compare two versions
    entry by entry)."""
    check = Checker()
    by_category: dict[str, Any] = {}
    plan_s: list[float] = []
    ttft: list[float] = []
    for category in categories:
        entries = load_category(category, limit)
        correct = 0
        for number, entry in enumerate(entries, start=1):
            tools, names = catalogue(entry["function"])
            task = PlanningTask(request_text(entry), TODAY, tools)
            try:
                steps = await plan_timed(planner, task, ttft, plan_s)
            except (PlannerError, PlanError) as exc:
                progress(f"  {entry['id']}: planner error: {exc}")
                steps = []
            calls = output(steps, names)
            ok = check(category, entry, calls)
            correct += ok
            if record is not None:
                record({"id": entry["id"], "category": category, "correct": ok, "calls": calls})
            progress(
                f"  {category} {number}/{len(entries)} {entry['id']}: {'ok' if ok else 'wrong'}"
            )
        total = len(entries)
        by_category[category] = {
            "correct": correct,
            "total": total,
            "accuracy": round(correct / total, 4) if total else 0.0,
        }
    return {"by_category": by_category, "latency_s": latency_summary(ttft, plan_s)}
