"""The tools of `benchmarks.cluster`'s workers: `inc` (the chain benchmarks' step, in the
event loop) and `nap` (a step that takes 0.2 s, for runs that are mid-way when a worker dies)."""

from __future__ import annotations

import asyncio

from ember import tool


@tool(inline=True, idempotent=True)
def inc(x: int) -> dict[str, int]:
    """Adds one."""
    return {"y": x + 1}


@tool(idempotent=True)
async def nap(n: int) -> dict[str, int]:
    """Waits 0.2 s."""
    await asyncio.sleep(0.2)
    return {"n": n}
