"""`Runtime`: the thin facade that wires planner, tools, journal and telemetry for one run."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from datetime import date
from typing import Any

import msgspec

from ember.executor.answer import compose_answer
from ember.executor.executor import RunExecution
from ember.journal import Journal, RunDone, RunStarted, RunStatus, StepStatus
from ember.planner.base import Planner, PlanningTask
from ember.telemetry.latency import LatencyRecorder
from ember.tools.registry import ToolRegistry

__all__ = ["RunResult", "Runtime", "StepReport"]


class StepReport(msgspec.Struct, frozen=True):
    """One step of a finished run, as `ember run --json` prints it."""

    id: int
    tool: str
    args: dict[str, Any]
    result: Any
    status: StepStatus
    ms: float | None
    error: str | None = None


class RunResult(msgspec.Struct, frozen=True):
    """The outcome of a run: status, Markdown answer, every step, latency by layer (ms)."""

    run_id: str
    status: RunStatus
    answer: str
    steps: list[StepReport]
    latency_ms: dict[str, float]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


class Runtime:
    """Runs tasks: plan with `planner`, execute on `registry`'s tools, journal to `journal`."""

    def __init__(
        self,
        registry: ToolRegistry,
        planner: Planner,
        journal: Journal,
        *,
        clock: Callable[[], float] = time.perf_counter,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.registry = registry
        self.planner = planner
        self.journal = journal
        self.clock = clock
        self.wall = wall

    async def run(
        self, task: str, *, today: date | None = None, run_id: str | None = None
    ) -> RunResult:
        """Plan and execute `task`; every event is durable in the journal before this returns."""
        recorder = LatencyRecorder(self.clock)
        run_id = run_id or f"r-{uuid.uuid4().hex[:12]}"
        today = today or date.today()
        await self.journal.append(
            RunStarted(run_id, self.wall(), task, self.planner.name, today.isoformat())
        )
        execution = RunExecution(run_id, self.registry, self.journal, recorder, wall=self.wall)
        planning = PlanningTask(task, today, tuple(self.registry.descriptors()))
        try:
            await execution.execute(self.planner.plan(planning))
        except asyncio.CancelledError:
            await asyncio.shield(
                self.journal.append(
                    RunDone(
                        run_id,
                        self.wall(),
                        RunStatus.CANCELLED,
                        "",
                        "cancelled",
                        recorder.report(),
                        [],
                    )
                )
            )
            raise
        succeeded = execution.plan_error is None and all(
            state is StepStatus.SUCCEEDED for state in execution.status.values()
        )
        status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
        answer = compose_answer(
            task,
            steps=execution.steps,
            status=execution.status,
            results=execution.results,
            errors=execution.errors,
            plan_error=execution.plan_error,
        )
        error = None if succeeded else execution.plan_error or _first_error(execution)
        recorder.finish()
        latency = recorder.report()
        spans = [msgspec.to_builtins(span) for span in recorder.spans]
        await self.journal.append(
            RunDone(run_id, self.wall(), status, answer, error, latency, spans)
        )
        steps = [
            StepReport(
                step_id,
                step.tool,
                execution.resolved_args.get(step_id, step.args),
                execution.results.get(step_id),
                execution.status[step_id],
                execution.ms.get(step_id),
                execution.errors.get(step_id),
            )
            for step_id, step in sorted(execution.steps.items())
        ]
        return RunResult(run_id, status, answer, steps, latency, error)


def _first_error(execution: RunExecution) -> str | None:
    return next((execution.errors[i] for i in sorted(execution.errors)), None)
