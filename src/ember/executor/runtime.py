"""`Runtime`: the thin facade that wires planner, tools, journal and telemetry for one run."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from typing import Any

import msgspec

from ember.errors import (
    NondeterminismError,
    PolicyChangedError,
    UserError,
)
from ember.executor import rounds
from ember.executor.answer import compose_answer
from ember.executor.executor import RunExecution
from ember.executor.resilience import ExecutionSettings
from ember.executor.steps import Outcome, StepReport
from ember.journal import (
    Decision,
    Journal,
    PlanReplanned,
    RunAnswered,
    RunDone,
    RunResumed,
    RunStarted,
    RunState,
    RunStatus,
    RunWaiting,
    StepResolved,
    StepStatus,
    fold,
)
from ember.planner.base import (
    FirstToken,
    PlanEvent,
    Planner,
    PlanningTask,
    Prefills,
)
from ember.policy.control import ControlPlane
from ember.telemetry.latency import LatencyRecorder
from ember.tools.registry import ToolRegistry

__all__ = ["RunResult", "Runtime", "StepReport", "owner_alive", "owner_id"]


class RunResult(msgspec.Struct, frozen=True):
    """The outcome of a run: status, Markdown answer, every step, latency by layer (ms).

    `status` is `waiting` when recovery found steps in doubt: decide each with `resolve`, then
    `resume` the run. `first_dispatch`: the wall time (epoch seconds) this process made the
    run's first tool call, None if it made none. `unverified`: what an answer the model wrote
    states that neither the results nor the request hold (`number 41.5`, `name Borealis`)."""

    run_id: str
    status: RunStatus
    answer: str
    steps: list[StepReport]
    latency_ms: dict[str, float]
    error: str | None = None
    first_dispatch: float | None = None
    unverified: list[str] = []

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


def owner_id() -> str:
    """`host:pid` of this process: who is running a run, recorded in the journal."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str) -> bool:
    """True when `owner` (`owner_id()` of some process) is still running on this host."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Runtime:
    """Runs tasks: plan with `planner`, execute on `registry`'s tools, journal to `journal`.

    `control`: the control plane (`ember.policy.control`) that decides every call of every run
    against the current policy, for the principal that started the run; without one, only the
    approval of high-risk tools and the in-doubt rules apply (a library's own runtime)."""

    def __init__(
        self,
        registry: ToolRegistry,
        planner: Planner | None,
        journal: Journal,
        *,
        clock: Callable[[], float] = time.perf_counter,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        settings: ExecutionSettings | None = None,
        rng: random.Random | None = None,
        control: ControlPlane | None = None,
    ) -> None:
        self.registry = registry
        self.control = control
        self.planner = planner
        self.journal = journal
        self.clock = clock
        self.wall = wall
        self.sleep = sleep
        self.settings = settings or ExecutionSettings()
        self.rng = rng or random.Random()
        self._pool: ThreadPoolExecutor | None = None
        self._leave_interrupted = False

    def close(self) -> None:
        """Stop the thread pool of blocking tools (it is started by the first run)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def leave_interrupted(self) -> None:
        """For a process that is stopping (`ember serve` at shutdown): a run cancelled from now
        on is left interrupted, as a crash leaves it, for the next process to resume, instead of
        being recorded as cancelled."""
        self._leave_interrupted = True

    async def warm(self, today: date | None = None) -> None:
        """Make the planner ready for the first request now (the embedded model loads and reads
        its prompt prefix), in a worker thread."""
        if self.planner is not None:
            task = PlanningTask("", today or date.today(), tuple(self.registry.descriptors()))
            await asyncio.to_thread(self.planner.warm, task)

    @property
    def can_prefill(self) -> bool:
        """Whether the planner reads requests while they are typed (`prefill`)."""
        return isinstance(self.planner, Prefills)

    async def prefill(self, session_id: str, text: str, today: date | None = None) -> int:
        """Let the planner read `text`, a request still being typed in `session_id`, in a
        worker thread; returns the tokens it read. `UserError` if the planner cannot."""
        planner = self.planner
        if not isinstance(planner, Prefills):
            name = planner.name if planner is not None else "no"
            raise UserError(f"the {name} planner cannot read a request while it is typed")
        task = PlanningTask(text, today or date.today(), tuple(self.registry.descriptors()))
        return await asyncio.to_thread(planner.prefill, session_id, task)

    def interrupted_runs(self, limit: int = 10_000) -> list[str]:
        """Runs still `running` in the journal whose process is gone (killed, crashed, powered
        off): what `ember resume --all` and `ember serve` at start take over, oldest first."""
        journal = self.journal
        return [
            summary.run_id
            for summary in reversed(journal.runs(limit))
            if summary.status is RunStatus.RUNNING
            and not owner_alive(fold(summary.run_id, journal.read(summary.run_id)).owner)
        ]

    async def run(
        self,
        task: str,
        *,
        today: date | None = None,
        run_id: str | None = None,
        principal: str = "",
        on_text: Callable[[str], None] | None = None,
    ) -> RunResult:
        """Plan and execute `task` on behalf of `principal` (under a control plane: the local
        OS user if empty); every event is durable in the journal before this returns. A
        request that asks a question gets an answer the model writes from the results (when
        the planner can: `Answers`); `on_text` gets its text as it is written."""
        planner = self._need_planner()
        run_id = run_id or f"r-{os.urandom(6).hex()}"
        today = today or date.today()
        if self.control is not None:
            principal = principal or self.control.local
        self.journal.append_soon(  # durable with the first intent: nothing waits on it alone
            RunStarted(
                run_id, self.wall(), task, planner.name, today.isoformat(), owner_id(), principal
            )
        )
        planning = PlanningTask(task, today, tuple(self.registry.descriptors()))
        return await self._execute(
            run_id, task, today, planner.plan(planning), None, principal=principal, on_text=on_text
        )

    def _need_planner(self) -> Planner:
        if self.planner is None:
            raise UserError("this Runtime has no planner: pass one to plan new runs")
        return self.planner

    async def resume(self, run_id: str) -> RunResult:
        """Continue an interrupted run from its journal: finished steps are not run again.

        The plan is the recorded one if the planner had finished it; otherwise the planner runs
        again and must reproduce the recorded steps (else `NondeterminismError`)."""
        state = fold(run_id, self.journal.read(run_id))
        if state.status not in (RunStatus.RUNNING, RunStatus.WAITING):
            raise UserError(
                f"run {run_id} already finished ({state.status.value}): nothing to resume"
            )
        self.journal.append_soon(RunResumed(run_id, self.wall(), owner_id()))
        today = date.fromisoformat(state.today)
        if state.plan_done:
            plan = _replay(state)
        else:
            planning = PlanningTask(state.task, today, tuple(self.registry.descriptors()))
            plan = self._need_planner().plan(planning)
        principal = state.principal  # runs journaled before principals: the local user's
        if not principal and self.control is not None:
            principal = self.control.local
        return await self._execute(run_id, state.task, today, plan, state, principal=principal)

    async def resolve(self, run_id: str, step_id: int, decision: Decision, by: str = "") -> None:
        """Record a person's decision about a waiting step; `resume` then carries it out:
        retry / skip / fail for a step in doubt, approve / deny for one awaiting approval."""
        state = fold(run_id, self.journal.read(run_id))
        step = state.steps.get(step_id)
        allowed = {
            StepStatus.IN_DOUBT: (Decision.RETRY, Decision.SKIP, Decision.FAIL),
            StepStatus.AWAITING_APPROVAL: (Decision.APPROVE, Decision.DENY),
        }
        if step is None or step.status not in allowed:
            waiting = [
                f"{i} ({s.status.value})" for i, s in state.steps.items() if s.status in allowed
            ]
            raise UserError(
                f"step {step_id} of run {run_id} is not waiting for a decision; waiting steps: "
                f"{', '.join(waiting) or 'none'}"
            )
        if decision not in allowed[step.status]:
            choices = ", ".join(f"--{d.value}" for d in allowed[step.status])
            raise UserError(
                f"step {step_id} of run {run_id} is {step.status.value}: decide with {choices}"
            )
        if self.control is None:
            await self.journal.append(StepResolved(run_id, self.wall(), step_id, decision, by))
            return
        while True:  # a person's decision is a policy decision too: may `by` approve this?
            snapshot = self.control.refresh()
            started_by = state.principal or self.control.local
            context = {"run_principal": {"__entity": {"type": "User", "id": started_by}}}
            judged = snapshot.require(by or self.control.local, "approve", step.step.tool, context)
            resolved = StepResolved(
                run_id, self.wall(), step_id, decision, by, snapshot.version, judged.rule
            )
            try:
                await self.journal.append(resolved)
                return
            except PolicyChangedError:
                continue

    async def _execute(
        self,
        run_id: str,
        task: str,
        today: date,
        plan: AsyncIterator[PlanEvent],
        recorded: RunState | None,
        *,
        principal: str = "",
        on_text: Callable[[str], None] | None = None,
    ) -> RunResult:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                self.settings.thread_pool_size, thread_name_prefix="ember-tool"
            )
        recorder = LatencyRecorder(self.clock, run_id)
        execution = RunExecution(
            run_id,
            self.registry,
            self.journal,
            recorder,
            wall=self.wall,
            sleep=self.sleep,
            recorded=recorded,
            settings=self.settings,
            pool=self._pool,
            rng=self.rng,
            control=self.control,
            principal=principal,
        )
        try:
            try:
                outcome = await execution.execute(plan)
                while self._may_replan(outcome):
                    outcome = await execution.execute(self._replan(execution, outcome, task, today))
                outcome = await rounds.plan_on(self, execution, outcome, task, today)
            except* NondeterminismError as group:
                raise group.exceptions[0] from None
            written = await rounds.answer(
                self, execution, outcome, task=task, today=today, recorder=recorder, on_text=on_text
            )
        except asyncio.CancelledError:
            if not self._leave_interrupted:
                await asyncio.shield(self._cancelled(execution, recorder))
            raise
        return await self._finish(run_id, task, outcome, recorder, written)

    def _may_replan(self, outcome: Outcome) -> bool:
        return (
            self.planner is not None
            and not outcome.succeeded
            and not outcome.waiting
            and outcome.replans < self.settings.max_replans
        )

    def _replan(
        self, execution: RunExecution, outcome: Outcome, task: str, today: date
    ) -> AsyncIterator[PlanEvent]:
        """Ask the planner again, telling it what failed; the new steps get fresh ids."""
        planner = self._need_planner()
        current = execution.supersede()
        attempt = outcome.replans + 1
        reports = {step.id: step for step in outcome.steps if step.id in current}
        feedback = "\n".join(
            [f"Attempt {attempt} of the plan failed."]
            + [
                f"- step {i} {step.tool}: {step.error or 'failed'}"
                for i, step in reports.items()
                if step.status is not StepStatus.SUCCEEDED
            ]
            + [
                f"- step {i} {step.tool} succeeded: {step.result!r}"
                for i, step in reports.items()
                if step.status is StepStatus.SUCCEEDED
            ]
            + [outcome.plan_error or ""]
        ).strip()
        self.journal.append_soon(
            PlanReplanned(execution.run_id, self.wall(), attempt, current, feedback)
        )
        offset = max((step.id for step in outcome.steps), default=0)
        planning = PlanningTask(task, today, tuple(self.registry.descriptors()), attempt, feedback)
        return rounds.renumbered(planner.plan(planning), offset)

    async def _cancelled(self, execution: RunExecution, recorder: LatencyRecorder) -> None:
        """Record every step's final state, then the run's, after a cancellation."""
        execution.record_cancelled()
        await self.journal.append(
            RunDone(
                execution.run_id,
                self.wall(),
                RunStatus.CANCELLED,
                "",
                "cancelled",
                recorder.report(),
                [],
            )
        )

    async def _finish(
        self,
        run_id: str,
        task: str,
        outcome: Outcome,
        recorder: LatencyRecorder,
        written: RunAnswered | None = None,
    ) -> RunResult:
        answer = compose_answer(task, outcome.steps, outcome.plan_error)
        unverified = written.unfound if written is not None else []
        if written is not None:
            answer = written.text
            if unverified:
                answer += (
                    "\n\n_Not found in the results or the request: " + ", ".join(unverified) + "_"
                )
        recorder.finish()
        latency = recorder.report()
        if outcome.waiting:
            status = RunStatus.WAITING
            waiting = {step.id: step.error for step in outcome.steps}
            error: str | None = waiting[outcome.waiting[0]]
            await self.journal.append(RunWaiting(run_id, self.wall(), outcome.waiting))
        else:
            status = RunStatus.SUCCEEDED if outcome.succeeded else RunStatus.FAILED
            error = None if outcome.succeeded else outcome.first_error
            spans = [msgspec.to_builtins(span) for span in recorder.spans]
            await self.journal.append(
                RunDone(run_id, self.wall(), status, answer, error, latency, spans)
            )
        return RunResult(
            run_id,
            status,
            answer,
            outcome.steps,
            latency,
            error,
            outcome.first_dispatch,
            unverified,
        )


async def _replay(state: RunState) -> AsyncIterator[PlanEvent]:
    """The recorded plan, as a planner stream."""
    yield FirstToken()
    for step in state.steps.values():  # in the order they were planned
        yield step.step
