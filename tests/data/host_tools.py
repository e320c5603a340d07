"""Tools for the tool-host tests: served by `ember tools serve` in a separate process."""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

import msgspec

from ember import tool
from ember.errors import ToolCallError
from ember.tools.context import current_step

CALLS = os.environ.get("EMBER_TEST_CALLS", "")  # a file each call appends its key to


@tool(idempotent=True, inline=True)
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return {"sum": a + b}


@tool(inline=True)
def echo(text: Annotated[str, msgspec.Meta(max_length=100)], idempotency_key: str = "") -> str:
    """Echo the text back (a result that is not an object)."""
    if CALLS:
        with open(CALLS, "a") as log:
            log.write(idempotency_key + "\n")
    return text


@tool
async def nap(seconds: float) -> dict[str, float]:
    """Sleep, then answer (to be killed mid-call)."""
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@tool(inline=True)
def broken(x: int) -> int:
    """Always fails, retryably."""
    raise ToolCallError("broken", f"upstream 503 for {x}", retryable=True)


@tool(inline=True)
def noop() -> None:
    """Does nothing: the benchmark's tool."""


@tool(execution_mode="async", idempotent=True)
async def render(title: str) -> dict[str, str]:
    """A slow job: renders a document."""
    await asyncio.sleep(0.3)
    if CALLS:
        with open(CALLS, "a") as log:
            log.write(f"render {title}\n")
    return {"path": f"/reports/{title}.md"}


@tool(inline=True)
def trace() -> dict[str, str]:
    """The trace context the call arrived with."""
    return {"traceparent": current_step().traceparent}
