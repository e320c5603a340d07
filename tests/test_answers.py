"""The answer: a request that asks a question gets an answer the model writes from the results
(here the real answer writer over a fake model), checked for what it states that the results
and the request do not hold; an action-only request keeps the template answer."""

from __future__ import annotations

import asyncio
from datetime import date

from ember import Runtime, SQLiteJournal, ToolRegistry
from ember.executor.checking import check_answer
from ember.journal import RunAnswered, RunStatus
from ember.planner.answering import STOP, build_answer_prompt, write_answer
from ember.planner.base import AnswerTask, Observation
from ember.planner.grounding import needs_answer
from ember.testing import MemoryJournal

from .fake_planner import FakeModelPlanner
from .test_decoding import PLAN, WishfulModel

TODAY = date(2026, 3, 2)
WEATHER = "What's the weather in Oslo on 2026-03-05?"
WEATHER_PLAN = '1. get_weather(city="Oslo", date="2026-03-05")\ndone'
EMAIL = "Email 'all good' to ann@example.com"
EMAIL_PLAN = '1. send_email(to="ann@example.com", subject="All good", body="all good")\ndone'


def test_questions_and_written_products_want_an_answer_actions_do_not() -> None:
    assert needs_answer(WEATHER)
    assert needs_answer("Which hotel in Paris is cheapest for 2 nights from 2026-03-05")
    assert needs_answer("Summarize /srv/notes/q1.txt")
    assert needs_answer("Compare the three statements")
    assert not needs_answer(EMAIL)
    assert not needs_answer("Book the cheapest hotel in Paris for 2 nights")
    assert not needs_answer("Summarize /srv/a.txt and save the summary to /srv/b.txt")
    assert not needs_answer("Summarize /srv/a.txt and email it to bob@example.com")


def test_the_check_finds_what_no_result_or_request_holds() -> None:
    results = [
        {"hotels": [{"name": "Hotel Central Paris", "price_per_night": 85.0, "id": "H-PAR-01"}]},
        {"rows": [{"total": 120.25}, {"total": 79.75}], "currency": "EUR", "margin": 0.423},
    ]
    request = "Which hotel is cheapest on 2026-03-05?"
    good = (
        "Hotel Central Paris (H-PAR-01) is cheapest at 85 EUR a night on 2026-03-05; "
        "the 2 invoices total 200.00, 100.0 on average; a margin of 42.3%."
    )
    assert check_answer(good, request, results) == []  # rounded, counted, summed, averaged
    bad = "Grand Hotel Borealis (H-PAR-99) costs 97.50 a night on 2026-03-07."
    assert check_answer(bad, request, results) == [
        "date 2026-03-07",
        "id H-PAR-99",
        "number 97.50",
        "name Grand Hotel Borealis",
    ]


def test_the_answer_is_written_as_the_model_wishes_and_streamed() -> None:
    task = AnswerTask(WEATHER, TODAY, (Observation(1, "get_weather", True, {"temp_c": 4.5}),))
    prompt = build_answer_prompt(task)
    assert '<result step="1" tool="get_weather">{"temp_c": 4.5}</result>' in prompt
    model = WishfulModel("It will be 4.5 °C in Oslo." + STOP)
    chunks: list[str] = []
    text = write_answer(
        model, model.vocab, model.tokenize((prompt + PLAN).encode(), special=True), chunks.append
    )
    assert text == "It will be 4.5 °C in Oslo."
    assert "".join(chunks) == text
    assert len(chunks) > 1  # streamed as it is written


def _forecast(registry: ToolRegistry) -> dict[str, object]:
    planner = FakeModelPlanner({WEATHER: WEATHER_PLAN}, answers={WEATHER: "x"})
    result = asyncio.run(Runtime(registry, planner, MemoryJournal()).run(WEATHER, today=TODAY))
    forecast = result.steps[0].result
    assert isinstance(forecast, dict)
    return forecast


def test_a_question_is_answered_by_the_model_and_its_claims_checked(
    registry: ToolRegistry,
) -> None:
    forecast = _forecast(registry)
    wish = f"In Oslo on 2026-03-05: {forecast['forecast']}, {forecast['temp_c']} °C, 12 mm rain."
    planner = FakeModelPlanner({WEATHER: WEATHER_PLAN}, answers={WEATHER: wish})
    journal = MemoryJournal()
    streamed: list[str] = []
    runtime = Runtime(registry, planner, journal)
    result = asyncio.run(runtime.run(WEATHER, today=TODAY, run_id="r-1", on_text=streamed.append))
    assert result.status is RunStatus.SUCCEEDED
    assert result.answer.startswith(wish)
    assert "".join(streamed) == wish
    assert result.unverified == ["number 12"]  # the rain was made up; the rest is in the result
    assert "Not found in the results or the request: number 12" in result.answer
    answer = result.latency_ms  # the answer's figures in order, not a speed target
    assert 0 <= answer["l1_answer_ttft"] <= answer["l1_answer"]
    written = [e for e in journal.read("r-1") if isinstance(e, RunAnswered)]
    assert [e.text for e in written] == [wish]


def test_an_action_only_request_keeps_the_template_answer(registry: ToolRegistry) -> None:
    planner = FakeModelPlanner({EMAIL: EMAIL_PLAN}, answers={EMAIL: "Sent!"})
    result = asyncio.run(Runtime(registry, planner, MemoryJournal()).run(EMAIL, today=TODAY))
    assert result.status is RunStatus.SUCCEEDED
    assert planner.calls["answer"] == 0
    assert result.answer.startswith(f"**Task:** {EMAIL}")
    assert "l1_answer" not in result.latency_ms


def test_a_resumed_run_reuses_its_recorded_answer(registry: ToolRegistry, tmp_path) -> None:
    forecast = _forecast(registry)
    wish = f"{forecast['forecast']}, {forecast['temp_c']} °C."
    planner = FakeModelPlanner({WEATHER: WEATHER_PLAN}, answers={WEATHER: wish})
    journal = SQLiteJournal(tmp_path / "j.db")
    runtime = Runtime(registry, planner, journal)
    asyncio.run(runtime.run(WEATHER, today=TODAY, run_id="r-1"))
    events = journal.read("r-1")
    journal.close()
    crashed = SQLiteJournal(tmp_path / "crashed.db")  # the same run, cut before its run.done

    async def copy() -> None:
        for event in events[:-1]:
            await crashed.append(event)

    asyncio.run(copy())
    again = FakeModelPlanner({WEATHER: WEATHER_PLAN}, answers={WEATHER: "something else"})
    resumed = asyncio.run(Runtime(registry, again, crashed).resume("r-1"))
    assert resumed.answer == wish
    assert again.calls["answer"] == 0
    crashed.close()
