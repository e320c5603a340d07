"""`ember eval bfcl`'s wiring: BFCL's data through the planner seam into BFCL's own checker.

An oracle planner (it answers each entry with BFCL's expected calls) must score 100 %, and a
planner that gets every call slightly wrong 0 %, on a sample of every category."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ember.plan import Step
from ember.planner.base import FirstToken, PlanEvent, PlanningTask

from .conftest import ember

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None,
    reason="bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23 filelock mpmath",
)

SAMPLE = 6


class AnsweringPlanner:
    """Answers each BFCL request with calls computed from its entry."""

    name = "answering"

    def __init__(self, answer: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
        from ember.measure.bfcl import CATEGORIES, load_category, request_text

        self._entries = {
            request_text(entry): entry
            for category in CATEGORIES
            for entry in load_category(category, SAMPLE)
        }
        self._answer = answer

    async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        yield FirstToken()
        tools = {tool.tool_name.lower(): tool.tool_name for tool in task.catalogue}
        for index, call in enumerate(self._answer(self._entries[task.request]), start=1):
            ((name, args),) = call.items()
            tool = tools.get(name.replace(".", "_").lower(), name)
            yield Step(id=index, tool=tool, args=args)


def _wrong(entry: dict[str, Any]) -> list[dict[str, Any]]:
    from ember.measure.bfcl import oracle_output

    calls = oracle_output(entry)
    if not calls:  # irrelevance: calling any function is wrong
        function = entry["function"][0]
        return [{function["name"]: {}}]
    return [{name + "_x": args} for call in calls for name, args in call.items()]


def _evaluate(answer: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> dict[str, Any]:
    from ember.measure.bfcl import CATEGORIES, evaluate_bfcl

    summary: dict[str, Any] = asyncio.run(
        evaluate_bfcl(AnsweringPlanner(answer), CATEGORIES, limit=SAMPLE, progress=lambda _: None)
    )
    return summary


def test_an_oracle_scores_everything_and_a_wrong_planner_nothing() -> None:
    from ember.measure.bfcl import oracle_output

    right = _evaluate(oracle_output)
    assert {c: r["correct"] for c, r in right["by_category"].items()} == {
        "simple_python": SAMPLE,
        "multiple": SAMPLE,
        "parallel": SAMPLE,
        "parallel_multiple": SAMPLE,
        "irrelevance": SAMPLE,
    }
    wrong = _evaluate(_wrong)
    assert all(row["correct"] == 0 for row in wrong["by_category"].values()), wrong
    assert right["latency_s"]["plan"]["n"] == 5 * SAMPLE


def test_dotted_names_become_tool_names_and_map_back() -> None:
    from ember.measure.bfcl import catalogue, load_category, output

    entry = next(e for e in load_category("simple_python") if "." in e["function"][0]["name"])
    tools, names = catalogue(entry["function"])
    assert tools[0].tool_name.isidentifier()
    assert tools[0].parameters["type"] == "object"
    step = Step(id=1, tool=tools[0].tool_name, args={"x": 1})
    assert output([step], names) == [{entry["function"][0]["name"]: {"x": 1}}]


def test_an_unknown_category_is_named() -> None:
    from ember.errors import UserError
    from ember.measure.bfcl import load_category

    with pytest.raises(UserError, match="unknown BFCL category 'simple_java'.*simple_python"):
        load_category("simple_java")


def test_the_command_prints_its_table_and_latency(
    ember_env: dict[str, str], tmp_path: Path
) -> None:
    predictions = tmp_path / "entries.jsonl"
    done = ember(
        ember_env,
        "eval",
        "bfcl",
        "--planner",
        "scripted",
        "--limit",
        "1",
        "--categories",
        "simple_python,irrelevance",
        "--predictions",
        str(predictions),
    )
    assert done.returncode == 0, done.stderr
    assert "simple_python              0/1" in done.stdout
    assert "irrelevance                1/1" in done.stdout  # no plan: no call, right there
    assert "plan median" in done.stdout
    entries = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert entries == [
        {"id": "simple_python_0", "category": "simple_python", "correct": False, "calls": []},
        {"id": "irrelevance_0", "category": "irrelevance", "correct": True, "calls": []},
    ]
