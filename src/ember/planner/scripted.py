"""A deterministic planner: plans looked up by request text. For tests, benchmarks and demos.

`tokens_per_s` makes it emit each step only after the time a model would take to generate it
(its JSON's length / 4 characters per token), so streamed execution can be measured against
"wait for the whole plan" without a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import msgspec

from ember.errors import PlanError, PlannerError
from ember.plan import Plan, Step
from ember.planner.base import FirstToken, PlanEvent, PlanningTask

__all__ = ["DEMO_SCRIPT", "ScriptedPlanner", "load_script", "normalise_request"]

PlanSource = Plan | Callable[[date], Plan] | list[Plan]  # a list: one plan per attempt


def normalise_request(text: str) -> str:
    """Case-folded, whitespace collapsed, trailing punctuation dropped: the lookup key."""
    return " ".join(text.casefold().split()).rstrip(".!?。！？ ")


class ScriptedPlanner:
    """Plans from a script: request text -> a plan, or a function of today's date to a plan."""

    name = "scripted"

    def __init__(
        self,
        script: Mapping[str, PlanSource],
        *,
        tokens_per_s: float | None = None,
        sleep: Callable[[float], object] = asyncio.sleep,
    ) -> None:
        self._script = {normalise_request(request): plan for request, plan in script.items()}
        self._tokens_per_s = tokens_per_s
        self._sleep = sleep

    def warm(self, task: PlanningTask) -> None:
        """Nothing to get ready: the plans are in memory."""

    async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        source = self._script.get(normalise_request(task.request))
        if source is None:
            known = "\n  ".join(sorted(self._script))
            raise PlannerError(
                f"the scripted planner has no plan for {task.request!r}; it knows:\n  {known}\n"
                "Use --planner llama for any other request."
            )
        if isinstance(source, list):
            if task.attempt >= len(source):
                raise PlannerError(f"the script has no plan for attempt {task.attempt}")
            plan = source[task.attempt]
        else:
            plan = source if isinstance(source, Plan) else source(task.today)
        yield FirstToken()
        for step in plan.steps:
            if self._tokens_per_s:
                tokens = len(msgspec.json.encode(step)) / 4
                await self._sleep(tokens / self._tokens_per_s)  # type: ignore[misc]
            yield step


def load_script(path: str | Path) -> dict[str, PlanSource]:
    """Read a script file: a JSON object mapping request texts to plans."""
    try:
        raw = msgspec.json.decode(Path(path).read_bytes(), type=dict[str, Any])
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise PlannerError(
            f"cannot read script {path}: {exc}; it must be a JSON object "
            '{"request text": {"steps": [...]}}'
        ) from None
    script: dict[str, PlanSource] = {}
    for request, plan in raw.items():
        try:
            script[request] = Plan.from_json(plan)
        except PlanError as exc:
            raise PlannerError(f"script {path}, plan for {request!r}: {exc}") from None
    return script


def _travel(today: date) -> Plan:
    tomorrow = (today + timedelta(days=1)).isoformat()
    body = (
        "Your booking {$3.booking_id} at {$3.hotel_name}, {$3.city}: {$3.nights} nights from "
        "{$3.check_in}, {$3.total_price} {$3.currency}. Weather on arrival: {$1.forecast}, "
        "{$1.temp_c} °C."
    )
    return Plan(
        [
            Step(1, "get_weather", {"city": "Paris", "date": tomorrow}),
            Step(2, "search_hotels", {"city": "Paris", "check_in": tomorrow, "nights": 2}),
            Step(
                3,
                "book_hotel",
                {"hotel_id": "$2.hotels.0.hotel_id", "check_in": tomorrow, "nights": 2},
            ),
            Step(
                4,
                "send_email",
                {"to": "alice@example.com", "subject": "Your Paris booking", "body": body},
            ),
        ]
    )


DEMO_SCRIPT: dict[str, PlanSource] = {
    "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and email "
    "the booking to alice@example.com": _travel,
    "What's the weather in Tokyo on 2026-03-03?": Plan(
        [
            Step(1, "get_weather", {"city": "Tokyo", "date": "2026-03-03"}),
        ]
    ),
}
