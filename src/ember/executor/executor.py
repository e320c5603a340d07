"""Run one plan as a graph: every step starts as soon as the steps it depends on have succeeded,
while the planner may still be writing later steps (LLMCompiler's streaming task fetching).

Each step: resolve references -> validate arguments -> `step.intent` durable -> call the tool
-> `step.done` / `step.failed` durable. A failed step never cancels unrelated branches; the
steps that depend on it are recorded as `step.skipped`, naming the step that failed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ember.errors import ArgumentError, PlanError, PlannerError, ToolCallError
from ember.executor.dag import Graph
from ember.journal import (
    Journal,
    PlanStep,
    StepDone,
    StepFailed,
    StepIntent,
    StepSkipped,
    StepStatus,
    idempotency_key,
)
from ember.planner.base import FirstToken, PlanEvent
from ember.planner.check import check_reference_paths, check_step
from ember.planner.plan import Step, dependencies, find_cycle, resolve
from ember.telemetry.latency import LatencyRecorder
from ember.tools.registry import ToolRegistry

__all__ = ["RunExecution"]


class RunExecution:
    """The mutable state of one run while it executes. Use `execute` once."""

    def __init__(
        self,
        run_id: str,
        registry: ToolRegistry,
        journal: Journal,
        recorder: LatencyRecorder,
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.run_id = run_id
        self.registry = registry
        self.journal = journal
        self.recorder = recorder
        self.wall = wall
        self.catalogue = {d.tool_name: d for d in registry.descriptors()}
        self.steps: dict[int, Step] = {}
        self.graph = Graph()
        self.status: dict[int, StepStatus] = {}
        self.results: dict[int, Any] = {}
        self.resolved_args: dict[int, dict[str, Any]] = {}
        self.errors: dict[int, str] = {}
        self.ms: dict[int, float] = {}
        self.plan_error: str | None = None
        self._group: asyncio.TaskGroup | None = None

    async def execute(self, plan: AsyncIterator[PlanEvent]) -> None:
        """Consume the planner's stream and run every step that can run."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                async for item in plan:
                    if isinstance(item, FirstToken):
                        self.recorder.first_token()
                    else:
                        await self._add(item)
            except (PlanError, PlannerError) as exc:  # steps already running still finish
                self.plan_error = str(exc)
            finally:
                self.recorder.plan_done()
            await self._close_plan()

    async def _add(self, step: Step) -> None:
        if step.id in self.steps:
            raise PlanError(f"the plan has two steps with id {step.id}")
        self.steps[step.id] = step
        self.status[step.id] = StepStatus.PLANNED
        await self.journal.append(PlanStep(self.run_id, self.wall(), step))
        try:
            check_step(step, self.catalogue)
        except PlanError as exc:
            await self._reject(step.id, str(exc))
            return
        await self._apply(*self.graph.add(step.id, dependencies(step)))

    async def _close_plan(self) -> None:
        """The plan is complete: fail steps that wait on missing steps or on a cycle."""
        for step_id, problem in check_reference_paths(self.steps, self.catalogue):
            if self.status[step_id] is StepStatus.PLANNED:
                await self._reject(step_id, f"step {step_id} {problem}")
        waiting = [self.steps[i] for i in self.graph.waiting()]
        cycle = find_cycle(waiting)
        if cycle:
            text = " -> ".join(map(str, cycle))
            members = list(dict.fromkeys(cycle))
            for step_id in members:  # all of them fail; none is "skipped" because of another
                await self._fail(step_id, f"steps {text} form a dependency cycle", 0.0)
            for step_id in members:
                await self._apply(*self.graph.finish(step_id, False))

    async def _apply(self, ready: list[int], skipped: list[tuple[int, int]]) -> None:
        """Start the steps that became ready; record the ones that never can run."""
        assert self._group is not None
        for step_id in ready:
            self.status[step_id] = StepStatus.RUNNING
            self._group.create_task(self._run_step(self.steps[step_id]))
        for step_id, cause in skipped:
            if self.status[step_id] is not StepStatus.PLANNED:
                continue  # already failed on its own account (a cycle member)
            self.status[step_id] = StepStatus.SKIPPED
            self.errors[step_id] = f"step {cause} ({self.steps[cause].tool}) did not succeed"
            await self.journal.append(
                StepSkipped(self.run_id, self.wall(), step_id, self.errors[step_id])
            )

    async def _run_step(self, step: Step) -> None:
        clock = self.recorder.clock
        started = clock()
        persist = 0.0
        self_s = 0.0
        try:
            args = resolve(step.args, self.results)
            self.resolved_args[step.id] = args
            registered = self.registry.get(step.tool)
            registered.validate(args)
            key = idempotency_key(self.run_id, step.id, step.tool, args)
            mark = clock()
            await self.journal.append(
                StepIntent(self.run_id, self.wall(), step.id, step.tool, args, key)
            )
            persist += self.recorder.persisted(mark)
            outcome = await registered.transport.call(step.tool, args, idempotency_key=key)
            self_s = outcome.self_s
        except ArgumentError as exc:
            detail = f"{exc.argument}={exc.value!r}" if exc.argument else "its arguments"
            error = (
                f"step {step.id} of run {self.run_id} called {step.tool} with {detail}: "
                f"{exc.detail} (rule {exc.rule!r})"
            )
            persist += await self._fail(step.id, error, (clock() - started) * 1000)
        except (PlanError, ToolCallError) as exc:
            persist += await self._fail(
                step.id, f"step {step.id} ({step.tool}) failed: {exc}", (clock() - started) * 1000
            )
        else:
            ms = (clock() - started) * 1000
            self.results[step.id] = outcome.value
            self.status[step.id] = StepStatus.SUCCEEDED
            self.ms[step.id] = ms
            mark = clock()
            await self.journal.append(
                StepDone(self.run_id, self.wall(), step.id, outcome.value, ms, self_s * 1000)
            )
            persist += self.recorder.persisted(mark)
        self.recorder.step(step.id, step.tool, started, self_s, persist)
        await self._apply(*self.graph.finish(step.id, self.status[step.id] is StepStatus.SUCCEEDED))

    async def _fail(self, step_id: int, error: str, ms: float) -> float:
        """Record a failed step; returns the seconds spent waiting for the journal."""
        self.status[step_id] = StepStatus.FAILED
        self.errors[step_id] = error
        self.ms[step_id] = ms
        mark = self.recorder.clock()
        await self.journal.append(StepFailed(self.run_id, self.wall(), step_id, error, ms))
        return self.recorder.persisted(mark)

    async def _reject(self, step_id: int, error: str) -> None:
        """Fail a step that never ran (a plan error), and whatever waits on it."""
        await self._fail(step_id, error, 0.0)
        await self._apply(*self.graph.finish(step_id, False))
