"""Run one plan as a graph: every step starts as soon as the steps it depends on have succeeded,
while the planner may still be writing later steps (LLMCompiler's streaming task fetching).

Each step: resolve references -> validate arguments -> ask the policy (`ember.policy.decide`)
-> `step.intent` durable -> call the tool -> `step.done` / `step.failed` durable. A failed step
never cancels unrelated branches; the steps that depend on it are recorded as `step.skipped`,
naming the step that failed.

Recovery (`recorded` is the folded state of an interrupted run): recorded steps must match what
is replayed (else `NondeterminismError`); finished steps are never run again, their results are
reused; a step with an intent but no outcome goes back to the policy, which re-dispatches it
with the same idempotency key if its tool is idempotent and otherwise holds it in doubt until a
person decides.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor
from typing import Any

import msgspec

from ember.errors import (
    ArgumentError,
    NondeterminismError,
    PlanError,
    PlannerError,
    PolicyChangedError,
    ToolCallError,
)
from ember.executor.calls import Dispatcher
from ember.executor.dag import Graph
from ember.executor.items import ItemOutcome, WithItem, combine
from ember.executor.resilience import ExecutionSettings
from ember.executor.steps import FINAL, WAITING, Outcome, StepRun
from ember.journal import (
    Decision,
    Journal,
    PlanDone,
    PlanStep,
    RunState,
    StepAwaitingApproval,
    StepDenied,
    StepDone,
    StepFailed,
    StepInDoubt,
    StepIntent,
    StepSkipped,
    StepState,
    StepStatus,
    idempotency_key,
)
from ember.plan import Step, canonical_args, each_items, find_cycle, resolve
from ember.planner.base import FirstToken, PlanEvent
from ember.policy import CallContext, Ruling, Verdict, decide
from ember.policy.control import ControlPlane
from ember.telemetry.latency import LatencyRecorder
from ember.telemetry.trace import traceparent
from ember.tools.check import check_reference_paths, check_step
from ember.tools.context import StepContext
from ember.tools.registry import RegisteredTool, ToolRegistry
from ember.tools.transport import ToolResult

__all__ = ["RunExecution"]

# In a step's task: the execution it belongs to, and where `_apply` leaves the step that task
# runs next (a run started inside a tool call has its own execution: it must not use the slot).
_then: contextvars.ContextVar[tuple[object, list[Step]] | None] = contextvars.ContextVar(
    "then", default=None
)
_CallKey = tuple[str, bytes]  # a tool and its canonical arguments: what identifies a call


class RunExecution:
    """One run while it executes: a `StepRun` per step, the dependency graph, the calls in
    flight. `execute` runs a plan and returns the `Outcome`; it is called again, with the state
    carried over, when the run is planned again."""

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
        control: ControlPlane | None = None,
        principal: str = "",
    ) -> None:
        self.run_id = run_id
        self.control = control
        self.principal = principal
        self.registry = registry
        self.journal = journal
        self.recorder = recorder
        self.wall = wall
        self.sleep = sleep
        self.pool = pool
        self.recorded = recorded
        self.catalogue = {d.tool_name: d for d in registry.descriptors()}
        self.steps: dict[int, StepRun] = {}
        self.graph = Graph()
        self.plan_error: str | None = None
        self.first_dispatch: float | None = None  # wall time the first tool call began
        self.replans = recorded.replans if recorded else 0
        # Steps refused by the policy or by a person (an approval denied): no round plans
        # around them (`ember.executor.rounds`).
        self.refused: set[int] = {
            step_id
            for step_id, state in (recorded.steps.items() if recorded else ())
            if state.refused or state.decision is Decision.DENY
        }
        self._superseded = set(recorded.superseded) if recorded else set()
        self._aside: list[int] = []  # set aside, for the next planned step's record
        self._dispatcher = Dispatcher(
            run_id,
            journal,
            recorder,
            settings or ExecutionSettings(),
            wall=wall,
            sleep=sleep,
            rng=rng or random.Random(),
        )
        self._calls: dict[_CallKey, asyncio.Future[ToolResult]] = {}  # duplicate guard
        self._results = _Results(self.steps)
        self._first_call = CallContext(run_id)  # a call the journal knows nothing about yet
        self._group: asyncio.TaskGroup | None = None

    def outcome(self) -> Outcome:
        """Where the run stands: every step, and whether the current plan succeeded."""
        current = [run for run in self.steps.values() if not run.superseded]
        return Outcome(
            steps=[self.steps[i].report() for i in sorted(self.steps)],
            plan_error=self.plan_error,
            succeeded=self.plan_error is None
            and all(run.status is StepStatus.SUCCEEDED for run in current),
            waiting=sorted(i for i, run in self.steps.items() if run.status in WAITING),
            replans=self.replans,
            first_dispatch=self.first_dispatch,
        )

    def supersede(self) -> list[int]:
        """Before a replan: the current plan's steps no longer decide the run; their ids."""
        current = [i for i, run in self.steps.items() if not run.superseded]
        for step_id in current:  # recorded by `plan.replanned`
            self.steps[step_id].superseded = True
        self.replans += 1
        return current

    def set_aside(self, step_ids: Iterable[int], aside: bool = True) -> None:
        """These steps no longer decide the run (steps planned after them take their place:
        the next step planned records them, `PlanStep.supersedes`); with `aside` False, they
        do again (nothing took their place)."""
        ids = list(step_ids)
        for step_id in ids:
            self.steps[step_id].superseded = aside
        self._aside = ids if aside else []

    async def execute(self, plan: AsyncIterator[PlanEvent]) -> Outcome:
        """Consume the planner's stream and run every step that can run."""
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
            self._close_plan()
        return self.outcome()

    def record_cancelled(self) -> None:
        """After a cancellation: record the final state of every step still going."""
        for step_id, run in sorted(self.steps.items()):
            if run.status is StepStatus.RUNNING:
                error = "cancelled while running: the call may or may not have happened"
                self.journal.append_soon(StepFailed(self.run_id, self.wall(), step_id, error, 0.0))
            elif run.status is StepStatus.PLANNED:
                self.journal.append_soon(
                    StepSkipped(self.run_id, self.wall(), step_id, "the run was cancelled")
                )

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
        self.steps[step.id] = StepRun(step, superseded=step.id in self._superseded)
        if record is None:
            self.journal.append_soon(PlanStep(self.run_id, self.wall(), step, self._aside))
            self._aside = []
        try:
            deps = check_step(step, self.catalogue)
        except PlanError as exc:
            self._fail(step.id, str(exc), 0.0)
            return
        ready, skipped = self.graph.add(step.id, deps)
        if record is not None and record.status in FINAL:
            self._restore(self.steps[step.id], record)
            ready = [i for i in ready if i != step.id]
            more_ready, more_skipped = self.graph.finish(
                step.id, record.status is StepStatus.SUCCEEDED
            )
            ready, skipped = ready + more_ready, skipped + more_skipped
        self._apply(ready, skipped)

    def _restore(self, run: StepRun, record: StepState) -> None:
        """Take a finished step's outcome from the journal instead of running it again."""
        run.status, run.args, run.error, run.ms = (
            record.status,
            record.intent_args,
            record.error,
            record.ms,
        )
        if record.status is StepStatus.SUCCEEDED:
            run.result = record.result
            if record.intent_args is not None:  # duplicates of it share it after a restart too
                future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
                future.set_result(ToolResult(record.result, 0.0))
                self._calls.setdefault(_call_key(record.step.tool, record.intent_args), future)

    def _close_plan(self) -> None:
        """The plan is complete: fail steps that wait on missing steps or on a cycle."""
        plan = {step_id: run.step for step_id, run in self.steps.items()}
        for step_id, problem in check_reference_paths(plan, self.catalogue):
            if self.steps[step_id].status is StepStatus.PLANNED:
                self._fail(step_id, f"step {step_id} {problem}", 0.0)
        cycle = find_cycle(self.graph.waiting())  # what still waits: where a cycle is
        if cycle:
            text = " -> ".join(map(str, cycle))
            members = list(dict.fromkeys(cycle))
            for step_id in members:  # all of them fail; none is "skipped" because of another
                self.steps[step_id].status = StepStatus.FAILED
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
            run = self.steps[step_id]
            run.status = StepStatus.RUNNING
            if then is not None and not then:
                then.append(run.step)
            else:
                self._group.create_task(self._run_steps(run.step))
        for step_id, cause in skipped:
            run = self.steps[step_id]
            if run.status is not StepStatus.PLANNED:
                continue  # already failed or skipped on its own account
            run.status = StepStatus.SKIPPED
            run.error = f"step {cause} ({self.steps[cause].step.tool}) did not succeed"
            self.journal.append_soon(StepSkipped(self.run_id, self.wall(), step_id, run.error))

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
        if step.each is not None:
            await self._run_each(step)
            return
        clock = self.recorder.clock
        started = clock()
        persist = self_s = 0.0
        record = self.recorded.steps.get(step.id) if self.recorded else None
        try:
            args = self.steps[step.id].args = resolve(step.args, self._results)
            registered = self.registry.get(step.tool)
            registered.validate(args)
            interrupted = self._interrupted(step.id, step.tool, record, args)
            while True:  # again when the control plane changed before the decision committed
                ruling, version = self._decide(step, registered, args, interrupted, record)
                try:
                    if ruling.verdict is not Verdict.RUN:
                        await self._hold(step, args, ruling, version, record)
                        self.recorder.step(step.id, step.tool, started, 0.0, 0.0)
                        return
                    call = _call_key(step.tool, args)
                    shared = self._calls.get(call)
                    if shared is not None:  # the same call is in this plan already: run it once
                        outcome = await asyncio.shield(shared)
                    else:
                        outcome, persist = await self._call_once(
                            step, registered, args, call, record, ruling=ruling, version=version
                        )
                    break
                except PolicyChangedError:
                    assert self.control is not None
                    self.control.refresh()
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

    def _interrupted(
        self, step_id: int, call: str, record: StepState | None, args: dict[str, Any]
    ) -> bool:
        """Whether the journal holds this call's intent without its outcome (a crash during
        the call); the same call it must be, or the run is not the one journaled."""
        if record is None or record.intent_args is None:
            return False
        if record.intent_args != args:
            raise NondeterminismError(
                self.run_id,
                step_id,
                f"{call} called with {record.intent_args}",
                f"{call} called with {args}",
            )
        return True

    def _decide(
        self,
        step: Step,
        registered: RegisteredTool,
        args: dict[str, Any],
        interrupted: bool,
        record: StepState | None,
    ) -> tuple[Ruling, int | None]:
        """The ruling on the call now, and the control-plane version it was made under."""
        descriptor = registered.descriptor_for(args)
        if self.control is None:
            context = (
                CallContext(self.run_id, interrupted, record.decision)
                if record is not None
                else self._first_call
            )
            return decide(step, descriptor, args, context), None
        decision = record.decision if record else None
        snapshot = self.control.snapshot()
        context = CallContext(
            self.run_id,
            interrupted,
            decision,
            snapshot.policy,
            snapshot.principal(self.principal),
            self.wall(),
        )
        return decide(step, descriptor, args, context), snapshot.version

    async def _hold(
        self,
        step: Step,
        args: dict[str, Any],
        ruling: Ruling,
        version: int | None,
        record: StepState | None,
    ) -> None:
        """Carry out a ruling other than `run`: the step is denied or fails, is taken as done,
        or waits for a person (journaled once, not again on every resume). A decision of the
        policy is awaited: the journal refuses it if the control plane changed meanwhile."""
        run = self.steps[step.id]
        verdict, reason = ruling.verdict, ruling.reason
        if verdict is Verdict.DENY:
            await self.journal.append(
                StepDenied(
                    self.run_id,
                    self.wall(),
                    step.id,
                    step.tool,
                    args,
                    reason,
                    self.principal,
                    version,
                    ruling.rule,
                )
            )
            self.refused.add(step.id)
            self._failed(step.id, reason, 0.0)
        elif verdict is Verdict.FAIL:
            self._fail(step.id, reason, 0.0)
        elif verdict is Verdict.TAKE_AS_DONE:
            self._succeed(step.id, ToolResult(None, 0.0), 0.0)
        elif verdict is Verdict.AWAIT_APPROVAL:
            if record is None or record.status is not StepStatus.AWAITING_APPROVAL:
                waiting = StepAwaitingApproval(
                    self.run_id,
                    self.wall(),
                    step.id,
                    step.tool,
                    args,
                    self.principal,
                    version,
                    ruling.rule,
                )
                if version is None:
                    self.journal.append_soon(waiting)
                else:
                    await self.journal.append(waiting)
            run.status, run.error = StepStatus.AWAITING_APPROVAL, reason
        else:  # held in doubt
            run.status, run.error = StepStatus.IN_DOUBT, reason
            if record is None or record.status is not StepStatus.IN_DOUBT:
                self.journal.append_soon(StepInDoubt(self.run_id, self.wall(), step.id, reason))

    async def _call_once(
        self,
        step: Step,
        registered: RegisteredTool,
        args: dict[str, Any],
        call: _CallKey,
        record: StepState | None,
        *,
        ruling: Ruling,
        version: int | None,
        item: int | None = None,
    ) -> tuple[ToolResult, float]:
        """Intent, then the call, registered under `call` so that duplicates share it. Returns
        the result and the journal's time. An interrupted call's intent is recorded already;
        under a control plane it is written again with the decision made now (and its first
        time: durable timers count from it). `item`: one item's call of a step over a list."""
        persist = 0.0
        key = idempotency_key(self.run_id, step.id, step.tool, args, call[1], item=item)
        interrupted = record is not None and record.intent_args is not None
        intent_at = (record.intent_at if record is not None else None) or self.wall()
        retried = record is not None and record.decision is Decision.RETRY
        if not interrupted or version is not None or retried:  # a retry's own intent
            mark = self.recorder.clock()
            await self.journal.append(
                StepIntent(
                    self.run_id,
                    intent_at,
                    step.id,
                    step.tool,
                    args,
                    key,
                    self.principal,
                    version,
                    ruling.rule,
                    item,
                )
            )
            persist += self.recorder.persisted(mark)
        if self.first_dispatch is None:
            self.first_dispatch = self.wall()
        future: asyncio.Future[ToolResult] = asyncio.get_running_loop().create_future()
        if item is None:
            self._calls[call] = future
        context = StepContext(
            self.run_id,
            step.id,
            key,
            intent_at,
            self.wall,
            self.sleep,
            self.pool,
            traceparent(self.recorder.trace, step.id),
            item,
        )
        job = record.job if record is not None else None
        try:
            outcome, job_persist = await self._dispatcher.call(registered, args, context, job)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: duplicates see it through their own await
            raise
        future.set_result(outcome)
        return outcome, persist + job_persist

    async def _run_each(self, step: Step) -> None:
        """A step over a list: one call per item, `max_concurrency` at a time (workers take the
        next item as one finishes), each journaled with its index; the items a crashed process
        finished are taken from the journal. The step then succeeds with the items' results,
        fails naming the items that failed, or waits for a person (`items.combine`)."""
        started = self.recorder.clock()
        record = self.recorded.steps.get(step.id) if self.recorded else None
        try:
            items = each_items(step, self._results)
            registered = self.registry.get(step.tool)
        except (PlanError, ToolCallError) as exc:
            self._fail(step.id, f"step {step.id} ({step.tool}) failed: {exc}", 0.0)
            return
        outcomes: list[ItemOutcome | None] = [None] * len(items)
        todo: list[int] = []
        for index in range(len(items)):
            done = record.items.get(index) if record is not None else None
            if done is not None and done.status in FINAL:
                outcomes[index] = ItemOutcome.recorded(done)
            else:
                todo.append(index)
        pending = iter(todo)

        async def worker() -> None:
            for index in pending:
                outcomes[index] = await self._run_item(
                    step, registered, index, items[index], record
                )

        workers = min(len(todo), self._dispatcher.settings.max_concurrency)
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(worker())
        status, value, error = combine([o for o in outcomes if o is not None])
        ms = (self.recorder.clock() - started) * 1000
        if status is StepStatus.SUCCEEDED:
            self._succeed(step.id, ToolResult(value, 0.0), ms)
        elif status is StepStatus.FAILED:
            self._fail(step.id, f"step {step.id} ({step.tool}): {error}", ms)
        else:
            self.steps[step.id].status, self.steps[step.id].error = status, error

    async def _run_item(
        self,
        step: Step,
        registered: RegisteredTool,
        index: int,
        item: Any,
        parent: StepState | None,
    ) -> ItemOutcome:
        """One item's call of a step over a list, as `_run_step` runs a step's; its outcome."""
        clock = self.recorder.clock
        started = clock()
        persist = self_s = 0.0
        record = parent.items.get(index) if parent is not None else None
        if parent is not None:  # a person decides about the step, for each of its items
            record = msgspec.structs.replace(record or parent, decision=parent.decision)
        try:
            args = resolve(step.args, WithItem(self._results, item))
            registered.validate(args)
            interrupted = self._interrupted(step.id, f"{step.tool} item {index}", record, args)
            while True:  # again when the control plane changed before the decision committed
                ruling, version = self._decide(step, registered, args, interrupted, record)
                try:
                    if ruling.verdict is not Verdict.RUN:
                        return await self._hold_item(
                            step, index, args=args, ruling=ruling, version=version, record=record
                        )
                    call = _call_key(step.tool, args)
                    outcome, persist = await self._call_once(
                        step, registered, args, call, record, ruling=ruling, version=version,
                        item=index,
                    )  # fmt: skip
                    break
                except PolicyChangedError:
                    assert self.control is not None
                    self.control.refresh()
            self_s = outcome.self_s
        except ArgumentError as exc:
            detail = f"{exc.argument}={exc.value!r}" if exc.argument else "its arguments"
            error = f"called with {detail}: {exc.detail} (rule {exc.rule!r})"
            return self._item_failed(step, index, error, started)
        except (PlanError, ToolCallError) as exc:
            return self._item_failed(step, index, str(exc), started)
        finally:
            self.recorder.step(step.id, step.tool, started, self_s, persist)
        ms = (clock() - started) * 1000
        self.journal.append_soon(
            StepDone(self.run_id, self.wall(), step.id, outcome.value, ms, self_s * 1000, index)
        )
        return ItemOutcome(StepStatus.SUCCEEDED, outcome.value)

    def _item_failed(self, step: Step, index: int, error: str, started: float) -> ItemOutcome:
        ms = (self.recorder.clock() - started) * 1000
        self.journal.append_soon(StepFailed(self.run_id, self.wall(), step.id, error, ms, index))
        return ItemOutcome(StepStatus.FAILED, error=error)

    async def _hold_item(
        self,
        step: Step,
        index: int,
        *,
        args: dict[str, Any],
        ruling: Ruling,
        version: int | None,
        record: StepState | None,
    ) -> ItemOutcome:
        """A ruling other than `run` for one item (see `_hold`); the step's approval is asked
        once, for all its items."""
        verdict, reason = ruling.verdict, ruling.reason
        if verdict is Verdict.DENY:
            denied = StepDenied(
                self.run_id, self.wall(), step.id, step.tool, args, reason, self.principal,
                version, ruling.rule, index,
            )  # fmt: skip
            await self.journal.append(denied)
            self.refused.add(step.id)
            return ItemOutcome(StepStatus.FAILED, error=reason)
        if verdict is Verdict.FAIL:
            return self._item_failed(step, index, reason, self.recorder.clock())
        if verdict is Verdict.TAKE_AS_DONE:
            self.journal.append_soon(StepDone(self.run_id, self.wall(), step.id, None, 0, 0, index))
            return ItemOutcome(StepStatus.SUCCEEDED)
        if verdict is Verdict.AWAIT_APPROVAL:
            run = self.steps[step.id]
            if run.status is not StepStatus.AWAITING_APPROVAL and (
                record is None or record.status is not StepStatus.AWAITING_APPROVAL
            ):
                run.status = StepStatus.AWAITING_APPROVAL  # asked once, by the first item
                waiting = StepAwaitingApproval(
                    self.run_id, self.wall(), step.id, step.tool, args, self.principal, version,
                    ruling.rule,
                )  # fmt: skip
                await self.journal.append(waiting)
            return ItemOutcome(StepStatus.AWAITING_APPROVAL, error=reason)
        if record is None or record.status is not StepStatus.IN_DOUBT:
            self.journal.append_soon(StepInDoubt(self.run_id, self.wall(), step.id, reason, index))
        return ItemOutcome(StepStatus.IN_DOUBT, error=reason)

    def _succeed(self, step_id: int, outcome: ToolResult, ms: float) -> None:
        """Record a step's result and start what it unblocked. The `step.done` record is queued
        after those steps are started, so it commits together with their intents (one commit a
        step in a chain); nothing waits for it, since the step's intent is already durable."""
        run = self.steps[step_id]
        run.status, run.result, run.ms = StepStatus.SUCCEEDED, outcome.value, ms
        self._apply(*self.graph.finish(step_id, True))
        self.journal.append_soon(
            StepDone(self.run_id, self.wall(), step_id, outcome.value, ms, outcome.self_s * 1000)
        )

    def _fail(self, step_id: int, error: str, ms: float) -> None:
        """Record a failed step (queued, as `step.done` is) and skip what depended on it."""
        self.journal.append_soon(StepFailed(self.run_id, self.wall(), step_id, error, ms))
        self._failed(step_id, error, ms)

    def _failed(self, step_id: int, error: str, ms: float) -> None:
        """A step failed (its record is written): skip what depended on it."""
        run = self.steps[step_id]
        run.status, run.error, run.ms = StepStatus.FAILED, error, ms
        self._apply(*self.graph.finish(step_id, False))


class _Results(Mapping[int, Any]):
    """The results of the steps that succeeded, by step id: what references resolve to."""

    def __init__(self, steps: dict[int, StepRun]) -> None:
        self._steps = steps

    def __getitem__(self, step_id: int) -> Any:
        run = self._steps[step_id]
        if run.status is not StepStatus.SUCCEEDED:
            raise KeyError(step_id)
        return run.result

    def __iter__(self) -> Iterator[int]:
        return (i for i, run in self._steps.items() if run.status is StepStatus.SUCCEEDED)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _call_key(tool: str, args: dict[str, Any]) -> _CallKey:
    return tool, canonical_args(args)
