"""Durable waits: `sleep` and `wait_until` steps.

Their deadline is fixed by the journaled intent (intent time + seconds, or the given instant),
so after a crash and a restart the re-dispatched step sleeps only for what remains. A wait may
last up to a year: their time limit is that, not the executor's default for a call (300 s).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from ember.errors import ToolCallError
from ember.tools.context import current_step
from ember.tools.decorator import tool
from ember.tools.registry import ToolRegistry

__all__ = ["WAIT_LIMIT_S", "register_timers"]

WAIT_LIMIT_S = 366 * 24 * 3600.0  # the longest wait, and the timers' time limit


@tool(idempotent=True, read_only=True, timeout_s=WAIT_LIMIT_S)
async def sleep(seconds: Annotated[float, msgspec.Meta(ge=0, le=WAIT_LIMIT_S)]) -> dict[str, Any]:
    """Wait this many seconds, counted from when the step was first started (survives restarts).

    Args:
        seconds: How long to wait.
    """
    step = current_step()
    deadline = step.intent_at + seconds
    await step.sleep(max(0.0, deadline - step.wall()))
    return {"woke_at": deadline}


@tool(idempotent=True, read_only=True, timeout_s=WAIT_LIMIT_S)
async def wait_until(until: str) -> dict[str, Any]:
    """Wait until an instant (ISO 8601 with a UTC offset, e.g. 2026-03-09T09:00:00+01:00).

    Args:
        until: The instant to wake at.
    """
    try:
        instant = datetime.fromisoformat(until)
    except ValueError:
        raise ToolCallError("wait_until", f"until={until!r} is not an ISO 8601 instant") from None
    if instant.tzinfo is None:
        raise ToolCallError("wait_until", f"until={until!r} needs a UTC offset, e.g. +00:00")
    step = current_step()
    deadline = instant.timestamp()
    if deadline - step.intent_at > WAIT_LIMIT_S:
        raise ToolCallError("wait_until", f"until={until!r} is more than a year away")
    await step.sleep(max(0.0, deadline - step.wall()))
    return {"woke_at": deadline}


def register_timers(registry: ToolRegistry) -> None:
    """Add `sleep` and `wait_until` to a registry."""
    for fn in (sleep, wait_until):
        registry.register(fn, source="builtin")
