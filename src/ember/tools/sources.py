"""Open the tool sources of the settings and register their tools (closing them after)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from ember.config import ToolSource
from ember.tools.host import load_tools
from ember.tools.mcp import McpHttpTransport, McpStdioTransport
from ember.tools.registry import ToolRegistry
from ember.tools.remote import HttpTransport, UdsTransport, register_remote

__all__ = ["open_tool_sources"]


@contextlib.asynccontextmanager
async def open_tool_sources(
    registry: ToolRegistry, sources: Sequence[ToolSource]
) -> AsyncIterator[ToolRegistry]:
    """Add every source's tools to `registry`; remote connections close on exit."""
    async with contextlib.AsyncExitStack() as stack:
        for source in sources:
            if source.module is not None:
                for registered in load_tools(source.module):
                    registry.register(
                        registered.descriptor,
                        transport=registered.transport,
                        source=f"module:{source.module}",
                    )
            elif source.uds is not None:
                uds = UdsTransport(source.uds)
                stack.push_async_callback(uds.aclose)
                await register_remote(registry, uds)
            elif source.http is not None:
                http = HttpTransport(source.http)
                stack.push_async_callback(http.aclose)
                await register_remote(registry, http)
            elif source.mcp is not None:
                mcp: McpStdioTransport | McpHttpTransport
                if source.mcp.url is not None:
                    mcp = McpHttpTransport(source.mcp.url)
                else:
                    assert source.mcp.command is not None  # checked when the config was read
                    mcp = McpStdioTransport(source.mcp.command, source.mcp.args, env=source.mcp.env)
                await stack.enter_async_context(mcp)
                await register_remote(registry, mcp)
        yield registry
