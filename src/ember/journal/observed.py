"""A journal wrapper that shows each event to an observer once it is durable (composition)."""

from __future__ import annotations

from collections.abc import Callable

from ember.journal import Event, Journal, RunSummary

__all__ = ["ObservedJournal"]


class ObservedJournal:
    """Appends to `inner`, then calls `observer(event)`: how `ember run` shows live progress."""

    def __init__(self, inner: Journal, observer: Callable[[Event], None]) -> None:
        self.inner = inner
        self.observer = observer

    async def append(self, event: Event) -> None:
        await self.inner.append(event)
        self.observer(event)

    def append_soon(self, event: Event) -> None:
        self.inner.append_soon(event)
        self.observer(event)

    def read(self, run_id: str) -> list[Event]:
        return self.inner.read(run_id)

    def runs(self, limit: int = 20) -> list[RunSummary]:
        return self.inner.runs(limit)

    def find_run(self, prefix: str) -> str:
        return self.inner.find_run(prefix)
