from __future__ import annotations

import pytest

from ember.errors import PlanError
from ember.plan import Plan, Reference, Step, dependencies, find_cycle, references, resolve
from ember.tools.check import check_reference_paths, check_step
from ember.tools.demo import demo_catalog

CATALOGUE = {d.tool_name: d for d in demo_catalog()}


def test_references_whole_and_embedded() -> None:
    args = {
        "hotel_id": "$2.hotels.0.hotel_id",
        "body": "Booked {$3.booking_id} ({$1})",
        "list": ["$4", "plain"],
    }
    assert list(references(args)) == [
        Reference(2, ("hotels", "0", "hotel_id")),
        Reference(3, ("booking_id",)),
        Reference(1, ()),
        Reference(4, ()),
    ]
    assert dependencies(Step(5, "send_email", args, after=[7])) == {1, 2, 3, 4, 7}


def test_malformed_reference_is_an_error() -> None:
    with pytest.raises(PlanError, match="malformed reference"):
        list(references({"x": "$1.hotels[0].hotel_id"}))
    assert list(references({"price": "$ 5 a night", "cost": "costs $5", "brace": "{$x}"})) == []


def test_resolve_replaces_values_and_text() -> None:
    results = {1: {"hotels": [{"hotel_id": "H-1", "price": 80.5}]}, 2: {"tags": ["a", "b"]}}
    args = {
        "id": "$1.hotels.0.hotel_id",
        "price": "$1.hotels.0.price",
        "text": "Hotel {$1.hotels.0.hotel_id} at {$1.hotels.0.price}, tags {$2.tags}",
        "whole": "{$2.tags}",
    }
    assert resolve(args, results) == {
        "id": "H-1",
        "price": 80.5,
        "text": 'Hotel H-1 at 80.5, tags ["a", "b"]',
        "whole": ["a", "b"],
    }
    with pytest.raises(PlanError, match=r"reference \$1.hotels.3 has no value at 'hotels.3'"):
        resolve({"x": "$1.hotels.3"}, results)


def test_find_cycle() -> None:
    a = Step(1, "t", {"x": "$3"})
    b = Step(2, "t", {"x": "$1"})
    c = Step(3, "t", after=[2])
    assert find_cycle({s.id: dependencies(s) for s in (a, b, c)}) in (
        [1, 3, 2, 1],
        [3, 2, 1, 3],
        [2, 1, 3, 2],
    )
    assert find_cycle({s.id: dependencies(s) for s in (b, Step(1, "t"), c)}) is None


def test_plan_json_round_trip_and_errors() -> None:
    plan = Plan.from_json('{"steps":[{"id":1,"tool":"get_weather","args":{"city":"Oslo"}}]}')
    assert plan.steps[0].after == []
    assert Plan.from_json(plan.to_json()) == plan
    with pytest.raises(PlanError, match="unknown field"):
        Plan.from_json({"steps": [{"id": 1, "tool": "x", "extra": 1}]})
    with pytest.raises(PlanError, match="positive integer"):
        Plan.from_json({"steps": [{"id": 0, "tool": "x"}]})
    with pytest.raises(PlanError, match="not valid JSON"):
        Plan.from_json("{steps")


def test_check_step_names_the_problem() -> None:
    with pytest.raises(PlanError, match="unknown tool 'fly'"):
        check_step(Step(1, "fly"), CATALOGUE)
    with pytest.raises(PlanError, match="lacks required argument.*date"):
        check_step(Step(1, "get_weather", {"city": "Oslo"}), CATALOGUE)
    with pytest.raises(PlanError, match="unknown argument.*units"):
        check_step(
            Step(1, "get_weather", {"city": "O", "date": "2026-01-01", "units": "C"}), CATALOGUE
        )
    with pytest.raises(PlanError, match="references its own result"):
        check_step(Step(2, "summarize_text", {"text": "$2.summary"}), CATALOGUE)
    check_step(Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-03"}), CATALOGUE)


def test_reference_paths_are_checked_against_returns() -> None:
    steps = {
        1: Step(1, "search_hotels", {"city": "P", "check_in": "2026-01-01", "nights": 1}),
        2: Step(
            2,
            "book_hotel",
            {"hotel_id": "$1.hotels.0.hotel_id", "check_in": "2026-01-01", "nights": 1},
        ),
        3: Step(3, "send_email", {"to": "a@b.co", "subject": "s", "body": "{$2.booking_ref}"}),
        4: Step(4, "send_email", {"to": "a@b.co", "subject": "s", "body": "{$9.x}"}, after=[8]),
    }
    assert check_reference_paths(steps, CATALOGUE) == [
        (3, "references $2.booking_ref, but book_hotel returns no field 'booking_ref'"),
        (4, "references step 9, which the plan lacks"),
        (4, "waits for step 8 (after), which the plan lacks"),
    ]
