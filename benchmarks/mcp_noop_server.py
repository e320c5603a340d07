"""An MCP server (official SDK) with one no-op tool, for the transport benchmark."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("noop")


@server.tool()
def noop() -> dict[str, bool]:
    """Does nothing."""
    return {"ok": True}


if __name__ == "__main__":
    server.run("stdio")
