"""One record per step while a run executes, and what an execution hands back (`Outcome`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from ember.journal import StepStatus
from ember.plan import Step

__all__ = ["Outcome", "StepReport", "StepRun"]

FINAL = (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED)
WAITING = (StepStatus.IN_DOUBT, StepStatus.AWAITING_APPROVAL)


class StepReport(msgspec.Struct, frozen=True):
    """One step of a finished run, as `ember run --json` prints it."""

    id: int
    tool: str
    args: dict[str, Any]
    result: Any
    status: StepStatus
    ms: float | None
    error: str | None = None


@dataclasses.dataclass(slots=True)
class StepRun:
    """A step of the run being executed: the planned step and what has happened to it so far.
    `args` are the resolved arguments once the step ran (or was recorded as run)."""

    step: Step
    status: StepStatus = StepStatus.PLANNED
    args: dict[str, Any] | None = None
    result: Any = None
    error: str | None = None
    ms: float | None = None
    superseded: bool = False  # by a replan: its outcome no longer decides the run's

    def report(self) -> StepReport:
        args = self.args if self.args is not None else self.step.args
        return StepReport(
            self.step.id, self.step.tool, args, self.result, self.status, self.ms, self.error
        )


class Outcome(msgspec.Struct, frozen=True):
    """What one pass of an execution left: every step (by id), the planner's error if any, and
    the wall time of the first tool call it made (None: it made none)."""

    steps: list[StepReport]
    plan_error: str | None
    succeeded: bool  # no planning error, and every step of the current plan succeeded
    waiting: list[int]  # steps waiting for a person: in doubt, or awaiting approval
    replans: int  # how many times the run was planned again so far
    first_dispatch: float | None = None

    @property
    def first_error(self) -> str | None:
        """The run's error: the planner's, else the first failed step's (by id)."""
        if self.plan_error:
            return self.plan_error
        return next((step.error for step in self.steps if step.error is not None), None)
