"""A step over a list (`Step.each`): what each item's call left, and what the step's outcome is
when every item has had its turn (pure: no I/O).

The executor runs one call per item, at most `max_concurrency` at a time, each journaled as a
call of its own (`step.intent` ... `step.done` with `item` set, an idempotency key of the step
and the item's index). After a crash the items already done are not called again; an item with
an intent and no outcome is re-dispatched with the same key (an idempotent tool) or held in
doubt, exactly like a step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ember.journal import StepState, StepStatus
from ember.plan import ITEM

__all__ = ["ItemOutcome", "WithItem", "combine"]


@dataclasses.dataclass(slots=True, frozen=True)
class ItemOutcome:
    """One item's call: its status (succeeded, failed, in doubt, awaiting approval), its result
    or its error."""

    status: StepStatus
    result: Any = None
    error: str | None = None

    @classmethod
    def recorded(cls, state: StepState) -> ItemOutcome:
        return cls(state.status, state.result, state.error)


class WithItem(Mapping[int, Any]):
    """The results references resolve to, and `$item`: the current item."""

    def __init__(self, results: Mapping[int, Any], item: Any) -> None:
        self._results = results
        self._item = item

    def __getitem__(self, step_id: int) -> Any:
        return self._item if step_id == ITEM else self._results[step_id]

    def __iter__(self) -> Iterator[int]:
        yield ITEM
        yield from self._results

    def __len__(self) -> int:
        return len(self._results) + 1


def combine(outcomes: Sequence[ItemOutcome]) -> tuple[StepStatus, Any, str | None]:
    """The step's outcome from its items': waiting (for an approval, or on an item in doubt)
    while any item waits; failed, naming how many items failed and the first error, if any
    failed; else succeeded, with the items' results in order."""
    for waiting in (StepStatus.AWAITING_APPROVAL, StepStatus.IN_DOUBT):
        held = [outcome for outcome in outcomes if outcome.status is waiting]
        if held:
            return waiting, None, held[0].error
    failed = [(i, o) for i, o in enumerate(outcomes) if o.status is not StepStatus.SUCCEEDED]
    if failed:
        index, first = failed[0]
        error = (
            f"{len(failed)} of {len(outcomes)} items failed; item {index}: "
            f"{first.error or first.status.value}"
        )
        return StepStatus.FAILED, None, error
    return StepStatus.SUCCEEDED, [outcome.result for outcome in outcomes], None
