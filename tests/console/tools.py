"""Tools for the console's tests and load benchmark: steps that take time, and one that waits
for an approval."""

from __future__ import annotations

import asyncio
from typing import Any

from ember import tool


@tool(idempotent=True)
async def slow_step(label: str, ms: int = 300, after: str = "") -> dict[str, str]:
    """Wait `ms` milliseconds, then answer with the label.

    Args:
        label: What this step is called.
        ms: How long it takes.
        after: A result it builds on.
    """
    await asyncio.sleep(ms / 1000)
    return {"label": label, "after": after}


@tool(risk="high")
def wire_money(amount: int, to: str) -> dict[str, Any]:
    """Send money (high risk: waits for an approval).

    Args:
        amount: How much.
        to: Who gets it.
    """
    return {"sent": amount, "to": to}
