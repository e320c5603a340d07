"""The journal: append-only run events, durable before a tool is called (DESIGN.md)."""

from __future__ import annotations

from typing import Protocol

from ember.journal.events import (
    Event,
    PlanStep,
    RunDone,
    RunStarted,
    RunState,
    RunStatus,
    StepDone,
    StepFailed,
    StepIntent,
    StepSkipped,
    StepStatus,
    fold,
    idempotency_key,
)
from ember.journal.sqlite import Durability, RunSummary, SQLiteJournal

__all__ = [
    "Durability",
    "Event",
    "Journal",
    "PlanStep",
    "RunDone",
    "RunStarted",
    "RunState",
    "RunStatus",
    "RunSummary",
    "SQLiteJournal",
    "StepDone",
    "StepFailed",
    "StepIntent",
    "StepSkipped",
    "StepStatus",
    "fold",
    "idempotency_key",
]


class Journal(Protocol):
    """Where a run's events go. `append` returns once the event is durable."""

    async def append(self, event: Event) -> None:
        """Append one event; return when it is durable."""
        ...

    def read(self, run_id: str) -> list[Event]:
        """Every event of a run, in append order."""
        ...
