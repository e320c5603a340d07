"""`ember eval planner`: the scorer is the task set's own, and the wiring is proven by an oracle
planner (100 %) and a wrong one (0 %)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ember import Plan
from ember.errors import UserError
from ember.measure import scoring
from ember.measure.planner_eval import evaluate_planner, load_tasks
from ember.planner.base import PlanEvent, PlanningTask
from ember.testing import ScriptedPlanner
from ember.tools.demo import demo_catalog

from .conftest import ember, shared_file

SAMPLE = Path(__file__).parent / "data" / "tasks-sample.jsonl"


def test_vendored_scorer_is_the_task_sets_own() -> None:
    source = shared_file("planner-tasks/score_plans.py")
    vendored = Path(scoring.__file__).read_text().split("\n", 3)[3]
    assert vendored == source.read_text()


def oracle_script(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    catalog = {d.tool_name: d.to_json() for d in demo_catalog()}
    concrete = scoring.SelfTest(catalog).concretise
    return {t["request"]: Plan.from_json(concrete(t["expected"][0])) for t in tasks}


def test_an_oracle_scores_100_and_a_wrong_planner_0() -> None:
    tasks = load_tasks(SAMPLE)
    oracle = asyncio.run(
        evaluate_planner(
            ScriptedPlanner(oracle_script(tasks)), tasks, demo_catalog(), progress=lambda _: None
        )
    )
    assert oracle["accuracy"] == 1.0
    assert oracle["invalid"] == 0
    assert oracle["latency_s"]["plan"]["n"] == len(tasks)
    assert set(oracle["by_category"]) == {"single", "chain", "parallel", "files", "no-tool"}
    wrong = {
        t["request"]: Plan.from_json(
            {
                "steps": [
                    {
                        "id": 1,
                        "tool": "get_weather",
                        "args": {"city": "Nowhere", "date": "2026-03-03"},
                    }
                ]
            }
        )
        for t in tasks
    }
    scored = asyncio.run(
        evaluate_planner(ScriptedPlanner(wrong), tasks, demo_catalog(), progress=lambda _: None)
    )
    assert scored["accuracy"] == 0.0


class TypedAhead(ScriptedPlanner):
    """A scripted planner that can be typed ahead: it notes each request read before it is
    planned."""

    def __init__(self, script: dict[str, Plan]) -> None:
        super().__init__(script)
        self.read: list[str] = []
        self.planned: list[tuple[str, bool]] = []  # request, and whether it was read first

    def prefill(self, session_id: str, task: PlanningTask) -> int:
        self.read.append(task.request)
        return len(task.request)

    async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        self.planned.append((task.request, self.read[-1:] == [task.request]))
        async for event in super().plan(task):
            yield event


def test_typed_ahead_reads_each_request_before_it_is_submitted() -> None:
    tasks = load_tasks(SAMPLE)
    planner = TypedAhead(oracle_script(tasks))
    summary = asyncio.run(
        evaluate_planner(planner, tasks, demo_catalog(), progress=lambda _: None, typed_ahead=True)
    )
    assert planner.planned == [(t["request"], True) for t in tasks]
    assert summary["typed_ahead"] is True
    with_steps = sum(1 for plan in summary["predictions"].values() if plan["steps"])
    assert summary["latency_s"]["first_step"]["n"] == with_steps
    with pytest.raises(UserError, match="the scripted planner cannot read a request typed"):
        asyncio.run(
            evaluate_planner(
                ScriptedPlanner({}),
                tasks,
                demo_catalog(),
                progress=lambda _: None,
                typed_ahead=True,
            )
        )


def test_cli_eval_planner(tmp_path: Path) -> None:
    tasks = load_tasks(SAMPLE)
    script = tmp_path / "oracle.json"
    script.write_text(json.dumps({r: p.to_json() for r, p in oracle_script(tasks).items()}))
    done = ember(
        dict(os.environ),
        "eval",
        "planner",
        "--tasks",
        str(SAMPLE),
        "--planner",
        "scripted",
        "--script",
        str(script),
        "--json",
        "--predictions",
        str(tmp_path / "p.jsonl"),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["accuracy"] == 1.0
    assert summary["tasks"] == 5
    assert len((tmp_path / "p.jsonl").read_text().splitlines()) == 5
    bad = ember(dict(os.environ), "eval", "planner", "--tasks", str(tmp_path / "none.jsonl"))
    assert bad.returncode == 2
    assert "cannot read tasks" in bad.stderr
