"""The tool the transport benchmark calls: does nothing."""

from ember import tool


@tool(inline=True)
def noop() -> dict[str, bool]:
    """Does nothing."""
    return {"ok": True}
