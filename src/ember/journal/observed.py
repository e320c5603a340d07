"""A journal wrapper that shows each event to an observer once it is durable (composition)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ember.journal import START, CommitListener, Event, Journal, Recorded, RunStatus, RunSummary

__all__ = ["ObservedJournal"]


class ObservedJournal:
    """Appends to `inner`, whose commits show `observer` each event once it is durable, with
    its position in the journal (`Recorded`), in journal order: how `ember run` shows live
    progress and `ember serve` feeds its exporters and event streams."""

    def __init__(self, inner: Journal, observer: Callable[[Recorded], None]) -> None:
        self.inner = inner
        self.observer = observer
        inner.watch(self._committed)

    def _committed(self, recorded: Sequence[Recorded]) -> None:
        for one in recorded:
            self.observer(one)

    async def append(self, event: Event) -> None:
        await self.inner.append(event)

    def append_soon(self, event: Event) -> None:
        self.inner.append_soon(event)

    def watch(self, listener: CommitListener) -> None:
        self.inner.watch(listener)

    def read(self, run_id: str) -> list[Event]:
        return self.inner.read(run_id)

    def read_after(self, run_id: str, after: tuple[int, int] = START) -> list[Recorded]:
        return self.inner.read_after(run_id, after)

    def runs(
        self,
        limit: int = 20,
        *,
        before: int | None = None,
        status: RunStatus | None = None,
        principal: str | None = None,
        since: float | None = None,
    ) -> list[RunSummary]:
        return self.inner.runs(
            limit, before=before, status=status, principal=principal, since=since
        )

    def find_run(self, prefix: str) -> str:
        return self.inner.find_run(prefix)
