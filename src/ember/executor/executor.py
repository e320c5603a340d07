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
import contextvars
import functools
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

from ember.errors import (
    ArgumentError,
    NondeterminismError,
    PlanError,
    PlannerError,
    ToolCallError,
)
from ember.executor.dag import Graph
from ember.executor.resilience import ExecutionSettings, call_with_retries
from ember.journal import (
    Decision,
    Journal,
    PlanDone,
    PlanStep,
    RunState,
    StepAwaitingApproval,
    StepDone,
    StepFailed,
    StepInDoubt,
    StepIntent,
    StepJob,
    StepRetrying,
    StepSkipped,
    StepState,
    StepStatus,
    canonical_args,
    idempotency_key,
)
from ember.planner.base import FirstToken, PlanEvent
from ember.planner.check import check_reference_paths, check_step
from ember.planner.plan import Step, find_cycle, resolve
from ember.telemetry.latency import LatencyRecorder
from ember.tools.context import StepContext, _current, trace_id
from ember.tools.descriptor import ExecutionMode, Risk
from ember.tools.registry import RegisteredTool, ToolRegistry
from ember.tools.transport import JobTransport, ToolResult

__all__ = ["RunExecution"]

_FINAL = (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED)
# In a step's task: the execution it belongs to, and where `_apply` leaves the step that task
# runs next (a run started inside a tool call has its own execution: it must not use the slot).
_then: contextvars.ContextVar[tuple[object, list[Step]] | None] = contextvars.ContextVar(
    "then", default=None
)
_WAITING = (StepStatus.IN_DOUBT, StepStatus.AWAITING_APPROVAL)


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
        settings: ExecutionSettings | None = None,
        pool: Executor | None = None,
        rng: random.Random | None = None,
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
        self.settings = settings or ExecutionSettings()
        self.pool = pool
        self.rng = rng or random.Random()
        self.superseded: set[int] = set(recorded.superseded) if recorded else set()
        self.replans = recorded.replans if recorded else 0
        self._limit = asyncio.Semaphore(self.settings.max_concurrency)
        self._tool_limits = {
            tool: asyncio.Semaphore(n) for tool, n in self.settings.tool_limits.items()
        }
        self._calls: dict[tuple[str, bytes], asyncio.Future[ToolResult]] = {}  # duplicate guard
        self._trace_id = trace_id(run_id)
        recorder.trace_id = self._trace_id
        self._group: asyncio.TaskGroup | None = None

    @property
    def waiting(self) -> list[int]:
        """Steps waiting for a person: in doubt, or awaiting approval."""
        return sorted(i for i, s in self.status.items() if s in _WAITING)

    @property
    def succeeded(self) -> bool:
        """No planning error, and every step of the current plan succeeded."""
        return self.plan_error is None and all(
            state is StepStatus.SUCCEEDED
            for step_id, state in self.status.items()
            if step_id not in self.superseded
        )

    async def execute(self, plan: AsyncIterator[PlanEvent]) -> None:
        """Consume the planner's stream and run every step that can run. Called again with a
        new plan when the run is replanned; the state carries over."""
        self.plan_error = None
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
            if record.intent_args is not None:  # duplicates of it share it after a restart too
                future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
                future.set_result(ToolResult(record.result, 0.0))
                self._calls.setdefault(_call_key(record.step.tool, record.intent_args), future)
        if record.error is not None:
            self.errors[step_id] = record.error
        if record.ms is not None:
            self.ms[step_id] = record.ms

    async def _close_plan(self) -> None:
        """The plan is complete: fail steps that wait on missing steps or on a cycle."""
        for step_id, problem in check_reference_paths(self.steps, self.catalogue):
            if self.status[step_id] is StepStatus.PLANNED:
                self._fail(step_id, f"step {step_id} {problem}", 0.0)
        cycle = find_cycle(self.graph.waiting())  # what still waits: where a cycle is
        if cycle:
            text = " -> ".join(map(str, cycle))
            members = list(dict.fromkeys(cycle))
            for step_id in members:  # all of them fail; none is "skipped" because of another
                self.status[step_id] = StepStatus.FAILED
            for step_id in members:
                self._fail(step_id, f"steps {text} form a dependency cycle", 0.0)

    def _apply(self, ready: list[int], skipped: list[tuple[int, int]]) -> None:
        """Start the steps that became ready; record the ones that never can run. Inside a
        step's task, the first ready step runs next in that same task (a chain costs no task
        per step); the others get tasks of their own."""
        assert self._group is not None
        slot = _then.get()
        then = slot[1] if slot is not None and slot[0] is self else None
        for step_id in ready:
            self.status[step_id] = StepStatus.RUNNING
            if then is not None and not then:
                then.append(self.steps[step_id])
            else:
                self._group.create_task(self._run_steps(self.steps[step_id]))
        for step_id, cause in skipped:
            if self.status[step_id] is not StepStatus.PLANNED:
                continue  # already failed or skipped on its own account
            self.status[step_id] = StepStatus.SKIPPED
            self.errors[step_id] = f"step {cause} ({self.steps[cause].tool}) did not succeed"
            self.journal.append_soon(
                StepSkipped(self.run_id, self.wall(), step_id, self.errors[step_id])
            )

    async def _run_steps(self, step: Step) -> None:
        """Run `step`, then each step that its end made ready to run next (see `_apply`). The
        loop yields to other tasks wherever a step awaits (a durable append, a tool's I/O), as
        a task per step did; in-memory steps of inline tools run back to back."""
        then: list[Step] = []
        _then.set((self, then))
        while True:
            await self._run_step(step)
            if not then:
                return
            step = then.pop()

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
            if not self._approved(step, registered, args, record):
                self.recorder.step(step.id, step.tool, started, 0.0, 0.0)
                return
            call = _call_key(step.tool, args)
            shared = self._calls.get(call)
            if shared is not None:  # the same call is in this plan already: run it once
                outcome = await asyncio.shield(shared)
            else:
                called, persist = await self._call_once(step, registered, args, call, record)
                if called is None:
                    self.recorder.step(step.id, step.tool, started, 0.0, 0.0)
                    return
                outcome = called
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

    async def _call_once(
        self,
        step: Step,
        registered: RegisteredTool,
        args: dict[str, Any],
        call: tuple[str, bytes],
        record: StepState | None,
    ) -> tuple[ToolResult | None, float]:
        """Intent, then the call, registered under `call` (`_call_key`) so that duplicates
        share it. (None: not called.)"""
        clock = self.recorder.clock
        persist = 0.0
        key = idempotency_key(self.run_id, step.id, step.tool, args, call[1])
        if record is not None and record.intent_args is not None:  # interrupted mid-call
            if record.intent_args != args:
                raise NondeterminismError(
                    self.run_id,
                    step.id,
                    f"{step.tool} called with {record.intent_args}",
                    f"{step.tool} called with {args}",
                )
            if not await self._may_redispatch(step, registered, record):
                return None, 0.0
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
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        self._calls[call] = future
        context = StepContext(
            self.run_id,
            step.id,
            key,
            intent_at,
            self.wall,
            self.sleep,
            self.pool,
            f"00-{self._trace_id}-{step.id:016x}-01",
        )
        try:
            outcome, job_persist = await self._call(step, registered, args, context, record)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: duplicates see it through their own await
            raise
        future.set_result(outcome)
        return outcome, persist + job_persist

    def _approved(
        self,
        step: Step,
        registered: RegisteredTool,
        args: dict[str, Any],
        record: StepState | None,
    ) -> bool:
        """High-risk tools need a person's approval, journaled, before their intent."""
        if registered.descriptor.risk != Risk.HIGH:
            return True
        decision = record.decision if record is not None else None
        if decision is Decision.APPROVE:
            return True
        if decision is Decision.DENY:
            self._fail(step.id, f"step {step.id} ({step.tool}) was denied approval", 0.0)
            return False
        self.status[step.id] = StepStatus.AWAITING_APPROVAL
        self.errors[step.id] = (
            f"step {step.id} ({step.tool}) is high-risk and waits for approval: "
            f"`ember runs resolve {self.run_id} {step.id} --approve|--deny`"
        )
        if record is None or record.status is not StepStatus.AWAITING_APPROVAL:
            self.journal.append_soon(
                StepAwaitingApproval(self.run_id, self.wall(), step.id, step.tool, args)
            )
        return False

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
        """Call the tool within its step context, under the concurrency limits, the timeout and
        the retry policy; an async tool goes through its job handle."""
        token = _current.set(context)
        persist = 0.0
        try:
            descriptor = registered.descriptor
            transport = registered.transport
            op: Callable[[], Awaitable[ToolResult]]
            if descriptor.execution_mode == ExecutionMode.ASYNC and isinstance(
                transport, JobTransport
            ):
                handle = record.job if record is not None else None
                if handle is None:
                    handle = await transport.submit(
                        step.tool, args, idempotency_key=context.idempotency_key
                    )
                    mark = self.recorder.clock()
                    await self.journal.append(StepJob(self.run_id, self.wall(), step.id, handle))
                    persist = self.recorder.persisted(mark)
                job = handle
                op = functools.partial(transport.wait, step.tool, job)
            else:
                op = functools.partial(
                    transport.call, step.tool, args, idempotency_key=context.idempotency_key
                )
            limit = self._tool_limits.get(step.tool)
            async with self._limit:
                if limit is None:
                    return await self._attempts(step, registered, op), persist
                async with limit:
                    return await self._attempts(step, registered, op), persist
        finally:
            _current.reset(token)

    async def _attempts(
        self, step: Step, registered: RegisteredTool, op: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        descriptor = registered.descriptor
        # An inline function blocks the loop until it returns: no timer could interrupt it.
        inline = getattr(registered.transport, "inline", False)
        timeout_s = None if inline else descriptor.timeout_s or self.settings.default_timeout_s

        def retrying(attempt: int, error: str, delay: float) -> None:
            self.journal.append_soon(
                StepRetrying(self.run_id, self.wall(), step.id, attempt, error, delay)
            )

        return await call_with_retries(
            op,
            tool=step.tool,
            timeout_s=timeout_s,
            retry=self.settings.retry,
            retry_timeouts=descriptor.idempotent,
            sleep=self.sleep,
            rng=self.rng,
            on_retry=retrying,
        )

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


def _call_key(tool: str, args: dict[str, Any]) -> tuple[str, bytes]:
    return tool, canonical_args(args)
