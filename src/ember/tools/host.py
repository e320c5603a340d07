"""A tool host: serves a registry's tools over the wire protocol, on a Unix socket and/or HTTP.

`ToolHost.handle` turns one JSON-RPC message into its answer and never raises: malformed input,
unknown tools and schema violations are JSON-RPC errors; a failing tool is an `isError` result.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import msgspec

from ember.errors import ArgumentError, ToolCallError, UnknownToolError
from ember.tools.context import StepContext, _current
from ember.tools.registry import ToolRegistry
from ember.tools.wire import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_MESSAGE_BYTES,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    WireError,
    descriptor_to_mcp,
    error_response,
)

__all__ = ["ToolHost", "load_tools", "serve"]

PROTOCOL_VERSION = "2026-07-28"


class ToolHost:
    """Answers `tools/list` and `tools/call` for the tools of `registry`."""

    def __init__(self, registry: ToolRegistry, *, name: str = "ember-tool-host") -> None:
        self.registry = registry
        self.name = name
        self._tools = {"tools": [descriptor_to_mcp(t.descriptor) for t in registry]}
        self._in_flight: set[asyncio.Task[Any]] = set()
        self._jobs: dict[str, asyncio.Future[dict[str, Any]]] = {}

    async def handle(self, raw: bytes) -> bytes | None:
        """The encoded answer to one message (None for a notification)."""
        request_id: Any = None
        try:
            try:
                message = msgspec.json.decode(raw)
            except msgspec.DecodeError as exc:
                raise WireError(PARSE_ERROR, f"not JSON: {exc}") from None
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                raise WireError(
                    INVALID_REQUEST,
                    'expected a JSON-RPC 2.0 object: {"jsonrpc": '
                    '"2.0", "id": ..., "method": ..., "params": {...}}',
                )
            request_id = message.get("id")
            method = message.get("method")
            if not isinstance(method, str):
                raise WireError(INVALID_REQUEST, "the request has no method")
            params = message.get("params") or {}
            if not isinstance(params, dict):
                raise WireError(INVALID_PARAMS, "params must be an object")
            result = await self._dispatch(method, params)
        except WireError as exc:
            return msgspec.json.encode(error_response(request_id, exc.code, str(exc)))
        if "id" not in message:
            return None  # a notification gets no answer
        return msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "tools/list":
            return self._tools
        if method == "tools/call":
            return await self._call(params)
        if method == "ember/jobs/submit":
            return await self._submit(params)
        if method == "ember/jobs/result":
            return await self._result(params)
        if method == "initialize":  # optional in the stateless revision; answered for old clients
            requested = params.get("protocolVersion")  # tools/list and tools/call are the same
            return {  # in every version: accept the client's
                "protocolVersion": requested if isinstance(requested, str) else PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": self.name, "version": "1"},
            }
        if method in ("ping", "notifications/initialized"):
            return {}
        raise WireError(
            METHOD_NOT_FOUND, f"unknown method {method!r}: use tools/list or tools/call"
        )

    async def _call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        meta = params.get("_meta") or {}
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise WireError(
                INVALID_PARAMS,
                "tools/call needs params.name (a string) and params.arguments (an object)",
            )
        try:
            registered = self.registry.get(name)
            registered.validate(arguments)
        except (UnknownToolError, ArgumentError) as exc:
            raise WireError(INVALID_PARAMS, str(exc)) from None
        meta = meta if isinstance(meta, dict) else {}
        key = str(meta.get("ember/idempotency_key", ""))
        context = StepContext("", 0, key, time.time(), traceparent=str(meta.get("traceparent", "")))
        token = _current.set(context)  # the tool may read its key and trace context
        try:
            outcome = await registered.transport.call(name, arguments, idempotency_key=key)
        except ToolCallError as exc:
            _current.reset(token)
            return {
                "content": [{"type": "text", "text": str(exc)}],
                "isError": True,
                "_meta": {"ember/retryable": exc.retryable},
            }
        _current.reset(token)
        text = json.dumps(outcome.value, ensure_ascii=False, default=str)
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "_meta": {"ember/self_s": outcome.self_s},
        }
        if isinstance(outcome.value, dict):
            result["structuredContent"] = outcome.value
        return result

    async def _submit(self, params: dict[str, Any]) -> dict[str, Any]:
        """Start a job (an `async` tool's call); the same idempotency key gives the same job."""
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        key = str((meta or {}).get("ember/idempotency_key") or os.urandom(8).hex())
        handle = "job-" + hashlib.sha256(key.encode()).hexdigest()[:16]
        if handle not in self._jobs:
            if not isinstance(params.get("name"), str) or params["name"] not in self.registry:
                raise WireError(INVALID_PARAMS, f"no tool named {params.get('name')!r}")
            self._jobs[handle] = asyncio.ensure_future(self._call(params))
        return {"handle": handle}

    async def _result(self, params: dict[str, Any]) -> dict[str, Any]:
        """A job's result, waiting up to `wait_s` seconds for it (a long poll)."""
        job = self._jobs.get(str(params.get("handle")))
        if job is None:
            raise WireError(
                INVALID_PARAMS,
                f"unknown job {params.get('handle')!r}: this host "
                "does not have it (it may have restarted): submit it again",
            )
        wait_s = params.get("wait_s", 0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(job), float(wait_s) if wait_s else 0)
        if not job.done():
            return {"done": False}
        return {"done": True, "result": job.result()}

    # -- servers ------------------------------------------------------------------------------

    async def serve_unix(self, path: Path | str) -> asyncio.Server:
        """Listen on a Unix socket: one JSON message a line, answers in order per connection."""
        path = Path(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return await asyncio.start_unix_server(self._connection, path, limit=MAX_MESSAGE_BYTES)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._in_flight.add(task)
        try:
            while True:
                try:
                    line = await reader.readline()
                except (asyncio.LimitOverrunError, ValueError):
                    answer = error_response(
                        None, INVALID_REQUEST, f"message larger than {MAX_MESSAGE_BYTES} bytes"
                    )
                    writer.write(msgspec.json.encode(answer) + b"\n")
                    await writer.drain()
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                reply = await self.handle(line)
                if reply is not None:
                    writer.write(reply + b"\n")
                    await writer.drain()
        except ConnectionError:
            pass
        finally:
            await self._hang_up(task, writer)

    async def _hang_up(self, task: asyncio.Task[Any], writer: asyncio.StreamWriter) -> None:
        self._in_flight.discard(task)
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    async def drain(self, timeout_s: float = 10.0) -> None:
        """Wait for the connections and jobs in progress to finish (graceful shutdown)."""
        pending = set(self._in_flight) | {job for job in self._jobs.values() if not job.done()}
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)

    async def serve_stdio(self) -> None:
        """Answer messages on stdin, one a line, on stdout, until stdin closes (MCP's stdio
        transport: how an MCP client starts a tool host as its child process)."""
        import sys

        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        out = sys.stdout.buffer
        while line := await reader.readline():
            if line.strip():
                reply = await self.handle(line)
                if reply is not None:
                    out.write(reply + b"\n")
                    out.flush()

    async def serve_http(self, host: str, port: int) -> asyncio.Server:
        """Listen for HTTP/1.1 with keep-alive: POST /mcp (one JSON-RPC message a request,
        with a Content-Length), GET /health. Loopback use: no TLS, no chunked bodies."""
        return await asyncio.start_server(
            self._http_connection, host, port, limit=MAX_MESSAGE_BYTES
        )

    async def _http_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._in_flight.add(task)
        try:
            while await self._http_exchange(reader, writer):
                pass
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ):
            pass
        finally:
            await self._hang_up(task, writer)

    async def _http_exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Serve one request; False when the connection is done."""
        request_line = await reader.readline()
        if not request_line:
            return False
        method, _, rest = request_line.decode("latin-1").partition(" ")
        path = rest.split(" ", 1)[0]
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        keep = headers.get("connection", "").lower() != "close"
        if length > MAX_MESSAGE_BYTES:
            answer = error_response(
                None, INVALID_REQUEST, f"message larger than {MAX_MESSAGE_BYTES} bytes"
            )
            await _respond(writer, 413, msgspec.json.encode(answer), keep=False)
            return False
        body = await reader.readexactly(length) if length else b""
        if method == "GET" and path == "/health":
            health = {"status": "ok", "tools": len(self.registry)}
            await _respond(writer, 200, msgspec.json.encode(health), keep=keep)
        elif method == "POST" and path == "/mcp":
            reply = await self.handle(body)
            await _respond(writer, 200 if reply is not None else 202, reply or b"", keep=keep)
        else:
            await _respond(writer, 404, b'{"error": "POST /mcp or GET /health"}', keep=keep)
        return keep


async def _respond(writer: asyncio.StreamWriter, status: int, body: bytes, *, keep: bool) -> None:
    reason = {200: "OK", 202: "Accepted", 404: "Not Found", 413: "Payload Too Large"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: {'keep-alive' if keep else 'close'}\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()


def load_tools(source: str) -> ToolRegistry:
    """A registry of the `@tool` functions of a Python file or an importable module."""
    import importlib
    import importlib.util

    from ember.errors import UserError
    from ember.tools.decorator import ToolFunction

    if source.endswith(".py") or Path(source).is_file():
        spec = importlib.util.spec_from_file_location(Path(source).stem, source)
        if spec is None or spec.loader is None:
            raise UserError(f"cannot load {source}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(source)
        except ImportError as exc:
            raise UserError(f"cannot import {source!r}: {exc}") from None
    registry = ToolRegistry()
    for value in vars(module).values():
        if isinstance(value, ToolFunction):
            registry.register(value, source=source)
    if not len(registry):
        raise UserError(f"{source} defines no @tool functions")
    return registry


async def serve(
    host: ToolHost,
    *,
    uds: str | None = None,
    http: str | None = None,
    stdio: bool = False,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT (or `stop`, or the end of stdin when serving stdio), then
    finish the calls in flight and return."""
    import signal

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    servers = []
    if uds:
        servers.append(await host.serve_unix(uds))
    if http:
        address, _, port = http.rpartition(":")
        servers.append(await host.serve_http(address or "127.0.0.1", int(port)))
    async with asyncio.TaskGroup() as group:
        if stdio:
            reading = group.create_task(host.serve_stdio())
            reading.add_done_callback(lambda _: stop.set())
        await stop.wait()
        if stdio and not reading.done():
            reading.cancel()
    for server in servers:
        server.close()
    await host.drain()
