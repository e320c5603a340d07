"""Fakes for testing code built on ember, shipped with it (as httpx ships MockTransport).

- `ScriptedPlanner`: plans looked up by request text (re-exported from ember.planner).
- `MockTransport`: a transport that answers calls with a handler function.
- `MemoryJournal`: a journal in a list (no durability; for tests of other layers only).
- `FakeClock`: a monotonic clock that moves only when told to.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ember.errors import JournalError, RunNotFoundError
from ember.journal import START, CommitListener, Event, Recorded, RunStatus, RunSummary, fold
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
    """Keeps events in a list (`events`, in append order), indexed by run for `read`. Each
    event is a row of its own: its position is (its number from 1, 0)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._by_run: dict[str, list[Recorded]] = {}
        self._listeners: list[CommitListener] = []

    async def append(self, event: Event) -> None:
        self.append_soon(event)

    def append_soon(self, event: Event) -> None:
        self.events.append(event)
        recorded = Recorded(len(self.events), 0, event)
        self._by_run.setdefault(event.run_id, []).append(recorded)
        for listener in self._listeners:
            listener([recorded])

    def watch(self, listener: CommitListener) -> None:
        self._listeners.append(listener)

    def read(self, run_id: str) -> list[Event]:
        return [recorded.event for recorded in self.read_after(run_id)]

    def read_after(self, run_id: str, after: tuple[int, int] = START) -> list[Recorded]:
        if run_id not in self._by_run:
            raise RunNotFoundError(run_id)
        return [r for r in self._by_run[run_id] if r.position > after]

    def runs(
        self,
        limit: int = 20,
        *,
        before: int | None = None,
        status: RunStatus | None = None,
        principal: str | None = None,
        since: float | None = None,
    ) -> list[RunSummary]:
        found = []
        for run_id in reversed(self._by_run):
            seq = self._by_run[run_id][0].seq
            state = fold(run_id, self.read(run_id))
            if (
                (before is None or seq < before)
                and (status is None or state.status is status)
                and (principal is None or state.principal == principal)
                and (since is None or state.started_at >= since)
            ):
                found.append(
                    RunSummary(
                        run_id, state.task, state.started_at, state.status, state.principal, seq
                    )
                )
        return found[:limit]

    def find_run(self, prefix: str) -> str:
        found = [run_id for run_id in self._by_run if run_id.startswith(prefix)][:2]
        if len(found) > 1:
            raise JournalError(f"run id prefix {prefix!r} is ambiguous: give more characters")
        if not found:
            raise RunNotFoundError(prefix)
        return found[0]


class FakeClock:
    """A clock for `Runtime(clock=..., wall=..., sleep=...)`: `now` moves only when told to.

    `sleep(s)` waits until the clock reaches now + s; every request is recorded in `slept`.
    `advance(s)` moves the clock and wakes the sleepers that are due. With `autojump` (the
    default), once the event loop has had a few idle turns the clock jumps to the earliest
    deadline by itself, so tests of timeouts and backoff take no real time and stay ordered.
    """

    def __init__(self, start: float = 0.0, *, autojump: bool = True) -> None:
        self.now = start
        self.slept: list[float] = []
        self.autojump = autojump
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._count = 0
        self._jumping = False

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self._wake()

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._count += 1
        entry = (self.now + max(0.0, seconds), self._count, future)
        self._waiters.append(entry)
        if self.autojump and not self._jumping:
            self._jumping = True
            loop.call_soon(self._idle, 20)
        try:
            await future
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    def _idle(self, turns: int) -> None:
        loop = asyncio.get_running_loop()
        if turns:
            loop.call_soon(self._idle, turns - 1)
            return
        live = [w for w in self._waiters if not w[2].done()]
        if live:
            self.now = max(self.now, min(live)[0])
            self._wake()
        if any(not w[2].done() for w in self._waiters):
            loop.call_soon(self._idle, 20)
        else:
            self._jumping = False

    def _wake(self) -> None:
        for deadline, _, future in sorted(self._waiters):
            if deadline <= self.now and not future.done():
                future.set_result(None)
