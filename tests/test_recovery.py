"""Recovery from the journal: what a crash leaves behind, resumed, with real SQLite files."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ember import Plan, Runtime, Step, ToolRegistry, tool
from ember.errors import NondeterminismError, UserError
from ember.journal import (
    Decision,
    RunStatus,
    StepIntent,
    StepJob,
    StepStatus,
    fold,
    idempotency_key,
)
from ember.testing import FakeClock, ScriptedPlanner
from ember.tools.demo import DemoWorld, demo_registry
from ember.tools.transport import ToolResult

from .backends import crashed_journal


class Effects:
    """Tools with side effects that count their calls, one idempotent, one not."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str]] = []

    def registry(self) -> ToolRegistry:
        registry = ToolRegistry()

        @tool(idempotent=True, inline=True)
        def charge(n: int, idempotency_key: str = "") -> dict[str, int]:
            """Idempotent by key."""
            self.calls.append(("charge", n, idempotency_key))
            return {"n": n}

        @tool(inline=True)
        def launch(n: int, idempotency_key: str = "") -> dict[str, int]:
            """Not idempotent."""
            self.calls.append(("launch", n, idempotency_key))
            return {"n": n}

        registry.register(charge)
        registry.register(launch)
        return registry


CHAIN = [
    Step(1, "charge", {"n": 1}),
    Step(2, "charge", {"n": 2}, after=[1]),
    Step(3, "launch", {"n": 3}, after=[2]),
    Step(4, "charge", {"n": 4}, after=[3]),
]


def test_finished_steps_are_reused_and_idempotent_ones_redispatched_with_the_same_key(
    location: Path | str,
) -> None:
    effects = Effects()
    journal = crashed_journal(
        location, [*CHAIN[:2], Step(4, "charge", {"n": 4})], {1: {"n": 1}}, [2]
    )
    runtime = Runtime(effects.registry(), None, journal)
    result = asyncio.run(runtime.resume("r-1"))
    assert result.status is RunStatus.SUCCEEDED
    key2 = idempotency_key("r-1", 2, "charge", {"n": 2})
    assert sorted(effects.calls) == [
        ("charge", 2, key2),
        ("charge", 4, idempotency_key("r-1", 4, "charge", {"n": 4})),
    ]  # step 1 was not run again
    assert result.steps[0].result == {"n": 1}
    kinds = [type(e).__struct_config__.tag for e in journal.read("r-1")]
    assert kinds.count("step.intent") == 3  # the interrupted step kept its one intent
    assert kinds[-1] == "run.done"
    with pytest.raises(UserError, match="already finished"):
        asyncio.run(runtime.resume("r-1"))
    journal.close()


@pytest.mark.parametrize(
    ("decision", "calls", "status"),
    [
        (Decision.SKIP, [("charge", 4)], RunStatus.SUCCEEDED),
        (Decision.RETRY, [("launch", 3), ("charge", 4)], RunStatus.SUCCEEDED),
        (Decision.FAIL, [], RunStatus.FAILED),
    ],
)
def test_non_idempotent_step_waits_in_doubt_for_a_decision(
    location: Path | str, decision: Decision, calls: list[tuple[str, int]], status: RunStatus
) -> None:
    effects = Effects()
    journal = crashed_journal(location, CHAIN, {1: {"n": 1}, 2: {"n": 2}}, [3])
    runtime = Runtime(effects.registry(), None, journal)
    waiting = asyncio.run(runtime.resume("r-1"))
    assert waiting.status is RunStatus.WAITING
    assert [s.status for s in waiting.steps] == [
        StepStatus.SUCCEEDED,
        StepStatus.SUCCEEDED,
        StepStatus.IN_DOUBT,
        StepStatus.PLANNED,
    ]
    assert "ember runs resolve r-1 3 --retry|--skip|--fail" in (waiting.error or "")
    assert effects.calls == []  # never silently repeated
    assert [r.status for r in journal.runs()] == [RunStatus.WAITING]
    again = asyncio.run(runtime.resume("r-1"))  # no decision yet: still waiting, still no call
    assert again.status is RunStatus.WAITING
    assert effects.calls == []
    with pytest.raises(
        UserError,
        match="step 2 of run r-1 is not waiting for a decision; waiting steps: 3 \\(in_doubt\\)",
    ):
        asyncio.run(runtime.resolve("r-1", 2, decision))
    asyncio.run(runtime.resolve("r-1", 3, decision, "alice"))
    final = asyncio.run(runtime.resume("r-1"))
    assert final.status is status
    assert [(tool, n) for tool, n, _ in effects.calls] == calls
    if decision is Decision.FAIL:
        assert [s.status for s in final.steps][2:] == [StepStatus.FAILED, StepStatus.SKIPPED]
    if decision is Decision.RETRY:
        assert effects.calls[0][2] == idempotency_key("r-1", 3, "launch", {"n": 3})
    journal.close()


def test_a_replanned_step_that_differs_from_the_journal_is_nondeterminism(
    location: Path | str,
) -> None:
    journal = crashed_journal(location, CHAIN[:2], {1: {"n": 1}}, [], plan_done=False)
    changed = Plan([Step(1, "charge", {"n": 1}), Step(2, "launch", {"n": 2})])
    runtime = Runtime(Effects().registry(), ScriptedPlanner({"task": changed}), journal)
    with pytest.raises(NondeterminismError) as caught:
        asyncio.run(runtime.resume("r-1"))
    message = str(caught.value)
    assert "run r-1, step 2" in message
    assert "recorded charge {'n': 2}" in message
    assert "gives launch {'n': 2}" in message
    journal.close()


def test_an_unfinished_plan_is_planned_again_and_continued(location: Path | str) -> None:
    effects = Effects()
    journal = crashed_journal(location, CHAIN[:1], {1: {"n": 1}}, [], plan_done=False)
    runtime = Runtime(effects.registry(), ScriptedPlanner({"task": Plan(CHAIN[:2])}), journal)
    result = asyncio.run(runtime.resume("r-1"))
    assert result.status is RunStatus.SUCCEEDED
    assert [(t, n) for t, n, _ in effects.calls] == [("charge", 2)]
    journal.close()


def test_a_durable_sleep_keeps_its_deadline_across_a_restart(
    location: Path | str, world: DemoWorld
) -> None:
    clock = FakeClock(start=160.0)  # the process restarts 60 s after the intent was written
    step = Step(1, "sleep", {"seconds": 100})
    journal = crashed_journal(location, [step], {}, [1])
    runtime = Runtime(demo_registry(world), None, journal, wall=clock, sleep=clock.sleep)
    result = asyncio.run(runtime.resume("r-1"))
    assert result.status is RunStatus.SUCCEEDED
    assert clock.slept[0] == 40.0  # only what remained of the 100 s
    assert clock.now == 200.0
    assert result.steps[0].result == {"woke_at": 200.0}
    journal.close()


def test_a_durable_sleep_of_a_week_is_not_cut_by_the_time_limit_of_a_call(
    location: Path | str, world: DemoWorld
) -> None:
    clock = FakeClock(start=100.0)
    week = 7 * 24 * 3600.0
    journal = crashed_journal(location, [Step(1, "sleep", {"seconds": week})], {}, [1])
    runtime = Runtime(
        demo_registry(world), None, journal, wall=clock, sleep=clock.sleep, clock=clock
    )
    result = asyncio.run(runtime.resume("r-1"))
    assert result.status is RunStatus.SUCCEEDED, result.steps[0].error
    assert clock.now == 100.0 + week
    journal.close()


def test_an_async_tool_is_reattached_to_its_job_not_submitted_again(location: Path | str) -> None:
    submitted: list[str] = []
    waited: list[str] = []

    class Jobs:
        async def submit(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> str:
            submitted.append(idempotency_key)
            return "job-new"

        async def wait(self, tool: str, handle: str) -> ToolResult:
            waited.append(handle)
            return ToolResult({"path": f"/reports/{handle}.md"}, 0.0)

        async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> Any:
            raise AssertionError("an async tool goes through submit/wait")

    registry = ToolRegistry()
    registry.register(_render_descriptor(), transport=Jobs())
    step = Step(1, "render", {"title": "Q1"})
    journal = crashed_journal(location, [step], {}, [1])
    asyncio.run(journal.append(StepJob("r-1", 101.0, 1, "job-41")))
    result = asyncio.run(Runtime(registry, None, journal).resume("r-1"))
    assert result.status is RunStatus.SUCCEEDED
    assert submitted == []
    assert waited == ["job-41"]
    assert result.steps[0].result == {"path": "/reports/job-41.md"}

    fresh = asyncio.run(
        Runtime(registry, ScriptedPlanner({"go": Plan([step])}), journal).run("go", run_id="r-2")
    )
    assert fresh.status is RunStatus.SUCCEEDED
    assert waited == ["job-41", "job-new"]
    assert len(submitted) == 1
    events = journal.read("r-2")
    jobs = [e for e in events if isinstance(e, StepJob)]
    assert [j.handle for j in jobs] == ["job-new"]  # journaled before the wait
    journal.close()


def _render_descriptor() -> Any:
    from ember import ToolDescriptor

    return ToolDescriptor(
        "render",
        {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
        "async",
        idempotent=True,
    )


def test_demo_async_report_resumes_from_its_job_without_a_second_report(
    location: Path | str, world: DemoWorld
) -> None:
    registry = demo_registry(world)
    args = {"title": "T", "sections": ["a"], "format": "markdown"}
    step = Step(1, "generate_report", args)
    journal = crashed_journal(location, [step], {}, [1])
    key = idempotency_key("r-1", 1, "generate_report", args)
    handle = asyncio.run(
        registry.get("generate_report").transport.submit(  # type: ignore[attr-defined]
            "generate_report", args, idempotency_key=key
        )
    )
    asyncio.run(journal.append(StepJob("r-1", 101.0, 1, handle)))
    result = asyncio.run(Runtime(registry, None, journal).resume("r-1"))
    assert result.status is RunStatus.SUCCEEDED
    assert [t for t, _ in world.effects()] == ["generate_report"]
    assert fold("r-1", journal.read("r-1")).steps[1].job == handle
    journal.close()


def test_a_retry_decision_is_used_up_by_the_retried_call(location: Path | str) -> None:
    """A person said retry; the retried call's intent was durable, then the process died again:
    the call is in doubt again (it may have happened), never retried a second time unasked."""
    effects = Effects()
    journal = crashed_journal(location, CHAIN, {1: {"n": 1}, 2: {"n": 2}}, [3])
    runtime = Runtime(effects.registry(), None, journal)
    assert asyncio.run(runtime.resume("r-1")).status is RunStatus.WAITING
    asyncio.run(runtime.resolve("r-1", 3, Decision.RETRY, "alice"))

    async def crash_during_the_retry() -> None:  # what the retry journals before its call
        key = idempotency_key("r-1", 3, "launch", {"n": 3})
        await journal.append(StepIntent("r-1", 100.0, 3, "launch", {"n": 3}, key))

    asyncio.run(crash_during_the_retry())
    assert fold("r-1", journal.read("r-1")).steps[3].decision is None
    again = asyncio.run(runtime.resume("r-1"))
    assert again.status is RunStatus.WAITING
    assert [s.status for s in again.steps][2] is StepStatus.IN_DOUBT
    assert effects.calls == []  # not called a second time on the first decision
    journal.close()


def test_a_retried_call_journals_its_intent_before_it_is_made(location: Path | str) -> None:
    """Without a control plane too: the retry's intent is written again before the call, so
    the decision is used up by it."""
    effects = Effects()
    journal = crashed_journal(location, CHAIN, {1: {"n": 1}, 2: {"n": 2}}, [3])
    runtime = Runtime(effects.registry(), None, journal)
    asyncio.run(runtime.resume("r-1"))  # in doubt
    asyncio.run(runtime.resolve("r-1", 3, Decision.RETRY, "alice"))
    assert asyncio.run(runtime.resume("r-1")).status is RunStatus.SUCCEEDED
    kinds = [type(e).__struct_config__.tag for e in journal.read("r-1")]
    retry = kinds.index("step.resolved")
    assert kinds[retry + 1 :].count("step.intent") == 2  # the retry's (3) and step 4's
    assert [(tool, n) for tool, n, _ in effects.calls] == [("launch", 3), ("charge", 4)]
    journal.close()
