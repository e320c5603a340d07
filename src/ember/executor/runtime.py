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
from typing import TYPE_CHECKING, Any

import msgspec

from ember.errors import NondeterminismError, UserError
from ember.executor.answer import compose_answer
from ember.executor.executor import RunExecution
from ember.executor.resilience import ExecutionSettings
from ember.journal import (
    Decision,
    Journal,
    PlanReplanned,
    RunDone,
    RunResumed,
    RunStarted,
    RunState,
    RunStatus,
    RunWaiting,
    StepFailed,
    StepResolved,
    StepSkipped,
    StepStatus,
    fold,
)
from ember.planner.base import FirstToken, PlanEvent, Planner, PlanningTask
from ember.planner.plan import renumber
from ember.telemetry.latency import LatencyRecorder
from ember.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from ember.journal import SQLiteJournal

__all__ = ["RunResult", "Runtime", "StepReport", "interrupted_runs", "owner_alive", "owner_id"]


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
    """The outcome of a run: status, Markdown answer, every step, latency by layer (ms).

    `status` is `waiting` when recovery found steps in doubt: decide each with `resolve`, then
    `resume` the run."""

    run_id: str
    status: RunStatus
    answer: str
    steps: list[StepReport]
    latency_ms: dict[str, float]
    error: str | None = None

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


def interrupted_runs(journal: SQLiteJournal, limit: int = 10_000) -> list[str]:
    """Runs still `running` in the journal whose process is gone (killed, crashed, powered
    off): what `ember resume --all` and `ember serve` at start take over, oldest first."""
    return [
        summary.run_id
        for summary in reversed(journal.runs(limit))
        if summary.status is RunStatus.RUNNING
        and not owner_alive(fold(summary.run_id, journal.read(summary.run_id)).owner)
    ]


class Runtime:
    """Runs tasks: plan with `planner`, execute on `registry`'s tools, journal to `journal`."""

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
    ) -> None:
        self.registry = registry
        self.planner = planner
        self.journal = journal
        self.clock = clock
        self.wall = wall
        self.sleep = sleep
        self.settings = settings or ExecutionSettings()
        self.rng = rng or random.Random()
        self.first_dispatch: float | None = None  # of the last run or resume, for `ember chaos`
        self._pool: ThreadPoolExecutor | None = None
        # Set by a process that is stopping (`ember serve` at shutdown): a run cancelled from
        # then on is left interrupted, as a crash leaves it, for the next process to resume,
        # instead of being recorded as cancelled.
        self.stopping = False

    def close(self) -> None:
        """Stop the thread pool of blocking tools (it is started by the first run)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def run(
        self, task: str, *, today: date | None = None, run_id: str | None = None
    ) -> RunResult:
        """Plan and execute `task`; every event is durable in the journal before this returns."""
        planner = self._need_planner()
        recorder = LatencyRecorder(self.clock)
        run_id = run_id or f"r-{os.urandom(6).hex()}"
        today = today or date.today()
        self.journal.append_soon(  # durable with the first intent: nothing waits on it alone
            RunStarted(run_id, self.wall(), task, planner.name, today.isoformat(), owner_id())
        )
        planning = PlanningTask(task, today, tuple(self.registry.descriptors()))
        return await self._execute(
            run_id=run_id,
            task=task,
            today=today,
            plan=planner.plan(planning),
            recorder=recorder,
            recorded=None,
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
        recorder = LatencyRecorder(self.clock)
        self.journal.append_soon(RunResumed(run_id, self.wall(), owner_id()))
        today = date.fromisoformat(state.today)
        if state.plan_done:
            plan = _replay(state)
        else:
            planning = PlanningTask(state.task, today, tuple(self.registry.descriptors()))
            plan = self._need_planner().plan(planning)
        return await self._execute(
            run_id=run_id,
            task=state.task,
            today=today,
            plan=plan,
            recorder=recorder,
            recorded=state,
        )

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
        await self.journal.append(StepResolved(run_id, self.wall(), step_id, decision, by))

    async def _execute(
        self,
        *,
        run_id: str,
        task: str,
        today: date,
        plan: AsyncIterator[PlanEvent],
        recorder: LatencyRecorder,
        recorded: RunState | None,
    ) -> RunResult:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                self.settings.thread_pool_size, thread_name_prefix="ember-tool"
            )
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
        )
        try:
            try:
                await execution.execute(plan)
                while self._may_replan(execution):
                    await execution.execute(self._replan(execution, task, today))
            except* NondeterminismError as group:
                raise group.exceptions[0] from None
        except asyncio.CancelledError:
            if not self.stopping:
                await asyncio.shield(self._cancelled(execution, recorder))
            raise
        finally:
            self.first_dispatch = execution.first_dispatch
        return await self._finish(run_id, task, execution, recorder)

    def _may_replan(self, execution: RunExecution) -> bool:
        return (
            self.planner is not None
            and not execution.succeeded
            and not execution.waiting
            and execution.replans < self.settings.max_replans
        )

    def _replan(self, execution: RunExecution, task: str, today: date) -> AsyncIterator[PlanEvent]:
        """Ask the planner again, telling it what failed; the new steps get fresh ids."""
        planner = self._need_planner()
        execution.replans += 1
        current = [i for i in execution.steps if i not in execution.superseded]
        failed = [i for i in current if execution.status[i] is not StepStatus.SUCCEEDED]
        feedback = "\n".join(
            [f"Attempt {execution.replans} of the plan failed."]
            + [
                f"- step {i} {execution.steps[i].tool}: {execution.errors.get(i, 'failed')}"
                for i in failed
            ]
            + [
                f"- step {i} {execution.steps[i].tool} succeeded: {execution.results.get(i)!r}"
                for i in current
                if i not in failed
            ]
            + [execution.plan_error or ""]
        ).strip()
        execution.superseded.update(current)
        self.journal.append_soon(
            PlanReplanned(execution.run_id, self.wall(), execution.replans, current, feedback)
        )
        offset = max(execution.steps, default=0)
        planning = PlanningTask(
            task, today, tuple(self.registry.descriptors()), execution.replans, feedback
        )

        async def renumbered() -> AsyncIterator[PlanEvent]:
            async for item in planner.plan(planning):
                yield item if isinstance(item, FirstToken) else renumber(item, offset)

        return renumbered()

    async def _cancelled(self, execution: RunExecution, recorder: LatencyRecorder) -> None:
        """Record every step's final state, then the run's, after a cancellation."""
        for step_id, state in sorted(execution.status.items()):
            if state is StepStatus.RUNNING:
                self.journal.append_soon(
                    StepFailed(
                        execution.run_id,
                        self.wall(),
                        step_id,
                        "cancelled while running: the call may or may not have happened",
                        0.0,
                    )
                )
            elif state is StepStatus.PLANNED:
                self.journal.append_soon(
                    StepSkipped(execution.run_id, self.wall(), step_id, "the run was cancelled")
                )
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
        self, run_id: str, task: str, execution: RunExecution, recorder: LatencyRecorder
    ) -> RunResult:
        succeeded = execution.succeeded
        answer = compose_answer(
            task,
            steps=execution.steps,
            status=execution.status,
            results=execution.results,
            errors=execution.errors,
            plan_error=execution.plan_error,
        )
        recorder.finish()
        latency = recorder.report()
        if execution.waiting:
            status = RunStatus.WAITING
            error: str | None = execution.errors[execution.waiting[0]]
            await self.journal.append(RunWaiting(run_id, self.wall(), execution.waiting))
        else:
            status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
            error = None if succeeded else execution.plan_error or _first_error(execution)
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


async def _replay(state: RunState) -> AsyncIterator[PlanEvent]:
    """The recorded plan, as a planner stream."""
    yield FirstToken()
    for step in state.steps.values():  # in the order they were planned
        yield step.step


def _first_error(execution: RunExecution) -> str | None:
    return next((execution.errors[i] for i in sorted(execution.errors)), None)
