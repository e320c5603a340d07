"""`ember eval planner`: run a planner over a task set and score it with the task set's scorer.

Each task's request goes through the planner only (no tool runs). The plans are scored by
`ember.measure.scoring`, a verbatim copy of the task set's `score_plans.py`, and the report adds
the planner's latency: time to first token and time to the whole plan, median and p90.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import msgspec

from ember.errors import PlanError, PlannerError, UserError
from ember.measure import scoring
from ember.plan import Step
from ember.planner.base import FirstToken, Planner, PlanningTask, PlanStats, Prefills
from ember.tools.descriptor import ToolDescriptor

__all__ = ["evaluate_planner", "latency_summary", "load_tasks", "plan_timed"]


def load_tasks(path: Path | str) -> list[dict[str, Any]]:
    """Read a task file (one JSON object a line), naming the bad line on failure."""
    tasks = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"cannot read tasks {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            task = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{number}: not JSON: {exc.msg}") from None
        missing = {"id", "request", "today"} - set(task)
        if missing:
            raise UserError(f"{path}:{number}: the task lacks {', '.join(sorted(missing))}")
        tasks.append(task)
    return tasks


async def evaluate_planner(
    planner: Planner,
    tasks: list[dict[str, Any]],
    catalogue: list[ToolDescriptor],
    *,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
    typed_ahead: bool = False,
) -> dict[str, Any]:
    """Plan every task, score the plans, and time the planner. With `typed_ahead` (a planner
    that `Prefills`), each request is read into the model before it is submitted, as a front
    end that sent it while the user typed would have it: times are from submit."""
    if typed_ahead and not isinstance(planner, Prefills):
        raise UserError(f"the {planner.name} planner cannot read a request typed ahead")
    predictions: dict[str, Any] = {}
    ttft: list[float] = []
    plan_s: list[float] = []
    first_step: list[float] = []
    failures: dict[str, str] = {}
    margins: dict[str, float | None] = {}
    passes: dict[str, int | None] = {}
    end_margins: dict[str, list[float]] = {}
    for index, task in enumerate(tasks, start=1):
        planning = PlanningTask(
            task["request"], date.fromisoformat(task["today"]), tuple(catalogue)
        )
        if typed_ahead:
            assert isinstance(planner, Prefills)
            await asyncio.to_thread(planner.prefill, "eval", planning)
        try:
            steps = await plan_timed(planner, planning, ttft, plan_s, first_step)
            predictions[task["id"]] = {"steps": [_plain(s) for s in steps]}
        except (PlannerError, PlanError) as exc:
            failures[task["id"]] = str(exc)
            steps = []
        if isinstance(planner, PlanStats):
            margins[task["id"]] = planner.last_margin
            passes[task["id"]] = planner.last_passes
            end_margins[task["id"]] = [round(m, 3) for m in planner.last_end_margins]
        progress(f"  {index}/{len(tasks)} {task['id']}: {len(steps)} step(s) in {plan_s[-1]:.2f} s")
    catalog = {d.tool_name: d.to_json() for d in catalogue}
    summary = scoring.score(tasks, predictions, catalog)
    summary["planner"] = planner.name
    summary["planner_errors"] = failures
    summary["latency_s"] = latency_summary(ttft, plan_s) | {"first_step": _stats(first_step)}
    summary["typed_ahead"] = typed_ahead
    summary["predictions"] = predictions
    if margins:  # the embedded planner's first-choice margins: to set its abstain band by
        summary["first_choice_margin"] = margins
    if end_margins:  # after each step, how much the model wanted another over `done`
        summary["end_margins"] = end_margins
    if passes:  # model passes after the request, per task, and their median and p90
        summary["model_passes"] = passes
        summary["passes"] = _stats([float(n) for n in passes.values() if n is not None])
    return summary


async def plan_timed(
    planner: Planner,
    task: PlanningTask,
    ttft: list[float],
    plan_s: list[float],
    first_step: list[float] | None = None,
) -> list[Step]:
    """Plan `task`; append its time to first token and to the whole plan (also on failure),
    and to `first_step` the time its first step was complete (when it has one: the executor
    starts a step as soon as it arrives)."""
    start = time.perf_counter()
    steps: list[Step] = []
    try:
        async for item in planner.plan(task):
            if isinstance(item, FirstToken):
                ttft.append(time.perf_counter() - start)
            else:
                if not steps and first_step is not None:
                    first_step.append(time.perf_counter() - start)
                steps.append(item)
    finally:
        plan_s.append(time.perf_counter() - start)
    return steps


def latency_summary(ttft: list[float], plan_s: list[float]) -> dict[str, Any]:
    """Median and p90 of the times to first token and to whole plans, in seconds."""
    return {"ttft": _stats(ttft), "plan": _stats(plan_s)}


def _stats(samples: list[float]) -> dict[str, float | None]:
    if not samples:
        return {"median": None, "p90": None, "n": 0}
    ordered = sorted(samples)
    return {
        "median": round(statistics.median(ordered), 3),
        "p90": round(ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))], 3),
        "n": len(ordered),
    }


def _plain(step: Step) -> dict[str, Any]:
    """A step as the task set's plan format has it (no `each` unless it runs over a list)."""
    data: dict[str, Any] = msgspec.to_builtins(step)
    if step.each is None:
        del data["each"]
    return data
