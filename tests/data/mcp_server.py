"""A tiny MCP server written with the official SDK, spoken to over stdio by the tests."""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("calculator")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def multiply(a: int, b: int) -> dict[str, int]:
    """Multiply two integers."""
    return {"product": a * b}


@server.tool()
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


if __name__ == "__main__":
    server.run("stdio")
