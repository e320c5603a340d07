"""Observe, then plan on; then the answer: what the runtime asks of a planner after a plan's
steps ran (pure: no I/O).

- A round of planning on is worth asking for when a result that nothing used came in (a file
  read, a search made, a list fetched, and no step acted on it) and the request asks for
  actions, not a written answer (a question is answered from the results instead). At most
  `ExecutionSettings.max_rounds` rounds; a round that adds no step ends them.
- What the model sees of the results (`Observation`s) is data: the planner fences and labels
  them (`ember.planner.observe`) and its grounding rules decide which values a step may take.
"""

from __future__ import annotations

from collections.abc import Sequence

from ember.executor.checking import needs_answer
from ember.executor.steps import StepReport
from ember.journal import StepStatus
from ember.plan import ITEM, Step, references
from ember.planner.base import Observation

__all__ = ["dangling", "observations", "worth_a_round"]


def dangling(steps: Sequence[Step], reports: Sequence[StepReport]) -> list[int]:
    """The steps that succeeded and whose results no other step uses (by reference, as the
    list it goes through, or by waiting for it)."""
    used = {
        ref.step for step in steps for ref in references([step.args, step.each]) if ref.step != ITEM
    } | {dep for step in steps for dep in step.after}
    return [
        report.id
        for report in reports
        if report.status is StepStatus.SUCCEEDED and report.id not in used
    ]


def worth_a_round(request: str, steps: Sequence[Step], reports: Sequence[StepReport]) -> bool:
    """Whether to ask the planner to plan on (see the module docstring)."""
    return bool(steps) and not needs_answer(request) and bool(dangling(steps, reports))


def observations(reports: Sequence[StepReport]) -> tuple[Observation, ...]:
    """Every finished step's result (or error), in step order, as the model may see it."""
    return tuple(
        Observation(report.id, report.tool, True, report.result)
        if report.status is StepStatus.SUCCEEDED
        else Observation(report.id, report.tool, False, error=report.error)
        for report in reports
        if report.status in (StepStatus.SUCCEEDED, StepStatus.FAILED)
    )
