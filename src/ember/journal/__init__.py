"""The journal: append-only run events, durable before a tool is called; a run is their fold."""

from __future__ import annotations

from typing import Protocol

from ember.journal.events import (
    START,
    CommitListener,
    Decision,
    Event,
    PlanDone,
    PlanObserved,
    PlanReplanned,
    PlanStep,
    Recorded,
    RunAnswered,
    RunDone,
    RunResumed,
    RunStarted,
    RunState,
    RunStatus,
    RunSummary,
    RunWaiting,
    StepAwaitingApproval,
    StepDenied,
    StepDone,
    StepFailed,
    StepInDoubt,
    StepIntent,
    StepJob,
    StepResolved,
    StepRetrying,
    StepSkipped,
    StepState,
    StepStatus,
    fold,
    idempotency_key,
    run_document,
)
from ember.journal.sqlite import Durability, SQLiteJournal, open_database

__all__ = [
    "START",
    "CommitListener",
    "Decision",
    "Durability",
    "Event",
    "Journal",
    "PlanDone",
    "PlanObserved",
    "PlanReplanned",
    "PlanStep",
    "Recorded",
    "RunAnswered",
    "RunDone",
    "RunResumed",
    "RunStarted",
    "RunState",
    "RunStatus",
    "RunSummary",
    "RunWaiting",
    "SQLiteJournal",
    "StepAwaitingApproval",
    "StepDenied",
    "StepDone",
    "StepFailed",
    "StepInDoubt",
    "StepIntent",
    "StepJob",
    "StepResolved",
    "StepRetrying",
    "StepSkipped",
    "StepState",
    "StepStatus",
    "fold",
    "idempotency_key",
    "open_database",
    "run_document",
]


class Journal(Protocol):
    """Where a run's events go. `append` returns once the event is durable.

    Each durable event has a position (`Recorded`: the row's sequence number and the event's
    place in the row), growing in commit order: `read_after` reads a run from a position on,
    and `watch` hears of every commit as it becomes durable, with the positions it wrote, so a
    reader that subscribes, then reads, then keeps what is past the last position it saw,
    misses nothing and sees nothing twice (the server's event stream)."""

    async def append(self, event: Event) -> None:
        """Append one event; return when it is durable."""
        ...

    def append_soon(self, event: Event) -> None:
        """Queue one event, durable no later than any event appended after it."""
        ...

    def read(self, run_id: str) -> list[Event]:
        """Every event of a run, in append order; `RunNotFoundError` if it has none."""
        ...

    def read_after(self, run_id: str, after: tuple[int, int] = START) -> list[Recorded]:
        """The events of a run after position `after` (`START`: all), with their positions;
        `RunNotFoundError` if the run has no event."""
        ...

    def watch(self, listener: CommitListener) -> None:
        """Call `listener` after each commit with the events it made durable and their
        positions, in journal order (on the event loop that appended them; it must not block)."""
        ...

    def runs(
        self,
        limit: int = 20,
        *,
        before: int | None = None,
        status: RunStatus | None = None,
        principal: str | None = None,
        since: float | None = None,
    ) -> list[RunSummary]:
        """The most recent runs, newest first: started before journal position `before` (a
        `RunSummary.seq`: the next page), in `status`, started by `principal`, at or after
        `since` (epoch seconds), when given."""
        ...

    def find_run(self, prefix: str) -> str:
        """The full id of the one run whose id starts with `prefix`."""
        ...
