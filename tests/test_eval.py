"""`ember eval planner`: the scorer is the task set's own, and the wiring is proven by an oracle
planner (100 %) and a wrong one (0 %)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from ember import Plan
from ember.measure import scoring
from ember.measure.planner_eval import evaluate_planner, load_tasks
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
