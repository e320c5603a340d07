"""The planner seam: `plan(task)` streams the steps of a plan as the planner produces them;
`answer(task)` (a capability a planner may have) streams the text of a run's answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import date
from typing import Any, Protocol, TypeVar, runtime_checkable

import msgspec

from ember.plan import Step
from ember.planner.quotes import unwrapped
from ember.tools.descriptor import ToolDescriptor

__all__ = [
    "AnswerTask",
    "Answers",
    "FirstToken",
    "Observation",
    "PlanEvent",
    "PlanStats",
    "Planner",
    "PlanningTask",
    "PlansOn",
    "Prefills",
    "stream_from_thread",
]


class Observation(msgspec.Struct, frozen=True):
    """What one step of a run left, as a model may see it: data, never instructions."""

    step: int
    tool: str
    ok: bool
    result: Any = None
    error: str | None = None


class PlanningTask(msgspec.Struct, frozen=True):
    """What a planner is asked: the request, the date it is made (for "tomorrow"), the tools.
    On a replan, `attempt` counts from 1 and `feedback` says what failed and what succeeded.
    In a round after results came in (observe, then plan on), `earlier` holds the steps run so
    far and `observations` their results: new steps follow them and may use their results.
    In a round after a step failed, `failed` holds the calls that failed (their errors are
    among the observations): the round plans around them and does not make them again, and
    adds at most `max_steps` steps (None: a plan's usual bound). A request in quotes whole
    is kept without them (`ember.planner.quotes.unwrapped`)."""

    request: str
    today: date
    catalogue: tuple[ToolDescriptor, ...]
    attempt: int = 0
    feedback: str = ""
    earlier: tuple[Step, ...] = ()
    observations: tuple[Observation, ...] = ()
    failed: tuple[Step, ...] = ()
    max_steps: int | None = None

    def __post_init__(self) -> None:
        # a request in quotes whole is read without them (`quotes.unwrapped`): inside quotes,
        # no date, number or tool name would be the request's own
        msgspec.structs.force_setattr(self, "request", unwrapped(self.request))


class AnswerTask(msgspec.Struct, frozen=True):
    """A run's answer to write: the request and what its steps left."""

    request: str
    today: date
    observations: tuple[Observation, ...]


class FirstToken(msgspec.Struct, frozen=True):
    """Emitted once, when the planner has produced its first output token (L1 TTFT)."""


PlanEvent = Step | FirstToken


class Planner(Protocol):
    """Turns a task into a plan, step by step. `name` identifies it in the journal."""

    name: str

    def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        """Yield `FirstToken` once, then each `Step` as soon as it is complete."""
        ...

    def warm(self, task: PlanningTask) -> None:
        """Get ready to plan over `task.catalogue` (load a model, read a prompt prefix), so the
        first request does not pay for it; blocking (run it in a thread). May do nothing."""
        ...


@runtime_checkable
class PlanStats(Protocol):
    """What a planner that runs a model in process can tell about its last plan (for
    `ember eval planner`): the forward passes it took after reading the request, the first
    choice's margin (the logit of a step over that of `done`), and the same margin after each
    step where `done` was offered."""

    last_passes: int | None
    last_margin: float | None
    last_end_margins: list[float]


@runtime_checkable
class Prefills(Protocol):
    """A planner that can read a request while it is still being typed (the embedded one), so
    that at submit only its last tokens are left to read."""

    def prefill(self, session_id: str, task: PlanningTask) -> int:
        """Read `task.request` as typed so far for `session_id`; blocking (run it in a thread).
        Returns how many tokens it read."""
        ...


@runtime_checkable
class Answers(Protocol):
    """A planner that can write a run's answer from the request and the results (the embedded
    one); the runtime checks what it states against them (`ember.executor.checking`)."""

    def answer(self, task: AnswerTask) -> AsyncIterator[str]:
        """Yield the answer's text as it is written."""
        ...


@runtime_checkable
class PlansOn(Protocol):
    """A planner that can add steps to a run once results came in (observe, then plan on):
    `task.earlier` holds the steps so far and `task.observations` their results."""

    def plan_on(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        """Yield `FirstToken` once, then each added `Step` (ids after the earlier steps')."""
        ...


T = TypeVar("T")  # what a worker thread streams: plan events, or an answer's text
_DONE = object()


async def stream_from_thread(decode: Callable[[Callable[[T], None]], object]) -> AsyncIterator[T]:
    """Run `decode(emit)` in a worker thread (a model's blocking work); yield what it emits as
    it comes, and raise what it raises."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def emit(item: T) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    def produce() -> None:
        try:
            decode(emit)
        except BaseException as exc:  # handed to the event loop, raised there
            loop.call_soon_threadsafe(queue.put_nowait, exc)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    worker = loop.run_in_executor(None, produce)
    try:
        while (item := await queue.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]  # only `emit` puts anything else here
    finally:
        await worker
