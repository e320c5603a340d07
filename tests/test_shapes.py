"""A plan remembered by its request's shape serves a request of the same shape (pure)."""

from __future__ import annotations

from datetime import date

from ember.plan import Step
from ember.planner.shapes import ShapeCache, shape_of

MONDAY = date(2026, 3, 2)
PARIS = (
    "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and "
    "email the booking to alice@example.com"
)
LISBON = (
    PARIS.replace("Paris", "Lisbon")
    .replace("2 nights", "3 nights")
    .replace("alice@example.com", "bob@example.org")
)
PLAN = [
    Step(1, "get_weather", {"city": "Paris", "date": "2026-03-03"}),
    Step(2, "search_hotels", {"city": "Paris", "check_in": "2026-03-03", "nights": 2}),
    Step(
        3, "book_hotel", {"hotel_id": "$2.hotels.0.hotel_id", "check_in": "2026-03-03", "nights": 2}
    ),
    Step(
        4,
        "send_email",
        {
            "to": "alice@example.com",
            "subject": "Hotel in Paris",
            "body": "Booked {$3.hotel_name}. {$1.forecast}",
        },
    ),
]


def test_requests_that_differ_in_their_values_have_one_shape() -> None:
    paris, lisbon = shape_of(PARIS, MONDAY), shape_of(LISBON, MONDAY)
    assert paris.key == lisbon.key
    assert paris.key.startswith("Check the weather in <name> tomorrow")
    assert "Lisbon" in lisbon.values
    assert shape_of("Check the weather in Paris on Friday", MONDAY).key != paris.key


def test_a_remembered_plan_is_filled_with_the_new_request_s_values() -> None:
    cache = ShapeCache()
    cache.remember(shape_of(PARIS, MONDAY), PLAN)
    recalled = cache.recall(shape_of(LISBON, date(2026, 3, 9)))
    assert recalled is not None
    assert recalled[0].args == {"city": "Lisbon", "date": "2026-03-10"}  # tomorrow, a week on
    assert recalled[1].args["nights"] == 3
    assert recalled[2].args["hotel_id"] == "$2.hotels.0.hotel_id"
    assert recalled[3].args["to"] == "bob@example.org"
    assert recalled[3].args["subject"] == "Hotel in Lisbon"  # a value inside a text
    assert recalled[3].args["body"] == "Booked {$3.hotel_name}. {$1.forecast}"
    assert cache.recall(shape_of("Something else entirely", MONDAY)) is None


def test_an_empty_plan_is_not_remembered() -> None:
    cache = ShapeCache()
    cache.remember(shape_of("Tell me a joke", MONDAY), [])
    assert cache.recall(shape_of("Tell me a joke", MONDAY)) is None
