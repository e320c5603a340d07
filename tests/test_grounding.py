"""A plan made elsewhere (an OpenAI-compatible server) is held to the decoder's rules (pure)."""

from __future__ import annotations

from datetime import date

from ember.plan import Step
from ember.planner.grounding import Grounds
from ember.tools.demo import demo_catalog

TODAY = date(2026, 3, 2)


def grounds(request: str) -> Grounds:
    return Grounds(tuple(demo_catalog()), request, TODAY)


def test_a_step_that_needs_a_value_nobody_gave_ends_the_plan() -> None:
    rules = grounds("Email the report to ann@example.com")
    invented = Step(1, "send_email", {"to": "bob@example.com", "subject": "R", "body": "b"})
    assert rules.repair(invented, []) is None
    given = Step(1, "send_email", {"to": "ann@example.com", "subject": "R", "body": "b"})
    assert rules.repair(given, []) == given


def test_what_the_request_never_says_is_left_out_when_optional() -> None:
    rules = grounds("Summarize 'the quick brown fox'")
    step = Step(1, "summarize_text", {"text": "the quick brown fox", "max_words": 50})
    assert rules.repair(step, []) == Step(1, "summarize_text", {"text": "the quick brown fox"})


def test_references_must_go_to_earlier_results_that_hold_such_a_value() -> None:
    rules = grounds("Look up customer C-20417 and email their tier to them")
    lookup = Step(1, "lookup_customer", {"customer_id": "C-20417"})
    assert rules.repair(lookup, []) == lookup
    email = Step(2, "send_email", {"to": "$1.email", "subject": "Tier", "body": "{$1.tier}"})
    assert rules.repair(email, [lookup]) == email
    wrong = Step(2, "send_email", {"to": "$1.name", "subject": "Tier", "body": "{$1.tier}"})
    assert rules.repair(wrong, [lookup]) is None


def test_dates_and_codes_must_exist() -> None:
    rules = grounds("Convert 100 RMB to euros, and weather in Oslo")
    assert rules.repair(Step(1, "get_weather", {"city": "Oslo", "date": "2026-02-30"}), []) is None
    rmb = Step(1, "convert_currency", {"amount": 100, "from_currency": "RMB", "to_currency": "EUR"})
    assert rules.repair(rmb, []) is None
    cny = Step(1, "convert_currency", {"amount": 100, "from_currency": "CNY", "to_currency": "EUR"})
    assert rules.repair(cny, []) == cny
