"""Fakes for testing code built on ember, shipped with it (as httpx ships MockTransport).

- `ScriptedPlanner`: plans looked up by request text (re-exported from ember.planner).
- `MockTransport`: a transport that answers calls with a handler function.
- `MemoryJournal`: a journal in a list (no durability; for tests of other layers only).
- `FakeClock`: a monotonic clock that moves only when told to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.errors import RunNotFoundError
from ember.journal import Event
from ember.planner.scripted import ScriptedPlanner
from ember.tools.transport import ToolResult

__all__ = ["FakeClock", "MemoryJournal", "MockTransport", "ScriptedPlanner"]


class MockTransport:
    """Answers `call(tool, args)` with `handler(tool, args)`; records every call in `calls`."""

    def __init__(self, handler: Callable[[str, dict[str, Any]], Any]) -> None:
        self.handler = handler
        self.calls: list[tuple[str, dict[str, Any], str]] = []

    async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> ToolResult:
        self.calls.append((tool, args, idempotency_key))
        return ToolResult(self.handler(tool, args), 0.0)


class MemoryJournal:
    """Keeps events in a list, in append order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def append(self, event: Event) -> None:
        self.events.append(event)

    def append_soon(self, event: Event) -> None:
        self.events.append(event)

    def read(self, run_id: str) -> list[Event]:
        found = [event for event in self.events if event.run_id == run_id]
        if not found:
            raise RunNotFoundError(run_id)
        return found


class FakeClock:
    """A clock for `Runtime(clock=..., wall=..., sleep=...)`: returns `now`, which only
    `advance` and `sleep` change; `sleep` records each wait in `slept` and returns at once."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
