"""Executor resilience with a fake clock: timeouts, retries, cancellation, limits, replanning,
approval and the duplicate-call guard."""

from __future__ import annotations

import asyncio
import itertools
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ember import Plan, Runtime, SQLiteJournal, Step, ToolRegistry, tool
from ember.errors import ToolCallError, UserError
from ember.executor.resilience import ExecutionSettings, RetryPolicy
from ember.journal import Decision, RunStatus, StepRetrying, StepStatus, fold
from ember.testing import FakeClock, MemoryJournal, ScriptedPlanner


def runtime(
    registry: ToolRegistry,
    plans: dict[str, Any],
    clock: FakeClock | None = None,
    journal: Any = None,
    **settings: Any,
) -> Runtime:
    clock = clock or FakeClock(1000.0)
    return Runtime(
        registry,
        ScriptedPlanner(plans),
        journal or MemoryJournal(),
        clock=clock,
        wall=clock,
        sleep=clock.sleep,
        settings=ExecutionSettings(**settings),
        rng=random.Random(3),
    )


def test_a_hanging_tool_times_out_and_idempotent_ones_are_retried() -> None:
    calls: list[str] = []
    registry = ToolRegistry()

    @tool(timeout_s=5, idempotent=True)
    async def hang(x: int) -> int:
        """Never answers."""
        calls.append("hang")
        await asyncio.Event().wait()
        return x

    @tool(timeout_s=5)
    async def hang_once(x: int) -> int:
        """Never answers, and is not idempotent."""
        calls.append("hang_once")
        await asyncio.Event().wait()
        return x

    registry.register(hang)
    registry.register(hang_once)
    clock = FakeClock(1000.0)
    plan = Plan([Step(1, "hang", {"x": 1}), Step(2, "hang_once", {"x": 2})])
    result = asyncio.run(runtime(registry, {"go": plan}, clock).run("go"))
    assert result.status is RunStatus.FAILED
    assert result.steps[0].error == "step 1 (hang) failed: hang: timed out after 5 s"
    assert calls.count("hang") == 3  # retried: idempotent, so a repeat is harmless
    assert calls.count("hang_once") == 1  # a timeout of a non-idempotent call is not retried
    assert clock.now > 1000.0 + 15  # three 5 s timeouts plus the backoff, all on the fake clock


def test_retryable_errors_back_off_exponentially_with_jitter() -> None:
    attempts: list[float] = []
    registry = ToolRegistry()
    clock = FakeClock(0.0)

    @tool(inline=True)
    def flaky(x: int) -> int:
        """Fails twice, then works."""
        attempts.append(clock.now)
        if len(attempts) < 3:
            raise ToolCallError("flaky", "503 from upstream", retryable=True)
        return x

    registry.register(flaky)
    journal = MemoryJournal()
    policy = RetryPolicy(max_attempts=4, base_delay_s=1.0, factor=2.0, jitter=0.2)
    rt = runtime(registry, {"go": Plan([Step(1, "flaky", {"x": 7})])}, clock, journal, retry=policy)
    result = asyncio.run(rt.run("go"))
    assert result.status is RunStatus.SUCCEEDED
    assert result.steps[0].result == 7
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert 0.8 <= gaps[0] <= 1.2  # 1 s +/- 20 %
    assert 1.6 <= gaps[1] <= 2.4  # 2 s +/- 20 %
    retries = [e for e in journal.events if isinstance(e, StepRetrying)]
    assert [(r.attempt, r.error) for r in retries] == [
        (1, "flaky: 503 from upstream"),
        (2, "flaky: 503 from upstream"),
    ]


def _cancel_mid_call(rt: Runtime, run_id: str, started: asyncio.Event) -> None:
    """Run the plan "go" as `run_id` and cancel it once its tool call has `started`."""

    async def main() -> None:
        task = asyncio.create_task(rt.run("go", run_id=run_id))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_cancellation_records_every_step(tmp_path: Path) -> None:
    registry = ToolRegistry()
    started = asyncio.Event()

    @tool
    async def slow(x: int) -> int:
        """Takes forever."""
        started.set()
        await asyncio.sleep(3600)
        return x

    registry.register(slow)
    journal = SQLiteJournal(tmp_path / "j.db")
    plan = Plan([Step(1, "slow", {"x": 1}), Step(2, "slow", {"x": "$1"})])
    rt = Runtime(registry, ScriptedPlanner({"go": plan}), journal)

    _cancel_mid_call(rt, "r-c", started)
    state = fold("r-c", journal.read("r-c"))
    assert state.status is RunStatus.CANCELLED
    assert state.steps[1].status is StepStatus.FAILED
    assert "cancelled while running" in (state.steps[1].error or "")
    assert state.steps[2].status is StepStatus.SKIPPED
    journal.close()
    rt.close()


def test_a_stopping_runtime_leaves_a_cancelled_run_interrupted_for_the_next_process(
    tmp_path: Path,
) -> None:
    """`ember serve` at shutdown: the run is not recorded as cancelled; the next process
    resumes it like one a crash left, re-dispatching the idempotent call with the same key."""
    calls: list[str] = []
    started = asyncio.Event()

    @tool(idempotent=True)
    async def slow(x: int, idempotency_key: str = "") -> int:
        """Takes forever the first time."""
        calls.append(idempotency_key)
        if len(calls) == 1:
            started.set()
            await asyncio.sleep(3600)
        return x + 1

    registry = ToolRegistry()
    registry.register(slow)
    journal = SQLiteJournal(tmp_path / "j.db")
    plan = Plan([Step(1, "slow", {"x": 1}), Step(2, "slow", {"x": "$1"})])
    rt = Runtime(registry, ScriptedPlanner({"go": plan}), journal)

    rt.leave_interrupted()  # as `ember serve` does at shutdown
    _cancel_mid_call(rt, "r-s", started)
    state = fold("r-s", journal.read("r-s"))
    assert state.status is RunStatus.RUNNING
    assert state.steps[1].status is StepStatus.RUNNING  # its intent, and no outcome
    resumed = asyncio.run(Runtime(registry, None, journal).resume("r-s"))
    assert resumed.status is RunStatus.SUCCEEDED
    assert [step.result for step in resumed.steps] == [2, 3]
    assert calls[0] == calls[1]  # the same call again, with its key
    journal.close()
    rt.close()


def test_blocking_tools_run_in_a_pool_of_the_configured_size() -> None:
    active = 0
    peak = 0
    lock = threading.Lock()
    registry = ToolRegistry()

    @tool
    def block(x: int) -> str:
        """A blocking call."""
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return threading.current_thread().name

    registry.register(block)
    plan = Plan([Step(i, "block", {"x": i}) for i in range(1, 13)])
    rt = Runtime(
        registry,
        ScriptedPlanner({"go": plan}),
        MemoryJournal(),
        settings=ExecutionSettings(thread_pool_size=12),
    )
    result = asyncio.run(rt.run("go"))
    rt.close()
    assert result.status is RunStatus.SUCCEEDED
    assert peak == 12  # all twelve at once (Python's default pool would cap at 6 on 2 cores)
    assert all(s.result.startswith("ember-tool") for s in result.steps)


def test_concurrency_limits_per_tool() -> None:
    active = 0
    peak = 0
    registry = ToolRegistry()

    @tool
    async def api(x: int) -> int:
        """A rate-limited API."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return x

    registry.register(api)
    plan = Plan([Step(i, "api", {"x": i}) for i in range(1, 9)])
    rt = Runtime(
        registry,
        ScriptedPlanner({"go": plan}),
        MemoryJournal(),
        settings=ExecutionSettings(tool_limits={"api": 2}),
    )
    assert asyncio.run(rt.run("go")).status is RunStatus.SUCCEEDED
    assert peak == 2


def test_identical_calls_in_one_plan_run_once_and_share_the_result() -> None:
    calls: list[int] = []
    registry = ToolRegistry()

    @tool
    async def lookup(x: int) -> dict[str, int]:
        """Counted."""
        calls.append(x)
        await asyncio.sleep(0)
        return {"y": x * 10}

    registry.register(lookup)
    plan = Plan(
        [Step(1, "lookup", {"x": 1}), Step(2, "lookup", {"x": 1}), Step(3, "lookup", {"x": 2})]
    )
    result = asyncio.run(runtime(registry, {"go": plan}).run("go"))
    assert result.status is RunStatus.SUCCEEDED
    assert sorted(calls) == [1, 2]
    assert [s.result for s in result.steps] == [{"y": 10}, {"y": 10}, {"y": 20}]


def test_a_failed_run_is_replanned_with_the_failures_as_feedback() -> None:
    seen: list[str] = []
    registry = ToolRegistry()

    @tool(inline=True)
    def book(city: str) -> dict[str, str]:
        """Books a hotel."""
        if city == "Atlantis":
            raise ToolCallError("book", "no such city")
        return {"booking": f"BK-{city}"}

    registry.register(book)

    class Replanner:
        name = "replanner"

        async def plan(self, task: Any) -> Any:
            seen.append(task.feedback)
            city = "Atlantis" if task.attempt == 0 else "Lisbon"
            yield Step(1, "book", {"city": city})

    journal = MemoryJournal()
    rt = Runtime(registry, Replanner(), journal, settings=ExecutionSettings(max_replans=2))
    result = asyncio.run(rt.run("book me something", run_id="r-p"))
    assert result.status is RunStatus.SUCCEEDED
    assert [(s.id, s.status) for s in result.steps] == [
        (1, StepStatus.FAILED),
        (2, StepStatus.SUCCEEDED),
    ]
    assert seen[0] == ""
    assert "step 1 book: step 1 (book) failed: book: no such city" in seen[1]
    state = fold("r-p", journal.events)
    assert state.replans == 1
    assert state.superseded == [1]
    assert state.status is RunStatus.SUCCEEDED


def test_high_risk_steps_wait_for_a_durable_approval(tmp_path: Path) -> None:
    wires: list[float] = []
    registry = ToolRegistry()

    @tool(risk="high", inline=True)
    def wire(amount: float) -> dict[str, float]:
        """Sends money."""
        wires.append(amount)
        return {"sent": amount}

    registry.register(wire)
    journal = SQLiteJournal(tmp_path / "j.db")
    rt = Runtime(
        registry, ScriptedPlanner({"pay": Plan([Step(1, "wire", {"amount": 90.0})])}), journal
    )
    waiting = asyncio.run(rt.run("pay", run_id="r-a"))
    assert waiting.status is RunStatus.WAITING
    assert waiting.steps[0].status is StepStatus.AWAITING_APPROVAL
    assert "ember runs resolve r-a 1 --approve|--deny" in (waiting.error or "")
    assert wires == []
    with pytest.raises(UserError, match="is awaiting_approval: decide with --approve, --deny"):
        asyncio.run(rt.resolve("r-a", 1, Decision.RETRY))
    asyncio.run(rt.resolve("r-a", 1, Decision.APPROVE, "carol"))
    done = asyncio.run(rt.resume("r-a"))
    assert done.status is RunStatus.SUCCEEDED
    assert wires == [90.0]
    journal.close()
