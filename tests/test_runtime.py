"""The runtime end to end with the scripted planner, a real SQLite journal and the demo tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path

from ember import Plan, Runtime, ScriptedPlanner, SQLiteJournal, Step, ToolRegistry, tool
from ember.journal import RunStatus, StepStatus, fold
from ember.planner.base import FirstToken, PlanEvent, PlanningTask
from ember.planner.scripted import DEMO_SCRIPT
from ember.testing import FakeClock, MemoryJournal
from ember.tools.demo import DemoWorld

TRAVEL = (
    "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and "
    "email the booking to alice@example.com"
)


def test_travel_example_end_to_end(
    tmp_path: Path, registry: ToolRegistry, world: DemoWorld
) -> None:
    journal = SQLiteJournal(tmp_path / "ember.db")
    runtime = Runtime(registry, ScriptedPlanner(DEMO_SCRIPT), journal)
    result = asyncio.run(runtime.run(TRAVEL, today=date(2026, 3, 2), run_id="r-travel"))

    assert result.status is RunStatus.SUCCEEDED
    assert [(s.id, s.tool, s.status) for s in result.steps] == [
        (1, "get_weather", StepStatus.SUCCEEDED),
        (2, "search_hotels", StepStatus.SUCCEEDED),
        (3, "book_hotel", StepStatus.SUCCEEDED),
        (4, "send_email", StepStatus.SUCCEEDED),
    ]
    weather, hotels, booking, email = (s.result for s in result.steps)
    assert weather == {
        "city": "Paris",
        "date": "2026-03-03",
        "forecast": "partly cloudy",
        "temp_c": 9.8,
    }
    assert hotels["hotels"][0] == {
        "hotel_id": "H-PAR-01",
        "name": "Hotel Central Paris",
        "price_per_night": 85.0,
        "currency": "EUR",
    }
    assert result.steps[2].args == {"hotel_id": "H-PAR-01", "check_in": "2026-03-03", "nights": 2}
    assert booking["total_price"] == 170.0
    assert booking["hotel_name"] == "Hotel Central Paris"
    body = result.steps[3].args["body"]
    assert body == (
        f"Your booking {booking['booking_id']} at Hotel Central Paris, Paris: 2 nights "
        "from 2026-03-03, 170.0 EUR. Weather on arrival: partly cloudy, 9.8 °C."
    )
    sent = (world.outbox / f"{email['message_id']}.eml").read_text()
    assert "To: alice@example.com" in sent
    assert booking["booking_id"] in sent
    assert "`book_hotel`: booking_id: " + booking["booking_id"] in result.answer
    assert set(result.latency_ms) == {"l1_ttft", "l1_plan", "l2_overhead", "l3_persist", "l4_e2e"}
    assert (
        0
        < result.latency_ms["l1_ttft"]
        <= result.latency_ms["l1_plan"]
        <= result.latency_ms["l4_e2e"]
    )

    events = journal.read("r-travel")
    kinds = [type(e).__struct_config__.tag for e in events]
    assert kinds[0] == "run.started"
    assert kinds[-1] == "run.done"
    assert kinds.count("plan.step") == 4
    assert kinds.count("step.intent") == 4
    assert kinds.count("step.done") == 4
    for step_id in (1, 2, 3, 4):  # the intent is durable before the outcome, for every step
        order = [
            k for e, k in zip(events, kinds, strict=True) if getattr(e, "step_id", None) == step_id
        ]
        assert order == ["step.intent", "step.done"]
    intents = [e for e in events if type(e).__struct_config__.tag == "step.intent"]
    assert [tool for tool, _ in world.effects()] == ["book_hotel", "send_email"]
    assert {key for _, key in world.effects()} <= {e.idempotency_key for e in intents}  # type: ignore[attr-defined]
    state = fold("r-travel", events)
    assert state.status is RunStatus.SUCCEEDED
    assert state.answer == result.answer
    journal.close()


class Gate:
    """Async tools that wait for each other: proof that steps really run concurrently."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.both = asyncio.Event()

    def registry(self) -> ToolRegistry:
        registry = ToolRegistry()

        @tool
        async def left(x: int) -> int:
            """Waits until `right` has started too."""
            self.started.append("left")
            if len(self.started) == 2:
                self.both.set()
            await asyncio.wait_for(self.both.wait(), 5)
            return x + 1

        @tool
        async def right(x: int) -> int:
            """Waits until `left` has started too."""
            self.started.append("right")
            if len(self.started) == 2:
                self.both.set()
            await asyncio.wait_for(self.both.wait(), 5)
            return x + 2

        @tool(inline=True)
        def join(a: int, b: int) -> int:
            """Adds."""
            return a + b

        @tool(inline=True)
        def fail(x: int) -> int:
            """Always fails."""
            raise ValueError(f"cannot handle {x}")

        for fn in (left, right, join, fail):
            registry.register(fn)
        return registry


def run_plan(registry: ToolRegistry, plan: Plan) -> tuple:  # type: ignore[type-arg]
    journal = MemoryJournal()
    runtime = Runtime(registry, ScriptedPlanner({"go": plan}), journal)
    return asyncio.run(runtime.run("go", run_id="r-t")), journal


def test_independent_steps_run_concurrently_and_join() -> None:
    gate = Gate()
    plan = Plan(
        [
            Step(1, "left", {"x": 1}),
            Step(2, "right", {"x": 1}),
            Step(3, "join", {"a": "$1", "b": "$2"}),
        ]
    )
    result, _ = run_plan(gate.registry(), plan)
    assert result.status is RunStatus.SUCCEEDED
    assert sorted(gate.started) == ["left", "right"]
    assert result.steps[2].result == 5


def test_a_failed_branch_skips_dependants_but_not_unrelated_steps() -> None:
    gate = Gate()
    gate.both.set()
    plan = Plan(
        [
            Step(1, "fail", {"x": 7}),
            Step(2, "join", {"a": "$1", "b": 1}),
            Step(3, "join", {"a": "$2", "b": 1}),
            Step(4, "left", {"x": 1}),
        ]
    )
    result, journal = run_plan(gate.registry(), plan)
    assert result.status is RunStatus.FAILED
    assert [s.status for s in result.steps] == [
        StepStatus.FAILED,
        StepStatus.SKIPPED,
        StepStatus.SKIPPED,
        StepStatus.SUCCEEDED,
    ]
    assert result.steps[0].error == "step 1 (fail) failed: fail: ValueError: cannot handle 7"
    assert result.steps[1].error == "step 1 (fail) did not succeed"
    assert result.steps[2].error == "step 2 (join) did not succeed"
    assert result.error == result.steps[0].error
    assert "**skipped**" in result.answer
    state = fold("r-t", journal.events)
    assert [s.status for s in state.steps.values()] == [s.status for s in result.steps]


def test_bad_arguments_fail_the_step_with_a_message_naming_them(registry: ToolRegistry) -> None:
    plan = Plan([Step(1, "get_weather", {"city": "Paris", "date": "tomorrow"})])
    result, journal = run_plan(registry, plan)
    assert result.status is RunStatus.FAILED
    assert result.steps[0].error == (
        "step 1 of run r-t called get_weather with date='tomorrow': \"tomorrow\" does not match "
        "\"^[0-9]{4}-[0-9]{2}-[0-9]{2}$\" (rule 'pattern')"
    )
    assert not [e for e in journal.events if type(e).__struct_config__.tag == "step.intent"]


def test_plan_errors_fail_only_the_steps_concerned(registry: ToolRegistry) -> None:
    plan = Plan(
        [
            Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-03"}),
            Step(2, "summarize_text", {"text": "{$9.content}"}),
            Step(3, "summarize_text", {"text": "$4.summary"}),
            Step(4, "summarize_text", {"text": "$3.summary"}),
            Step(5, "teleport", {}),
        ]
    )
    result, _ = run_plan(registry, plan)
    assert [s.status for s in result.steps] == [StepStatus.SUCCEEDED] + [StepStatus.FAILED] * 4
    errors = [s.error for s in result.steps]
    assert errors[1] == "step 2 references step 9, which the plan lacks"
    assert "form a dependency cycle" in errors[2]
    assert "form a dependency cycle" in errors[3]
    assert "unknown tool 'teleport'" in errors[4]


def test_empty_plan_answers_without_tools(registry: ToolRegistry) -> None:
    result, _ = run_plan(registry, Plan([]))
    assert result.status is RunStatus.SUCCEEDED
    assert result.steps == []
    assert "No tool can do this" in result.answer


def test_steps_start_while_the_plan_is_still_streaming(registry: ToolRegistry) -> None:
    started_before_plan_done: list[int] = []
    plan_done = asyncio.Event()

    class SlowPlanner:
        name = "slow"

        async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
            yield FirstToken()
            yield Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-03"})
            for _ in range(50):  # the model is "still generating" step 2
                await asyncio.sleep(0)
            yield Step(2, "summarize_text", {"text": "{$1.forecast}"})
            plan_done.set()

    journal = MemoryJournal()

    async def observe() -> None:
        runtime = Runtime(registry, SlowPlanner(), journal)
        await runtime.run("x", run_id="r-s")

    asyncio.run(observe())
    for event in journal.events:
        if type(event).__struct_config__.tag == "step.done" and not plan_done.is_set():
            started_before_plan_done.append(event.step_id)  # type: ignore[attr-defined]
    kinds = [type(e).__struct_config__.tag for e in journal.events]
    # step 1 finished before step 2 was even planned
    assert kinds.index("step.done") < [i for i, k in enumerate(kinds) if k == "plan.step"][1]


def test_latency_comes_from_the_injected_clock(registry: ToolRegistry) -> None:
    clock = FakeClock()

    class TimedPlanner:
        name = "timed"

        async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
            clock.advance(0.180)
            yield FirstToken()
            clock.advance(0.120)
            yield Step(
                1, "convert_currency", {"amount": 1, "from_currency": "EUR", "to_currency": "USD"}
            )

    runtime = Runtime(registry, TimedPlanner(), MemoryJournal(), clock=clock)
    result = asyncio.run(runtime.run("x"))
    assert result.latency_ms == {
        "l1_ttft": 180.0,
        "l1_plan": 300.0,
        "l2_overhead": 0.0,
        "l3_persist": 0.0,
        "l4_e2e": 300.0,
    }


def test_a_run_started_inside_a_tool_call_keeps_its_steps_apart() -> None:
    """A step's task runs the chain's next step itself instead of creating a task for it;
    a whole run made inside a tool call (a sub-agent) must still run its own steps."""
    inner_registry = ToolRegistry()

    @tool(inline=True)
    def double(x: int) -> int:
        """Doubles."""
        return 2 * x

    inner_registry.register(double)
    chain = Plan([Step(i, "double", {"x": 1 if i == 1 else f"${i - 1}"}) for i in range(1, 6)])
    inner = Runtime(inner_registry, ScriptedPlanner({"inner": chain}), MemoryJournal())

    outer_registry = ToolRegistry()

    @tool
    async def delegate(x: int) -> int:
        """Runs the inner chain and adds its result."""
        result = await inner.run("inner")
        assert result.status is RunStatus.SUCCEEDED
        return x + int(result.steps[-1].result)

    @tool(inline=True)
    def increment(x: int) -> int:
        """Adds one."""
        return x + 1

    outer_registry.register(delegate)
    outer_registry.register(increment)
    outer = Plan(
        [
            Step(1, "increment", {"x": 0}),
            Step(2, "delegate", {"x": "$1"}),
            Step(3, "increment", {"x": "$2"}),
        ]
    )
    result, _ = run_plan(outer_registry, outer)
    assert result.status is RunStatus.SUCCEEDED
    assert [step.result for step in result.steps] == [1, 33, 34]
