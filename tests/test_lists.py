"""Steps over lists: a step that runs once per item of an earlier list result, each item a
journaled call of its own, resumed item by item after a crash."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ember import Plan, Runtime, ScriptedPlanner, SQLiteJournal, Step, ToolRegistry, tool
from ember.errors import PlanError
from ember.journal import (
    Decision,
    Event,
    PlanDone,
    PlanStep,
    RunStarted,
    RunStatus,
    StepDone,
    StepIntent,
    StepStatus,
    fold,
    idempotency_key,
)
from ember.plan import ITEM, Reference, dependencies, references, renumber, resolve
from ember.planner.compact import render_step
from ember.testing import MemoryJournal
from ember.tools.check import check_reference_paths, check_step

PEOPLE = [{"name": f"P{i}", "email": f"p{i}@example.com"} for i in range(5)]
SEND = Step(
    2,
    "send",
    {"to": "$item.email", "body": "Hello {$item.name}"},
    each="$1.rows",
)


class Mailer:
    """A list tool and a sending tool that records each message with its idempotency key."""

    def __init__(self, rows: list[dict[str, Any]], *, failing: str = "") -> None:
        self.rows = rows
        self.sent: list[tuple[str, str, str]] = []
        self.failing = failing

    def registry(self, *, idempotent: bool = True, risk: str = "low") -> ToolRegistry:
        registry = ToolRegistry()

        @tool(inline=True)
        def people() -> dict[str, Any]:
            """List the people."""
            return {"rows": self.rows}

        @tool(inline=True, idempotent=idempotent, risk=risk)
        def send(to: str, body: str, idempotency_key: str = "") -> dict[str, str]:
            """Send a message."""
            if to == self.failing:
                raise ValueError(f"no mailbox {to}")
            self.sent.append((to, body, idempotency_key))
            return {"sent_to": to}

        registry.register(people)
        registry.register(send)
        return registry


def plan() -> Plan:
    return Plan([Step(1, "people"), SEND])


def test_item_references_parse_resolve_and_renumber() -> None:
    assert list(references(SEND.args)) == [
        Reference(ITEM, ("email",)),
        Reference(ITEM, ("name",)),
    ]
    assert dependencies(SEND) == {1}  # the list's step; `$item` is no step
    moved = renumber(SEND, 10)
    assert moved.each == "$11.rows"
    assert moved.args == SEND.args  # `$item` stays
    assert resolve(SEND.args, {ITEM: PEOPLE[0]}) == {
        "to": "p0@example.com",
        "body": "Hello P0",
    }
    assert render_step(SEND) == (
        '2. for each item in $1.rows: send(to=$item.email, body="Hello {$item.name}")'
    )
    assert Plan.from_json(plan().to_json()) == plan()
    with pytest.raises(PlanError, match="'each' must be a reference"):
        Step(3, "send", {}, each="rows")


def test_item_references_are_checked_against_the_plan() -> None:
    catalogue = {d.tool_name: d for d in Mailer(PEOPLE).registry().descriptors()}
    assert check_step(SEND, catalogue) == {1}
    with pytest.raises(PlanError, match="does not run for each item"):
        check_step(Step(2, "send", {"to": "$item.email", "body": "x"}), catalogue)
    missing = Step(3, "send", {"to": "$item.email", "body": "x"}, each="$9.rows")
    problems = check_reference_paths({1: Step(1, "people"), 3: missing}, catalogue)
    assert problems
    assert all("step 9" in problem for _, problem in problems)


def test_a_step_over_a_list_calls_once_per_item_with_its_own_key() -> None:
    mailer = Mailer(PEOPLE)
    journal = MemoryJournal()
    runtime = Runtime(mailer.registry(), ScriptedPlanner({"mail": plan()}), journal)
    result = asyncio.run(runtime.run("mail", run_id="r-1"))
    assert result.status is RunStatus.SUCCEEDED
    assert sorted(to for to, _, _ in mailer.sent) == [p["email"] for p in PEOPLE]
    keys = {key for _, _, key in mailer.sent}
    assert len(keys) == len(PEOPLE)
    expected = idempotency_key(
        "r-1", 2, "send", {"to": "p3@example.com", "body": "Hello P3"}, item=3
    )
    assert expected in keys
    assert expected.startswith("r-1:2.3:")
    assert result.steps[1].result == [{"sent_to": p["email"]} for p in PEOPLE]  # in order
    intents = [e for e in journal.read("r-1") if isinstance(e, StepIntent) and e.step_id == 2]
    assert sorted(e.item for e in intents if e.item is not None) == list(range(len(PEOPLE)))
    state = fold("r-1", journal.read("r-1"))
    assert state.steps[2].status is StepStatus.SUCCEEDED
    assert len(state.steps[2].items) == len(PEOPLE)


def test_a_failed_item_fails_the_step_and_names_it_but_the_others_are_sent() -> None:
    mailer = Mailer(PEOPLE, failing="p2@example.com")
    registry = mailer.registry()
    runtime = Runtime(registry, ScriptedPlanner({"mail": plan()}), MemoryJournal())
    result = asyncio.run(runtime.run("mail", run_id="r-1"))
    assert result.status is RunStatus.FAILED
    assert len(mailer.sent) == 4
    assert result.steps[1].error is not None
    assert "1 of 5 items failed; item 2" in result.steps[1].error
    assert "no mailbox p2@example.com" in result.steps[1].error


def test_an_empty_list_runs_no_call_and_succeeds_with_no_results() -> None:
    mailer = Mailer([])
    runtime = Runtime(mailer.registry(), ScriptedPlanner({"mail": plan()}), MemoryJournal())
    result = asyncio.run(runtime.run("mail"))
    assert result.status is RunStatus.SUCCEEDED
    assert result.steps[1].result == []
    assert mailer.sent == []


def test_a_reference_that_is_no_list_fails_the_step() -> None:
    mailer = Mailer(PEOPLE)
    bad = Plan([Step(1, "people"), Step(2, "send", {"to": "$item", "body": "x"}, each="$1")])
    runtime = Runtime(mailer.registry(), ScriptedPlanner({"mail": bad}), MemoryJournal())
    result = asyncio.run(runtime.run("mail"))
    assert result.status is RunStatus.FAILED
    assert "which is not a list" in (result.steps[1].error or "")
    assert mailer.sent == []


def _crashed(path: Path, done: range, interrupted: list[int]) -> SQLiteJournal:
    """A journal as a crash leaves it mid-fan-out: items in `done` sent, those in
    `interrupted` with an intent and no outcome."""
    journal = SQLiteJournal(path)
    events: list[Event] = [RunStarted("r-1", 1.0, "mail", "scripted", "2026-03-02", "gone:1")]
    events += [PlanStep("r-1", 1.0, step) for step in plan().steps]
    events += [PlanDone("r-1", 1.0, 2), StepDone("r-1", 1.0, 1, {"rows": PEOPLE}, 1.0, 0.5)]
    for index in [*done, *interrupted]:
        person = PEOPLE[index]
        args = {"to": person["email"], "body": f"Hello {person['name']}"}
        key = idempotency_key("r-1", 2, "send", args, item=index)
        events.append(StepIntent("r-1", 1.0, 2, "send", args, key, item=index))
        if index in done:
            events.append(StepDone("r-1", 1.0, 2, {"sent_to": person["email"]}, 1.0, 0.5, index))

    async def write() -> None:
        for event in events:
            await journal.append(event)

    asyncio.run(write())
    return journal


def test_resume_sends_only_the_items_not_done_and_the_interrupted_with_the_same_key(
    tmp_path: Path,
) -> None:
    mailer = Mailer(PEOPLE)
    journal = _crashed(tmp_path / "j.db", range(2), [2])
    result = asyncio.run(Runtime(mailer.registry(), None, journal).resume("r-1"))
    assert result.status is RunStatus.SUCCEEDED
    assert [to for to, _, _ in sorted(mailer.sent)] == [p["email"] for p in PEOPLE[2:]]
    key2 = idempotency_key("r-1", 2, "send", {"to": "p2@example.com", "body": "Hello P2"}, item=2)
    assert key2 in {key for _, _, key in mailer.sent}  # re-dispatched under its own key
    assert result.steps[1].result == [{"sent_to": p["email"]} for p in PEOPLE]
    journal.close()


def test_an_interrupted_item_of_a_tool_that_is_not_idempotent_waits_for_a_decision(
    tmp_path: Path,
) -> None:
    mailer = Mailer(PEOPLE)
    journal = _crashed(tmp_path / "j.db", range(2), [2])
    runtime = Runtime(mailer.registry(idempotent=False), None, journal)
    waiting = asyncio.run(runtime.resume("r-1"))
    assert waiting.status is RunStatus.WAITING
    assert "is not idempotent" in (waiting.error or "")
    assert sorted(to for to, _, _ in mailer.sent) == ["p3@example.com", "p4@example.com"]
    assert fold("r-1", journal.read("r-1")).steps[2].status is StepStatus.IN_DOUBT
    asyncio.run(runtime.resolve("r-1", 2, Decision.SKIP))  # the operator saw it was sent
    done = asyncio.run(runtime.resume("r-1"))
    assert done.status is RunStatus.SUCCEEDED
    assert len(mailer.sent) == 2  # item 2 taken as done, nothing sent again
    journal.close()


def test_a_high_risk_step_over_a_list_asks_one_approval_for_all_its_items(
    tmp_path: Path,
) -> None:
    mailer = Mailer(PEOPLE)
    journal = SQLiteJournal(tmp_path / "j.db")
    runtime = Runtime(mailer.registry(risk="high"), ScriptedPlanner({"mail": plan()}), journal)
    waiting = asyncio.run(runtime.run("mail", run_id="r-1"))
    assert waiting.status is RunStatus.WAITING
    assert mailer.sent == []
    kinds = [type(e).__struct_config__.tag for e in journal.read("r-1")]
    assert kinds.count("step.awaiting_approval") == 1  # once for the step, not per item
    asyncio.run(runtime.resolve("r-1", 2, Decision.APPROVE))
    done = asyncio.run(runtime.resume("r-1"))
    assert done.status is RunStatus.SUCCEEDED
    assert sorted(to for to, _, _ in mailer.sent) == [p["email"] for p in PEOPLE]
    journal.close()
