"""What a running tool may know about its own call, from the journal: `current_step()`.

The executor sets it around every tool call. After a crash the re-dispatched call sees the same
`idempotency_key` and the same `intent_at` (the wall time its intent was first journaled), so a
tool can make a repeat harmless and a timer can keep its original deadline.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor

import msgspec

__all__ = ["StepContext", "current_executor", "current_step"]


class StepContext(msgspec.Struct, frozen=True):
    run_id: str
    step_id: int
    idempotency_key: str
    intent_at: float  # seconds since the epoch, from the journaled step.intent
    wall: Callable[[], float] = time.time
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    executor: Executor | None = None  # the runtime's thread pool for blocking tools
    traceparent: str = ""  # W3C trace context (`ember.telemetry.trace`)
    item: int | None = None  # the item's index, in a step over a list


_current: contextvars.ContextVar[StepContext] = contextvars.ContextVar("ember_step")


def current_step() -> StepContext:
    """The context of the tool call in progress; LookupError outside one."""
    return _current.get()


def current_executor() -> Executor | None:
    """The runtime's thread pool, when called within a step; None outside one."""
    context = _current.get(None)
    return context.executor if context is not None else None
