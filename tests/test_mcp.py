"""MCP both ways, through the official SDK: an SDK server's tools used by ember over stdio, and
an ember tool host used by the SDK's own client."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed (extra: mcp)")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from ember import Plan, Runtime, ScriptedPlanner, Step, ToolRegistry
from ember.errors import ToolCallError
from ember.journal import RunStatus
from ember.testing import MemoryJournal
from ember.tools.mcp import McpStdioTransport
from ember.tools.remote import register_remote

DATA = Path(__file__).parent / "data"


def test_an_sdk_servers_tools_run_in_ember() -> None:
    async def main() -> Any:
        registry = ToolRegistry()
        async with McpStdioTransport(sys.executable, [str(DATA / "mcp_server.py")]) as server:
            assert await register_remote(registry, server) == 2
            assert registry.get("multiply").source.startswith("mcp:")
            # the server's readOnlyHint is the descriptor's read_only; unsaid stays unknown
            assert registry.get("multiply").descriptor.read_only is True
            assert registry.get("divide").descriptor.read_only is None
            plan = Plan(
                [
                    Step(1, "multiply", {"a": 6, "b": 7}),
                    Step(2, "multiply", {"a": "$1.product", "b": 2}),
                ]
            )
            result = await Runtime(registry, ScriptedPlanner({"go": plan}), MemoryJournal()).run(
                "go"
            )
            with pytest.raises(ToolCallError, match="Error executing tool divide"):
                await server.call("divide", {"a": 1, "b": 0}, idempotency_key="k")
            return result

    result = asyncio.run(main())
    assert result.status is RunStatus.SUCCEEDED
    assert [s.result for s in result.steps] == [{"product": 42}, {"product": 84}]


def test_an_ember_tool_host_serves_the_sdk_client() -> None:
    async def main() -> tuple[Any, ...]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ember.cli", "tools", "serve", str(DATA / "host_tools.py"), "--stdio"],
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            added = await session.call_tool("add", {"a": 2, "b": 5})
            failed = await session.call_tool("broken", {"x": 1})
            return listed, added, failed

    listed, added, failed = asyncio.run(main())
    assert [t.name for t in listed.tools][:5] == ["add", "echo", "nap", "broken", "noop"]
    add = listed.tools[0]
    assert add.input_schema["required"] == ["a", "b"]
    assert added.structured_content == {"sum": 7}
    assert not added.is_error
    assert failed.is_error
    assert failed.content[0].text == "broken: upstream 503 for 1"


def test_streamable_http_both_ways(tmp_path: Path) -> None:
    """The SDK's Streamable HTTP client drives an ember HTTP host, through McpHttpTransport."""
    from ember.tools.mcp import McpHttpTransport

    from .test_transports import Host

    host = Host(tmp_path)
    try:

        async def main() -> Any:
            registry = ToolRegistry()
            async with McpHttpTransport(host.url) as server:
                assert await register_remote(registry, server) == 7
                plan = Plan([Step(1, "add", {"a": 20, "b": 22})])
                return await Runtime(registry, ScriptedPlanner({"go": plan}), MemoryJournal()).run(
                    "go"
                )

        result = asyncio.run(main())
    finally:
        host.stop()
    assert result.status is RunStatus.SUCCEEDED
    assert result.steps[0].result == {"sum": 42}
