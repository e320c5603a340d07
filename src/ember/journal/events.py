"""Journal events: kind-tagged, frozen records. A run is the fold of its events.

```
run.started   the task, the planner, today's date
plan.step     a step as the planner emitted it
step.intent   written and durable BEFORE the tool is called, with the idempotency key
step.done     the result, the tool's self-time
step.failed   the error (a tool error, bad arguments, an unresolvable reference)
step.skipped  a step that cannot run because a step it depends on failed
run.done      final status, answer, latency figures and spans
```
"""

from __future__ import annotations

import enum
import hashlib
from typing import Any

import msgspec

from ember.planner.plan import Step

__all__ = [
    "Event",
    "PlanStep",
    "RunDone",
    "RunStarted",
    "RunState",
    "RunStatus",
    "StepDone",
    "StepFailed",
    "StepIntent",
    "StepSkipped",
    "StepStatus",
    "decode_event",
    "encode_event",
    "fold",
    "idempotency_key",
]


class RunStatus(enum.StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StepStatus(enum.StrEnum):
    PLANNED = "planned"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


class _Event(msgspec.Struct, frozen=True, tag_field="kind"):
    run_id: str
    at: float  # wall-clock seconds since the epoch


class RunStarted(_Event, frozen=True, tag="run.started"):
    task: str
    planner: str
    today: str


class PlanStep(_Event, frozen=True, tag="plan.step"):
    step: Step


class StepIntent(_Event, frozen=True, tag="step.intent"):
    step_id: int
    tool: str
    args: dict[str, Any]
    idempotency_key: str


class StepDone(_Event, frozen=True, tag="step.done"):
    step_id: int
    result: Any
    ms: float
    self_ms: float


class StepFailed(_Event, frozen=True, tag="step.failed"):
    step_id: int
    error: str
    ms: float


class StepSkipped(_Event, frozen=True, tag="step.skipped"):
    step_id: int
    reason: str


class RunDone(_Event, frozen=True, tag="run.done"):
    status: RunStatus
    answer: str
    error: str | None = None
    latency_ms: dict[str, float] = {}
    spans: list[dict[str, Any]] = []


Event = RunStarted | PlanStep | StepIntent | StepDone | StepFailed | StepSkipped | RunDone

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Event)


def encode_event(event: Event) -> bytes:
    """The event's canonical JSON bytes (what the journal stores and checksums)."""
    return _encoder.encode(event)


def decode_event(body: bytes) -> Event:
    """Inverse of `encode_event`."""
    event: Event = _decoder.decode(body)
    return event


def idempotency_key(run_id: str, step_id: int, tool: str, args: dict[str, Any]) -> str:
    """Derived from what the action is (run, step, tool, canonical arguments), never from where
    the runtime happened to be, so a re-dispatch after a crash carries the same key."""
    canonical = msgspec.json.encode(args, order="sorted")
    digest = hashlib.sha256(
        b"\x1f".join([run_id.encode(), str(step_id).encode(), tool.encode(), canonical])
    )
    return f"{run_id}:{step_id}:{digest.hexdigest()[:32]}"


class StepState(msgspec.Struct):
    step: Step
    status: StepStatus = StepStatus.PLANNED
    result: Any = None
    error: str | None = None
    ms: float | None = None
    idempotency_key: str | None = None


class RunState(msgspec.Struct):
    """A run as its events say it is."""

    run_id: str
    task: str = ""
    planner: str = ""
    today: str = ""
    started_at: float = 0.0
    status: RunStatus = RunStatus.RUNNING
    steps: dict[int, StepState] = {}
    answer: str = ""
    error: str | None = None
    latency_ms: dict[str, float] = {}


def fold(run_id: str, events: list[Event]) -> RunState:
    """The state of run `run_id` after `events` (pure)."""
    state = RunState(run_id)
    for event in events:
        match event:
            case RunStarted():
                state.task, state.planner, state.today = event.task, event.planner, event.today
                state.started_at = event.at
            case PlanStep():
                state.steps[event.step.id] = StepState(event.step)
            case StepIntent():
                step = state.steps[event.step_id]
                step.status, step.idempotency_key = StepStatus.RUNNING, event.idempotency_key
            case StepDone():
                step = state.steps[event.step_id]
                step.status, step.result, step.ms = StepStatus.SUCCEEDED, event.result, event.ms
            case StepFailed():
                step = state.steps[event.step_id]
                step.status, step.error, step.ms = StepStatus.FAILED, event.error, event.ms
            case StepSkipped():
                step = state.steps[event.step_id]
                step.status, step.error = StepStatus.SKIPPED, event.reason
            case RunDone():
                state.status, state.answer, state.error = event.status, event.answer, event.error
                state.latency_ms = event.latency_ms
    return state
