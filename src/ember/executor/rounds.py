"""Observe, then plan on; then the answer: what the runtime asks of a planner after a plan's
steps ran. The decisions (`worth_a_round`, `dangling`, `observations`) are pure; `plan_on`
and `answer` sequence the planner's calls and the journal's records for `Runtime`.

- A round of planning on is worth asking for when the plan ended on a read that nothing used
  (its last step's result holds a list or a text: a file read, a search made, a list fetched)
  and the request asks for actions, not a written answer (a question is answered from the
  results instead). A plan that ends on an action (a mail sent, a room booked with its
  receipt) asks for none, so an action-only request costs no model pass more. At most
  `ExecutionSettings.max_rounds` rounds; a round that adds no step ends them.
- A round is also asked after a step failed (a file that is no invoice, SQL naming a column
  that does not exist), for actions and questions alike: the failed steps and those skipped
  for them are set aside, and the model, seeing the error among the results, plans on from
  the steps that succeeded; a call that failed is not made again (`PlanningTask.failed`).
  Such a round takes the place of what it set aside: it adds at most one step more than that
  (a repair that runs on, eight calendar events for one, is cut there). Not after a step the
  policy or a person refused (an approval denied): a plan around a refusal is no repair.
- What the model sees of the results (`Observation`s) is data: the planner fences and labels
  them (`ember.planner.observe`) and its grounding rules decide which values a step may take.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import date
from typing import Any, Protocol

from ember.errors import ModelError, PlannerError
from ember.executor.checking import check_answer
from ember.executor.executor import RunExecution
from ember.executor.resilience import ExecutionSettings
from ember.executor.steps import Outcome, StepReport
from ember.journal import Journal, PlanObserved, RunAnswered, StepStatus
from ember.plan import ITEM, Step, references, renumber
from ember.planner.base import (
    Answers,
    AnswerTask,
    FirstToken,
    Observation,
    PlanEvent,
    Planner,
    PlanningTask,
    PlansOn,
)
from ember.planner.grounding import needs_answer
from ember.telemetry.latency import LatencyRecorder
from ember.tools.registry import ToolRegistry

__all__ = [
    "Host",
    "answer",
    "broken",
    "dangling",
    "observations",
    "plan_on",
    "renumbered",
    "worth_a_round",
]


class Host(Protocol):
    """What `plan_on` and `answer` use of the `Runtime` they run for."""

    planner: Planner | None
    registry: ToolRegistry
    journal: Journal
    settings: ExecutionSettings
    wall: Callable[[], float]
    clock: Callable[[], float]


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


def worth_a_round(
    request: str,
    steps: Sequence[Step],
    reports: Sequence[StepReport],
    returns: Mapping[str, dict[str, Any] | None],
) -> bool:
    """Whether to ask the planner to plan on (see the module docstring); `returns`: each
    tool's result schema."""
    if not steps or needs_answer(request):
        return False
    last = max(steps, key=lambda step: step.id)
    return last.id in dangling(steps, reports) and _reads(returns.get(last.tool))


def _reads(returns: dict[str, Any] | None) -> bool:
    """Whether a result of this schema carries data to act on: a list, or a text."""
    fields = (returns or {}).get("properties", {})
    return any(schema.get("type") == "array" or name in _TEXTS for name, schema in fields.items())


_TEXTS = frozenset({"content", "text", "body", "rows", "matches"})


def broken(reports: Sequence[StepReport]) -> tuple[list[int], list[int]]:
    """The steps that failed, and those skipped because a step they needed did not succeed."""
    return (
        [report.id for report in reports if report.status is StepStatus.FAILED],
        [report.id for report in reports if report.status is StepStatus.SKIPPED],
    )


async def renumbered(
    plan: AsyncIterator[PlanEvent], offset: int, above: int = 0
) -> AsyncIterator[PlanEvent]:
    """`plan` with its steps' ids moved up by `offset` (`ember.plan.renumber`): new steps
    follow every step the run has had, set aside or not."""
    async for item in plan:
        yield item if isinstance(item, FirstToken) else renumber(item, offset, above)


async def _at_most(plan: AsyncIterator[PlanEvent], steps: int) -> AsyncIterator[PlanEvent]:
    """`plan` cut after its first `steps` steps."""
    async for item in plan:
        if not isinstance(item, FirstToken):
            if steps == 0:
                return
            steps -= 1
        yield item


def observations(reports: Sequence[StepReport]) -> tuple[Observation, ...]:
    """Every finished step's result (or error), in step order, as the model may see it."""
    return tuple(
        Observation(report.id, report.tool, True, report.result)
        if report.status is StepStatus.SUCCEEDED
        else Observation(report.id, report.tool, False, error=report.error)
        for report in reports
        if report.status in (StepStatus.SUCCEEDED, StepStatus.FAILED)
    )


async def plan_on(
    runtime: Host, execution: RunExecution, outcome: Outcome, task: str, today: date
) -> Outcome:
    """Observe, then plan on (`ember.executor.rounds`): while a result nothing used came
    in, ask the planner to add steps, at most `max_rounds` times. A round is journaled
    (`plan.observed`) once planned: a resumed run replays its steps, not the model."""
    planner = runtime.planner
    if not isinstance(planner, PlansOn):
        return outcome
    done = execution.recorded.rounds if execution.recorded else 0
    for number in range(done + 1, runtime.settings.max_rounds + 1):
        steps = [run.step for run in execution.steps.values() if not run.superseded]
        current = [report for report in outcome.steps if report.id in {s.id for s in steps}]
        returns = {d.tool_name: d.returns for d in runtime.registry.descriptors()}
        failed, skipped = broken(current)
        if outcome.waiting or outcome.plan_error or execution.refused.intersection(failed):
            break
        if not failed and not worth_a_round(task, steps, current, returns):
            break
        aside = failed + skipped
        execution.set_aside(aside)
        kept = [step for step in steps if step.id not in aside]
        planning = PlanningTask(
            task,
            today,
            tuple(runtime.registry.descriptors()),
            earlier=tuple(kept),
            observations=observations(current),
            failed=tuple(step for step in steps if step.id in failed),
            max_steps=len(aside) + 1 if aside else None,
        )
        # The model numbers new steps after the kept ones; in the run they follow every step.
        last_kept = max((step.id for step in kept), default=0)
        offset = max(execution.steps, default=0) - last_kept
        before = len(execution.steps)
        stream = renumbered(planner.plan_on(planning), offset, above=last_kept)
        if planning.max_steps is not None:  # the decoder stops there; any planner is cut there
            stream = _at_most(stream, planning.max_steps)
        outcome = await execution.execute(_journaled(stream, runtime, execution.run_id, number))
        added = len(execution.steps) - before
        if not added and aside:  # nothing took their place: the failure stands
            execution.set_aside(aside, False)
            outcome = execution.outcome()
        if not added:
            break
    return outcome


async def _journaled(
    plan: AsyncIterator[PlanEvent], runtime: Host, run_id: str, number: int
) -> AsyncIterator[PlanEvent]:
    """`plan`, then round `number` journaled with the steps it added, as soon as it is planned
    (before its steps finish: a run resumed while they ran replays them and does not ask the
    model again) or as far as it got. What it set aside is recorded with the first of its
    steps (`PlanStep.supersedes`)."""
    added = 0
    try:
        async for item in plan:
            added += not isinstance(item, FirstToken)
            yield item
    finally:
        runtime.journal.append_soon(PlanObserved(run_id, runtime.wall(), number, added))


async def answer(
    runtime: Host,
    execution: RunExecution,
    outcome: Outcome,
    *,
    task: str,
    today: date,
    recorder: LatencyRecorder,
    on_text: Callable[[str], None] | None,
) -> RunAnswered | None:
    """The answer the model writes from the results, checked against them and the request,
    for a request that asks a question (`grounding.needs_answer`); None where the template
    answer stands (an action-only request, no planner that answers, no result, a model
    error). A resumed run's recorded answer is not written again."""
    if execution.recorded is not None and execution.recorded.written is not None:
        return execution.recorded.written
    planner = runtime.planner
    done = [step for step in outcome.steps if step.status is StepStatus.SUCCEEDED]
    if outcome.waiting or not done or not isinstance(planner, Answers):
        return None
    if not needs_answer(task):
        return None
    asking = AnswerTask(task, today, observations(outcome.steps))
    chunks: list[str] = []
    recorder.answer_mark()
    started = runtime.clock()
    try:
        async for chunk in planner.answer(asking):
            if not chunks:
                recorder.answer_mark()
            chunks.append(chunk)
            if on_text is not None:
                on_text(chunk)
    except (PlannerError, ModelError):
        return None  # the template answer stands
    if not chunks:
        recorder.answer_mark()
    recorder.answer_mark()
    text = "".join(chunks).strip()
    if not text:
        return None
    unfound = check_answer(text, task, [step.result for step in done])
    ms = (runtime.clock() - started) * 1000
    written = RunAnswered(execution.run_id, runtime.wall(), text, unfound, ms)
    runtime.journal.append_soon(written)
    return written
