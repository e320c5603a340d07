"""Run one plan as a graph: every step starts as soon as the steps it depends on have succeeded,
while the planner may still be writing later steps (LLMCompiler's streaming task fetching).

Each step: resolve references -> validate arguments -> `step.intent` durable -> call the tool
-> `step.done` / `step.failed` durable. A failed step never cancels unrelated branches; the
steps that depend on it are recorded as `step.skipped`, naming the step that failed.

Recovery (`recorded` is the folded state of an interrupted run): recorded steps must match what
is replayed (else `NondeterminismError`); finished steps are never run again, their results are
reused; a step with an intent but no outcome is re-dispatched with the same idempotency key if
its tool is idempotent, and otherwise becomes `in_doubt` until a person decides.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ember.errors import (
    ArgumentError,
    NondeterminismError,
    PlanError,
    PlannerError,
    ToolCallError,
)
from ember.executor.dag import Graph
from ember.journal import (
    Decision,
    Journal,
    PlanDone,
    PlanStep,
    RunState,
    StepDone,
    StepFailed,
    StepInDoubt,
    StepIntent,
    StepJob,
    StepSkipped,
    StepState,
    StepStatus,
    idempotency_key,
)
from ember.planner.base import FirstToken, PlanEvent
from ember.planner.check import check_reference_paths, check_step
from ember.planner.plan import Step, find_cycle, resolve
from ember.telemetry.latency import LatencyRecorder
from ember.tools.context import StepContext, _current
from ember.tools.descriptor import ExecutionMode
from ember.tools.registry import RegisteredTool, ToolRegistry
from ember.tools.transport import JobTransport, ToolResult

__all__ = ["RunExecution"]

_FINAL = (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED)


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
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        recorded: RunState | None = None,
    ) -> None:
        self.run_id = run_id
        self.registry = registry
        self.journal = journal
        self.recorder = recorder
        self.wall = wall
        self.sleep = sleep
        self.recorded = recorded
        self.catalogue = {d.tool_name: d for d in registry.descriptors()}
        self.steps: dict[int, Step] = {}
        self.graph = Graph()
        self.status: dict[int, StepStatus] = {}
        self.results: dict[int, Any] = {}
        self.resolved_args: dict[int, dict[str, Any]] = {}
        self.errors: dict[int, str] = {}
        self.ms: dict[int, float] = {}
        self.plan_error: str | None = None
        self.first_dispatch: float | None = None  # wall time the first tool call began
        self._group: asyncio.TaskGroup | None = None

    @property
    def in_doubt(self) -> list[int]:
        return sorted(i for i, s in self.status.items() if s is StepStatus.IN_DOUBT)

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
            if self.plan_error is None and not (self.recorded and self.recorded.plan_done):
                self.journal.append_soon(PlanDone(self.run_id, self.wall(), len(self.steps)))
            await self._close_plan()

    def _recorded(self, step: Step) -> StepState | None:
        """The journal's record of this step, if any; it must be the same step."""
        record = self.recorded.steps.get(step.id) if self.recorded else None
        if record is not None and (record.step.tool, record.step.args) != (step.tool, step.args):
            raise NondeterminismError(
                self.run_id,
                step.id,
                f"{record.step.tool} {record.step.args}",
                f"{step.tool} {step.args}",
            )
        return record

    async def _add(self, step: Step) -> None:
        if step.id in self.steps:
            raise PlanError(f"the plan has two steps with id {step.id}")
        record = self._recorded(step)
        self.steps[step.id] = step
        self.status[step.id] = StepStatus.PLANNED
        if record is None:
            self.journal.append_soon(PlanStep(self.run_id, self.wall(), step))
        try:
            deps = check_step(step, self.catalogue)
        except PlanError as exc:
            self._fail(step.id, str(exc), 0.0)
            return
        ready, skipped = self.graph.add(step.id, deps)
        if record is not None and record.status in _FINAL:
            self._restore(step.id, record)
            ready = [i for i in ready if i != step.id]
            more_ready, more_skipped = self.graph.finish(
                step.id, record.status is StepStatus.SUCCEEDED
            )
            ready, skipped = ready + more_ready, skipped + more_skipped
        self._apply(ready, skipped)

    def _restore(self, step_id: int, record: StepState) -> None:
        """Take a finished step's outcome from the journal instead of running it again."""
        self.status[step_id] = record.status
        if record.intent_args is not None:
            self.resolved_args[step_id] = record.intent_args
        if record.status is StepStatus.SUCCEEDED:
            self.results[step_id] = record.result
        if record.error is not None:
            self.errors[step_id] = record.error
        if record.ms is not None:
            self.ms[step_id] = record.ms

    async def _close_plan(self) -> None:
        """The plan is complete: fail steps that wait on missing steps or on a cycle."""
        for step_id, problem in check_reference_paths(self.steps, self.catalogue):
            if self.status[step_id] is StepStatus.PLANNED:
                self._fail(step_id, f"step {step_id} {problem}", 0.0)
        cycle = find_cycle([self.steps[i] for i in self.graph.waiting()])
        if cycle:
            text = " -> ".join(map(str, cycle))
            members = list(dict.fromkeys(cycle))
            for step_id in members:  # all of them fail; none is "skipped" because of another
                self.status[step_id] = StepStatus.FAILED
            for step_id in members:
                self._fail(step_id, f"steps {text} form a dependency cycle", 0.0)

    def _apply(self, ready: list[int], skipped: list[tuple[int, int]]) -> None:
        """Start the steps that became ready; record the ones that never can run."""
        assert self._group is not None
        for step_id in ready:
            self.status[step_id] = StepStatus.RUNNING
            self._group.create_task(self._run_step(self.steps[step_id]))
        for step_id, cause in skipped:
            if self.status[step_id] is not StepStatus.PLANNED:
                continue  # already failed or skipped on its own account
            self.status[step_id] = StepStatus.SKIPPED
            self.errors[step_id] = f"step {cause} ({self.steps[cause].tool}) did not succeed"
            self.journal.append_soon(
                StepSkipped(self.run_id, self.wall(), step_id, self.errors[step_id])
            )

    async def _run_step(self, step: Step) -> None:
        clock = self.recorder.clock
        started = clock()
        persist = 0.0
        self_s = 0.0
        record = self.recorded.steps.get(step.id) if self.recorded else None
        try:
            args = resolve(step.args, self.results)
            self.resolved_args[step.id] = args
            registered = self.registry.get(step.tool)
            registered.validate(args)
            key = idempotency_key(self.run_id, step.id, step.tool, args)
            if record is not None and record.intent_args is not None:  # interrupted mid-call
                if record.intent_args != args:
                    raise NondeterminismError(
                        self.run_id,
                        step.id,
                        f"{step.tool} called with {record.intent_args}",
                        f"{step.tool} called with {args}",
                    )
                if not await self._may_redispatch(step, registered, record):
                    self.recorder.step(step.id, step.tool, started, 0.0, 0.0)
                    return
                intent_at = record.intent_at or self.wall()
            else:
                mark = clock()
                intent_at = self.wall()
                await self.journal.append(
                    StepIntent(self.run_id, intent_at, step.id, step.tool, args, key)
                )
                persist += self.recorder.persisted(mark)
            if self.first_dispatch is None:
                self.first_dispatch = self.wall()
            context = StepContext(self.run_id, step.id, key, intent_at, self.wall, self.sleep)
            outcome, job_persist = await self._call(step, registered, args, context, record)
            persist += job_persist
            self_s = outcome.self_s
        except ArgumentError as exc:
            detail = f"{exc.argument}={exc.value!r}" if exc.argument else "its arguments"
            error = (
                f"step {step.id} of run {self.run_id} called {step.tool} with {detail}: "
                f"{exc.detail} (rule {exc.rule!r})"
            )
            self._fail(step.id, error, (clock() - started) * 1000)
        except (PlanError, ToolCallError) as exc:
            error = f"step {step.id} ({step.tool}) failed: {exc}"
            self._fail(step.id, error, (clock() - started) * 1000)
        else:
            self._succeed(step.id, outcome, (clock() - started) * 1000)
        self.recorder.step(step.id, step.tool, started, self_s, persist)

    async def _may_redispatch(
        self, step: Step, registered: RegisteredTool, record: StepState
    ) -> bool:
        """For a step interrupted mid-call: apply a person's decision, re-dispatch an
        idempotent tool, or hold a non-idempotent one in doubt. True: call it again."""
        if record.decision is Decision.FAIL:
            self._fail(step.id, f"step {step.id} ({step.tool}) failed by decision", 0.0)
            return False
        if record.decision is Decision.SKIP:
            self._succeed(step.id, ToolResult(None, 0.0), 0.0)
            return False
        if record.decision is Decision.RETRY or registered.descriptor.idempotent:
            return True
        self.status[step.id] = StepStatus.IN_DOUBT
        self.errors[step.id] = (
            f"step {step.id} ({step.tool}) was interrupted after its intent was recorded and "
            f"{step.tool} is not idempotent: it may or may not have happened. Decide with "
            f"`ember runs resolve {self.run_id} {step.id} --retry|--skip|--fail`"
        )
        if record.status is not StepStatus.IN_DOUBT:
            self.journal.append_soon(
                StepInDoubt(self.run_id, self.wall(), step.id, self.errors[step.id])
            )
        return False

    async def _call(
        self,
        step: Step,
        registered: RegisteredTool,
        args: dict[str, Any],
        context: StepContext,
        record: StepState | None,
    ) -> tuple[ToolResult, float]:
        """Call the tool within its step context; an async tool goes through its job handle."""
        token = _current.set(context)
        persist = 0.0
        try:
            transport = registered.transport
            is_job = registered.descriptor.execution_mode == ExecutionMode.ASYNC
            if not (is_job and isinstance(transport, JobTransport)):
                return await transport.call(
                    step.tool, args, idempotency_key=context.idempotency_key
                ), 0.0
            handle = record.job if record is not None else None
            if handle is None:
                handle = await transport.submit(
                    step.tool, args, idempotency_key=context.idempotency_key
                )
                mark = self.recorder.clock()
                await self.journal.append(StepJob(self.run_id, self.wall(), step.id, handle))
                persist = self.recorder.persisted(mark)
            return await transport.wait(step.tool, handle), persist
        finally:
            _current.reset(token)

    def _succeed(self, step_id: int, outcome: ToolResult, ms: float) -> None:
        """Record a step's result and start what it unblocked. The `step.done` record is queued
        after those steps are started, so it commits together with their intents (one commit a
        step in a chain); nothing waits for it, since the step's intent is already durable."""
        self.results[step_id] = outcome.value
        self.status[step_id] = StepStatus.SUCCEEDED
        self.ms[step_id] = ms
        self._apply(*self.graph.finish(step_id, True))
        self.journal.append_soon(
            StepDone(self.run_id, self.wall(), step_id, outcome.value, ms, outcome.self_s * 1000)
        )

    def _fail(self, step_id: int, error: str, ms: float) -> None:
        """Record a failed step (queued, as `step.done` is) and skip what depended on it."""
        self.status[step_id] = StepStatus.FAILED
        self.errors[step_id] = error
        self.ms[step_id] = ms
        self.journal.append_soon(StepFailed(self.run_id, self.wall(), step_id, error, ms))
        self._apply(*self.graph.finish(step_id, False))
