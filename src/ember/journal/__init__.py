"""The journal: append-only run events, durable before a tool is called; a run is their fold."""

from __future__ import annotations

from typing import Protocol

from ember.journal.events import (
    Decision,
    Event,
    PlanDone,
    PlanReplanned,
    PlanStep,
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
    "Decision",
    "Durability",
    "Event",
    "Journal",
    "PlanDone",
    "PlanReplanned",
    "PlanStep",
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
    """Where a run's events go. `append` returns once the event is durable."""

    async def append(self, event: Event) -> None:
        """Append one event; return when it is durable."""
        ...

    def append_soon(self, event: Event) -> None:
        """Queue one event, durable no later than any event appended after it."""
        ...

    def read(self, run_id: str) -> list[Event]:
        """Every event of a run, in append order; `RunNotFoundError` if it has none."""
        ...

    def runs(self, limit: int = 20) -> list[RunSummary]:
        """The most recent runs, newest first."""
        ...

    def find_run(self, prefix: str) -> str:
        """The full id of the one run whose id starts with `prefix`."""
        ...
