"""Journal events: kind-tagged, frozen records. A run is the fold of its events.

```
run.started    the task, the planner, today's date, the owning process
plan.step      a step as the planner emitted it (the first of a round after a failure: the
               steps it sets aside)
plan.done      the planner finished: the recorded steps are the whole plan
step.intent    written and durable BEFORE the tool is called, with the idempotency key
step.job       an async tool accepted the call: the job handle to re-attach to after a crash
step.done      the result, the tool's self-time
step.failed    the error (a tool error, bad arguments, an unresolvable reference)
step.skipped   a step that cannot run because a step it depends on failed
step.retrying  a retryable failure: the attempt, the error and the backoff before the next
step.in_doubt  recovery found an intent without outcome for a tool that is not idempotent
step.awaiting_approval  a step waits for a person's approval before its intent (high-risk, or a
               policy rule marked `@require_approval`)
step.denied    the policy denied the call: the rule (or the missing permit) and the reason
step.resolved  a person's decision: retry / skip / fail (in doubt), approve / deny (approval)
plan.replanned the plan failed; the planner was asked again (the failed steps are superseded)
run.resumed    another process took the run over after a crash or restart
plan.observed  a round of planning on after results came in: how many steps it added (the
               first step of a round after a failure names the steps it sets aside)
run.answered   the answer the model wrote from the results, and what it states that they
               and the request do not hold
run.waiting    the run stopped with steps in doubt; it waits for decisions
run.done       final status, answer, latency figures and spans
```

A step over a list (`Step.each`) runs one call per item: its `step.intent`, `step.job`,
`step.done`, `step.failed`, `step.in_doubt` and `step.denied` records carry the item's index
(`item`), and the step itself ends with a `step.done` (the items' results, in order) or a
`step.failed` without one.

Events that record a policy decision carry the control plane's version they were decided
under (`policy`); the SQLite journal commits such an event only while that version is still the
current one (else `PolicyChangedError`: decide again), and appends an audit entry for it in the
same commit (`ember.journal.audit`). `policy` is None where no control plane decided (a library
`Runtime` without one, or a journal written before it existed).
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ember.plan import Step, canonical_args

__all__ = [
    "START",
    "CommitListener",
    "Decision",
    "Event",
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
    "decode_events",
    "encode_event",
    "fold",
    "idempotency_key",
]


class RunStatus(enum.StrEnum):
    RUNNING = "running"
    WAITING = "waiting"  # for decisions about in-doubt steps
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StepStatus(enum.StrEnum):
    PLANNED = "planned"
    RUNNING = "running"
    IN_DOUBT = "in_doubt"
    AWAITING_APPROVAL = "awaiting_approval"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


class Decision(enum.StrEnum):
    """An in-doubt step: call it again (same key), take it as done, or fail it.
    A step awaiting approval: approve (it runs) or deny (it fails)."""

    RETRY = "retry"
    SKIP = "skip"
    FAIL = "fail"
    APPROVE = "approve"
    DENY = "deny"


class _Event(msgspec.Struct, frozen=True, tag_field="kind"):
    run_id: str
    at: float  # wall-clock seconds since the epoch


class RunStarted(_Event, frozen=True, tag="run.started"):
    task: str
    planner: str
    today: str
    owner: str = ""  # "host:pid" of the process running it
    principal: str = ""  # who started it ("" in journals written before principals existed)


class PlanDone(_Event, frozen=True, tag="plan.done"):
    steps: int


class PlanStep(_Event, frozen=True, tag="plan.step"):
    """A step planned. The first step of a round after a failure carries the steps it sets
    aside (`supersedes`): recorded with the step that replaces them, never without it."""

    step: Step
    supersedes: list[int] = []


class StepIntent(_Event, frozen=True, tag="step.intent"):
    step_id: int
    tool: str
    args: dict[str, Any]
    idempotency_key: str
    principal: str = ""  # on whose behalf the call is made
    policy: int | None = None  # the control plane's version the call was allowed under
    rule: str = ""  # the rules that allowed it
    item: int | None = None  # the item's index, for one call of a step over a list


class StepJob(_Event, frozen=True, tag="step.job"):
    step_id: int
    handle: str
    item: int | None = None


class StepDone(_Event, frozen=True, tag="step.done"):
    step_id: int
    result: Any
    ms: float
    self_ms: float
    item: int | None = None


class StepFailed(_Event, frozen=True, tag="step.failed"):
    step_id: int
    error: str
    ms: float
    item: int | None = None


class StepSkipped(_Event, frozen=True, tag="step.skipped"):
    step_id: int
    reason: str


class StepRetrying(_Event, frozen=True, tag="step.retrying"):
    step_id: int
    attempt: int
    error: str
    delay_s: float


class StepAwaitingApproval(_Event, frozen=True, tag="step.awaiting_approval"):
    step_id: int
    tool: str
    args: dict[str, Any]
    principal: str = ""
    policy: int | None = None
    rule: str = ""  # why it needs an approval: `risk=high`, or the rule that asks for one


class StepDenied(_Event, frozen=True, tag="step.denied"):
    """The policy refused the call: the step fails with `reason`, which names the rule."""

    step_id: int
    tool: str
    args: dict[str, Any]
    reason: str
    principal: str = ""
    policy: int | None = None
    rule: str = ""
    item: int | None = None


class PlanReplanned(_Event, frozen=True, tag="plan.replanned"):
    attempt: int
    superseded: list[int]
    feedback: str


class StepInDoubt(_Event, frozen=True, tag="step.in_doubt"):
    step_id: int
    reason: str
    item: int | None = None


class StepResolved(_Event, frozen=True, tag="step.resolved"):
    step_id: int
    decision: Decision
    by: str = ""
    policy: int | None = None  # for an approval: the version that allowed `by` to give it
    rule: str = ""


class RunResumed(_Event, frozen=True, tag="run.resumed"):
    owner: str


class RunWaiting(_Event, frozen=True, tag="run.waiting"):
    in_doubt: list[int]


class PlanObserved(_Event, frozen=True, tag="plan.observed"):
    """A round of planning on after results came in (observe, then plan on): its number (from
    1) and the steps it added (their `plan.step` records come first; a round after a failure
    sets steps aside in its first one's, `PlanStep.supersedes`)."""

    round: int
    steps: int


class RunAnswered(_Event, frozen=True, tag="run.answered"):
    """The answer the model wrote; `unfound`: what it states that neither the results nor
    the request hold (`kind value`)."""

    text: str
    unfound: list[str] = []
    ms: float = 0.0


class RunDone(_Event, frozen=True, tag="run.done"):
    status: RunStatus
    answer: str
    error: str | None = None
    latency_ms: dict[str, float] = {}
    spans: list[dict[str, Any]] = []


Event = (
    RunStarted
    | PlanStep
    | PlanDone
    | StepIntent
    | StepJob
    | StepDone
    | StepFailed
    | StepSkipped
    | StepRetrying
    | StepAwaitingApproval
    | StepDenied
    | PlanReplanned
    | StepInDoubt
    | StepResolved
    | RunResumed
    | RunWaiting
    | RunDone
    | PlanObserved
    | RunAnswered
)

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Event)
_many_decoder = msgspec.json.Decoder(list[Event])


def encode_event(event: Event) -> bytes:
    """The event's canonical JSON bytes (what the journal stores and checksums)."""
    return _encoder.encode(event)


def decode_events(body: bytes) -> list[Event]:
    """The events of one journal record: one event's JSON (`encode_event`), or a JSON array of
    several events of one run, in append order."""
    if body[:1] == b"[":
        events: list[Event] = _many_decoder.decode(body)
        return events
    return [_decoder.decode(body)]


def idempotency_key(
    run_id: str,
    step_id: int,
    tool: str,
    args: dict[str, Any],
    canonical: bytes | None = None,
    *,
    item: int | None = None,
) -> str:
    """Derived from what the action is (run, step, tool, canonical arguments; for one call of
    a step over a list, the step and the item's index), never from where the runtime happened
    to be, so a re-dispatch after a crash carries the same key. Pass `canonical`
    (`canonical_args(args)`) where it is already computed."""
    if canonical is None:
        canonical = canonical_args(args)
    where = str(step_id) if item is None else f"{step_id}.{item}"
    digest = hashlib.sha256(
        b"\x1f".join([run_id.encode(), where.encode(), tool.encode(), canonical])
    )
    return f"{run_id}:{where}:{digest.hexdigest()[:32]}"


class Recorded(msgspec.Struct, frozen=True):
    """An event with its place in the journal: `seq`, the journal's sequence number of the row
    that holds it (a commit writes one row a run, which may hold several of its events), and
    `index`, its place among that row's events. Positions grow in commit order, so a reader
    that remembers the last position it saw can ask for exactly what followed
    (`Journal.read_after`)."""

    seq: int
    index: int
    event: Event

    @property
    def position(self) -> tuple[int, int]:
        return (self.seq, self.index)


START: tuple[int, int] = (0, -1)  # the position before a run's first event

# Hears of each commit: the events it made durable, with their positions, in journal order.
CommitListener = Callable[[Sequence[Recorded]], None]


class RunSummary(msgspec.Struct, frozen=True):
    """One line of `ember runs`. `seq`: where the run's start is in the journal (the cursor
    for the page of older runs: `runs(before=seq)`)."""

    run_id: str
    task: str
    started_at: float
    status: RunStatus
    principal: str = ""
    seq: int = 0


class StepState(msgspec.Struct):
    step: Step
    status: StepStatus = StepStatus.PLANNED
    result: Any = None
    error: str | None = None
    ms: float | None = None
    idempotency_key: str | None = None
    intent_args: dict[str, Any] | None = None
    intent_at: float | None = None
    job: str | None = None
    decision: Decision | None = None
    refused: bool = False  # the policy denied its call (or one item's)
    items: dict[int, StepState] = {}  # a step over a list: each item's call, by index


class RunState(msgspec.Struct):
    """A run as its events say it is."""

    run_id: str
    task: str = ""
    planner: str = ""
    today: str = ""
    owner: str = ""
    principal: str = ""
    started_at: float = 0.0
    status: RunStatus = RunStatus.RUNNING
    plan_done: bool = False
    replans: int = 0
    superseded: list[int] = []
    steps: dict[int, StepState] = {}
    answer: str = ""
    error: str | None = None
    latency_ms: dict[str, float] = {}
    rounds: int = 0  # rounds of planning on after results came in
    written: RunAnswered | None = None  # the answer the model wrote, once written


def fold(run_id: str, events: list[Event]) -> RunState:
    """The state of run `run_id` after `events` (pure)."""
    state = RunState(run_id)
    for event in events:
        _apply(state, event)
    return state


def run_document(run_id: str, events: list[Event]) -> dict[str, Any]:
    """A run as JSON builtins: its folded state and its events (`ember runs show --json`,
    `GET /runs/ID`)."""
    return {
        "run": msgspec.to_builtins(fold(run_id, events)),
        "events": msgspec.to_builtins(events),
    }


def _target(state: RunState, step_id: int, item: int | None) -> StepState:
    """The state an event of a step (or of one item of a step over a list) changes."""
    step = state.steps[step_id]
    if item is None:
        return step
    if item not in step.items:
        step.items[item] = StepState(step.step)
    return step.items[item]


def _apply(state: RunState, event: Event) -> None:
    match event:
        case (
            StepIntent(item=int(item))
            | StepDone(item=int(item))
            | StepFailed(item=int(item))
            | StepJob(item=int(item))
            | StepInDoubt(item=int(item))
            | StepDenied(item=int(item))
        ):
            _apply_item(state, event, item)
        case RunStarted():
            state.task, state.planner, state.today = event.task, event.planner, event.today
            state.started_at, state.owner = event.at, event.owner
            state.principal = event.principal
        case RunResumed():
            state.owner, state.status = event.owner, RunStatus.RUNNING
        case PlanStep():
            state.steps[event.step.id] = StepState(event.step)
            state.superseded = [*state.superseded, *event.supersedes]
        case PlanDone():
            state.plan_done = True
        case StepIntent():
            _call_started(state.steps[event.step_id], event)
        case StepJob():
            state.steps[event.step_id].job = event.handle
        case StepDone():
            step = state.steps[event.step_id]
            step.status, step.result, step.ms = StepStatus.SUCCEEDED, event.result, event.ms
        case StepFailed():
            step = state.steps[event.step_id]
            step.status, step.error, step.ms = StepStatus.FAILED, event.error, event.ms
        case StepSkipped():
            step = state.steps[event.step_id]
            step.status, step.error = StepStatus.SKIPPED, event.reason
        case StepInDoubt():
            step = state.steps[event.step_id]
            step.status, step.error, step.decision = StepStatus.IN_DOUBT, event.reason, None
        case StepDenied():
            step = state.steps[event.step_id]
            step.status, step.error, step.refused = StepStatus.FAILED, event.reason, True
        case StepResolved():
            state.steps[event.step_id].decision = event.decision
        case StepAwaitingApproval():
            state.steps[event.step_id].status = StepStatus.AWAITING_APPROVAL
        case PlanReplanned():
            state.replans = event.attempt
            state.superseded = [*state.superseded, *event.superseded]
        case StepRetrying():
            pass  # informational: the step is still running
        case RunWaiting():
            state.status = RunStatus.WAITING
        case RunDone():
            state.status, state.answer, state.error = event.status, event.answer, event.error
            state.latency_ms = event.latency_ms
        case PlanObserved() | RunAnswered():
            _apply_later(state, event)


def _call_started(step: StepState, event: StepIntent) -> None:
    """A call's intent: the step (or item) runs, under this key and these arguments."""
    step.status, step.idempotency_key = StepStatus.RUNNING, event.idempotency_key
    step.intent_args, step.intent_at = event.args, event.at
    if step.decision is Decision.RETRY:  # the retry is this call: used up by it, so
        step.decision = None  # a crash during it is in doubt again, not retried again


def _apply_later(state: RunState, event: PlanObserved | RunAnswered) -> None:
    """What the runtime adds after the plan's steps ran: rounds of planning on, the answer."""
    if isinstance(event, PlanObserved):
        state.rounds = event.round
    else:
        state.written = event


def _apply_item(state: RunState, event: Event, item: int) -> None:
    """An item's call of a step over a list: the item's state, and the step's while it runs."""
    parent = state.steps[event.step_id]  # type: ignore[union-attr]
    step = _target(state, parent.step.id, item)
    match event:
        case StepIntent():
            if parent.status is StepStatus.PLANNED:
                parent.status = StepStatus.RUNNING
            _call_started(step, event)
        case StepJob():
            step.job = event.handle
        case StepDone():
            step.status, step.result, step.ms = StepStatus.SUCCEEDED, event.result, event.ms
        case StepFailed() | StepDenied():
            error = event.error if isinstance(event, StepFailed) else event.reason
            step.status, step.error = StepStatus.FAILED, error
            parent.refused = parent.refused or isinstance(event, StepDenied)
        case StepInDoubt():
            step.status, step.error = StepStatus.IN_DOUBT, event.reason
            parent.status, parent.error, parent.decision = StepStatus.IN_DOUBT, event.reason, None
