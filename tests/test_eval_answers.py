"""`ember eval answers`: the task set's shape, and the checker proven on plans known to be right
and wrong (scripted), with real tools and real effects."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from ember import Plan, Step
from ember.measure.answers_eval import evaluate_answers, load_tasks
from ember.testing import ScriptedPlanner

TASKS = Path(__file__).resolve().parents[1] / "evals" / "answers" / "tasks.jsonl"
CHECKS = ("answer", "outbox", "outbox_count", "effects", "files")


def test_the_set_has_forty_tasks_of_five_kinds_and_a_held_out_part() -> None:
    tasks = load_tasks(TASKS)
    assert len(tasks) >= 40
    assert len({t["id"] for t in tasks}) == len(tasks)
    splits = Counter(t["split"] for t in tasks)
    assert splits["heldout"] >= 10
    assert set(splits) == {"dev", "heldout"}
    assert {t["kind"] for t in tasks} == {
        "fan-out",
        "aggregation",
        "pick-best",
        "read-then-act",
        "summarize-structure",
    }
    assert all(any(check in t for check in CHECKS) for t in tasks)
    assert {t["catalogue"] for t in tasks} == {"demo", "packs"}


def test_a_right_plan_passes_and_a_wrong_one_fails_on_the_effects_it_left(tmp_path: Path) -> None:
    tasks = {t["id"]: t for t in load_tasks(TASKS)}
    chosen = [tasks["act-03"], tasks["pick-08"]]
    right = ScriptedPlanner(
        {
            tasks["act-03"]["request"]: Plan(
                [
                    Step(1, "lookup_customer", {"customer_id": "C-52001"}),
                    Step(
                        2,
                        "send_email",
                        {"to": "$1.email", "subject": "Your order", "body": "It is delayed."},
                    ),
                ]
            ),
            tasks["pick-08"]["request"]: Plan(
                [
                    Step(
                        1, "search_hotels", {"city": "Rome", "check_in": "2026-04-02", "nights": 2}
                    ),
                    Step(
                        2,
                        "book_hotel",
                        {"hotel_id": "$1.hotels.0.hotel_id", "check_in": "2026-04-02", "nights": 2},
                    ),
                ]
            ),
        }
    )
    summary = asyncio.run(evaluate_answers(right, chosen, progress=lambda _: None, work=tmp_path))
    assert summary["all"] == {"passed": 2, "n": 2, "rate": 1.0}
    wrong = ScriptedPlanner(
        {
            tasks["act-03"]["request"]: Plan(
                [Step(1, "send_email", {"to": "x@example.com", "subject": "s", "body": "delayed"})]
            ),
            tasks["pick-08"]["request"]: Plan(
                [
                    Step(
                        1,
                        "book_hotel",
                        {"hotel_id": "H-ROM-02", "check_in": "2026-04-02", "nights": 2},
                    )
                ]
            ),
        }
    )
    failed = asyncio.run(evaluate_answers(wrong, chosen, progress=lambda _: None, work=tmp_path))
    assert failed["all"]["passed"] == 0
    reasons = [reason for outcome in failed["tasks"] for reason in outcome["failed"]]
    assert "no message to tom.keller@keller-bau.de with ['delayed']" in reasons
    assert any(reason.startswith("no book_hotel with") for reason in reasons)


def test_each_effect_asked_for_is_an_effect_of_its_own(tmp_path: Path) -> None:
    """fan-08 asks for an event per to-do item: one event titled with all three is not three."""
    task = {t["id"]: t for t in load_tasks(TASKS)}["fan-08"]

    def events(*titles: str) -> Plan:
        return Plan(
            [
                Step(n, "create_calendar_event", {"title": title, "date": "2026-03-09"})
                for n, title in enumerate(titles, start=1)
            ]
        )

    one = ScriptedPlanner({task["request"]: events("renew passport, call the plumber, Porto")})
    lumped = asyncio.run(evaluate_answers(one, [task], progress=lambda _: None, work=tmp_path))
    assert lumped["tasks"][0]["failed"] == [
        "no create_calendar_event with {'title': 'plumber'}",
        "no create_calendar_event with {'title': 'Porto'}",
    ]
    three = ScriptedPlanner(
        {task["request"]: events("renew passport", "call the plumber", "book flights to Porto")}
    )
    each = asyncio.run(evaluate_answers(three, [task], progress=lambda _: None, work=tmp_path))
    assert each["all"]["passed"] == 1


def test_effects_are_paired_so_that_each_wanted_one_finds_one_if_it_can() -> None:
    from ember.measure.answers_eval import _unmatched

    wanted = [
        {"tool": "create_calendar_event", "args": {"title": "Porto"}},
        {"tool": "create_calendar_event", "args": {"title": "passport"}},
    ]
    events = [
        ("create_calendar_event", {"title": "renew passport before Porto"}),
        ("create_calendar_event", {"title": "book flights to Porto"}),
    ]
    assert _unmatched(wanted, events) == []  # Porto takes the second, passport the first
    assert _unmatched(wanted, events[:1]) == [wanted[1]]
