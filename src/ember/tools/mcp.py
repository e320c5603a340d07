"""Tools from any MCP server, over stdio or Streamable HTTP, through the official `mcp` SDK
(the `mcp` extra).

```python
async with McpStdioTransport("python", ["server.py"]) as mcp:    # or McpHttpTransport(url)
    await register_remote(registry, mcp)      # every tool the server lists
    ...                                       # runs use them like any other tool
```

Open and close a transport in the same task (the SDK's streams are bound to it).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ember.errors import ToolCallError
from ember.extras import require
from ember.tools.descriptor import ToolDescriptor
from ember.tools.transport import ToolResult
from ember.tools.wire import descriptor_from_mcp

__all__ = ["McpHttpTransport", "McpStdioTransport"]


class _McpTransport:
    """An SDK client session; subclasses say how to reach the server (`_streams`)."""

    where = "mcp"

    def __init__(self) -> None:
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: Any = None

    def _streams(self) -> Any:
        raise NotImplementedError

    async def __aenter__(self) -> Any:
        require("tools from MCP servers", "mcp")
        from mcp import ClientSession

        self._stack = contextlib.AsyncExitStack()
        streams = await self._stack.enter_async_context(self._streams())
        self._session = await self._stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await self._session.initialize()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._stack is not None:
            stack, self._stack, self._session = self._stack, None, None
            await stack.aclose()

    async def list_tools(self) -> list[ToolDescriptor]:
        listed = await self._live().list_tools()
        return [
            descriptor_from_mcp(tool.model_dump(by_alias=True, exclude_none=True))
            for tool in listed.tools
        ]

    async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> ToolResult:
        try:
            result = await self._live().call_tool(
                tool, args, meta={"ember/idempotency_key": idempotency_key}
            )
        except Exception as exc:  # the SDK raises its own errors for protocol failures
            raise ToolCallError(tool, f"{self.where}: {exc}") from exc
        text = " ".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            raise ToolCallError(tool, text or "the MCP tool failed")
        if result.structured_content is not None:
            return ToolResult(result.structured_content, 0.0)
        try:
            return ToolResult(json.loads(text), 0.0)
        except json.JSONDecodeError:
            return ToolResult(text, 0.0)

    def _live(self) -> Any:
        if self._session is None:
            raise ToolCallError("mcp", f"{self.where} is not open: use `async with` first")
        return self._session


class McpStdioTransport(_McpTransport):
    """An MCP server started as a child process, spoken to over its stdin/stdout."""

    def __init__(
        self, command: str, args: list[str] | None = None, *, env: dict[str, str] | None = None
    ) -> None:
        super().__init__()
        self.command = command
        self.args = args or []
        self.env = env
        self.where = f"mcp:{command} {' '.join(self.args)}".strip()

    def _streams(self) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=self.command, args=self.args, env=self.env)
        return stdio_client(params)


class McpHttpTransport(_McpTransport):
    """An MCP server reached over Streamable HTTP, e.g. http://127.0.0.1:8700/mcp."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.where = f"mcp:{url}"

    def _streams(self) -> Any:
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(self.url)
