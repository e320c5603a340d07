"""Transports to tools in other processes: a tool host on a Unix socket (`UdsTransport`, pooled
persistent connections) or over HTTP (`HttpTransport`, keep-alive). Both speak the wire protocol
of `ember.tools.wire`; `register_remote` adds a host's tools to a registry."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from pathlib import Path
from typing import Any

import msgspec

from ember.errors import ToolCallError, ToolDefinitionError
from ember.tools.context import current_step
from ember.tools.descriptor import ToolDescriptor
from ember.tools.registry import ToolRegistry
from ember.tools.transport import ToolResult
from ember.tools.wire import MAX_MESSAGE_BYTES, descriptor_from_mcp

__all__ = ["HttpTransport", "UdsTransport", "register_remote"]


def _meta(idempotency_key: str) -> dict[str, str]:
    meta = {"ember/idempotency_key": idempotency_key}
    with contextlib.suppress(LookupError):
        step = current_step()
        if step.traceparent:
            meta["traceparent"] = step.traceparent
    return meta


class _RpcTransport:
    """JSON-RPC calls over some round trip; subclasses provide `_roundtrip` and `where`."""

    where = ""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._idempotent: dict[str, bool] = {}

    async def _roundtrip(self, message: bytes) -> dict[str, Any]:
        raise NotImplementedError

    async def list_tools(self) -> list[ToolDescriptor]:
        reply = await self._rpc("tools/list", {}, tool="tools/list")
        descriptors = [descriptor_from_mcp(tool) for tool in reply.get("tools", [])]
        self._idempotent = {d.tool_name: d.idempotent for d in descriptors}
        return descriptors

    async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> ToolResult:
        params = {"name": tool, "arguments": args, "_meta": _meta(idempotency_key)}
        return self._decode(tool, await self._rpc("tools/call", params, tool=tool))

    @staticmethod
    def _decode(tool: str, result: dict[str, Any]) -> ToolResult:
        meta = result.get("_meta") or {}
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            raise ToolCallError(
                tool, text or "the tool failed", retryable=bool(meta.get("ember/retryable"))
            )
        if "structuredContent" in result:
            value = result["structuredContent"]
        else:
            text = "".join(c.get("text", "") for c in result.get("content", []))
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = text
        return ToolResult(value, float(meta.get("ember/self_s", 0.0)))

    async def submit(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> str:
        """Start an `async` tool on the host; its handle comes back at once."""
        params = {"name": tool, "arguments": args, "_meta": _meta(idempotency_key)}
        result = await self._rpc("ember/jobs/submit", params, tool=tool)
        return str(result["handle"])

    async def wait(self, tool: str, handle: str) -> ToolResult:
        """Poll the host (long polls of up to 30 s) until the job has its result."""
        while True:
            result = await self._rpc(
                "ember/jobs/result", {"handle": handle, "wait_s": 30}, tool=tool
            )
            if result.get("done"):
                return self._decode(tool, result["result"])

    async def _rpc(self, method: str, params: dict[str, Any], *, tool: str) -> dict[str, Any]:
        message = msgspec.json.encode(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        )
        try:
            reply = await self._roundtrip(message)
        except (ConnectionError, OSError, EOFError, asyncio.IncompleteReadError) as exc:
            raise ToolCallError(
                tool,
                f"the tool host at {self.where} failed during the call ({exc or type(exc)})"
                ": it may have died; the call may or may not have run",
                retryable=self._idempotent.get(tool, False),
            ) from None
        if "error" in reply:
            error = reply["error"]
            raise ToolCallError(
                tool, f"{self.where} answered error {error.get('code')}: {error.get('message')}"
            )
        result = reply.get("result")
        if not isinstance(result, dict):
            raise ToolCallError(tool, f"{self.where} sent an answer without a result: {reply}")
        return result


class UdsTransport(_RpcTransport):
    """A tool host on a Unix domain socket: up to `pool_size` persistent connections, one
    request in flight on each, one JSON message a line."""

    def __init__(self, path: Path | str, *, pool_size: int = 8) -> None:
        super().__init__()
        self.path = str(path)
        self.where = f"unix:{self.path}"
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(pool_size)

    async def _roundtrip(self, message: bytes) -> dict[str, Any]:
        async with self._slots:
            if self._idle:
                reader, writer = self._idle.pop()
            else:
                reader, writer = await asyncio.open_unix_connection(
                    self.path, limit=MAX_MESSAGE_BYTES
                )
            try:
                writer.write(message + b"\n")
                await writer.drain()
                line = await reader.readline()
                if not line:
                    raise EOFError("the host closed the connection")
            except BaseException:
                writer.close()
                raise
            self._idle.append((reader, writer))
            reply: dict[str, Any] = msgspec.json.decode(line)
            return reply

    async def aclose(self) -> None:
        for _, writer in self._idle:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        self._idle.clear()


class HttpTransport(_RpcTransport):
    """A tool host over HTTP/1.1 with keep-alive: POST `url` (e.g. http://127.0.0.1:8700/mcp)."""

    def __init__(self, url: str, *, timeout_s: float = 300.0) -> None:
        super().__init__()
        import httpx

        self.url = url
        self.where = url
        self._client = httpx.AsyncClient(timeout=timeout_s)

    async def _roundtrip(self, message: bytes) -> dict[str, Any]:
        import httpx

        try:
            response = await self._client.post(
                self.url, content=message, headers={"content-type": "application/json"}
            )
        except httpx.HTTPError as exc:
            raise ConnectionError(str(exc)) from None
        reply: dict[str, Any] = response.json()
        return reply

    async def aclose(self) -> None:
        await self._client.aclose()


async def register_remote(registry: ToolRegistry, transport: Any) -> int:
    """Add every tool of a host (`UdsTransport`, `HttpTransport`, `McpStdioTransport`) to
    `registry`; returns how many."""
    try:
        descriptors = await transport.list_tools()
    except ToolCallError as exc:
        raise ToolDefinitionError(f"cannot list the tools of {transport.where}: {exc}") from None
    for descriptor in descriptors:
        registry.register(descriptor, transport=transport, source=transport.where)
    return len(descriptors)
