"""The wire protocol: JSON-RPC 2.0 with the Model Context Protocol's method names.

Stateless, as in MCP's 2026-07-28 revision: no session and no `initialize` handshake needed.

```
-> {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
<- {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name", "description", "inputSchema",
                                                      "outputSchema"?, "annotations", "_meta"}]}}
-> {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
    "params": {"name": "get_weather", "arguments": {...},
               "_meta": {"ember/idempotency_key": "...", "traceparent": "00-..."}}}
<- {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "<json>"}],
                                           "structuredContent": ..., "isError": false,
                                           "_meta": {"ember/self_s": 0.0012}}}
```

`async` tools (execution_mode async) are started with `ember/jobs/submit` (same params as
tools/call; answers `{"handle"}` at once, the same handle for the same idempotency key) and
collected with `ember/jobs/result` (`{"handle", "wait_s"}`: a long poll answering
`{"done": false}` or `{"done": true, "result": <a tools/call result>}`), so a runtime restarted
after a crash re-attaches to the job its journal recorded. A `traceparent` in `_meta` (W3C trace
context: the run is the trace, the step a span) reaches the tool as `current_step().traceparent`.

Protocol errors are JSON-RPC errors (parse -32700, invalid request -32600, unknown method
-32601, invalid params -32602: unknown tool, arguments that break the schema); a tool that
fails answers `isError: true` with its message. ember's own descriptor fields travel in `_meta`
(`ember/execution_mode`, `ember/idempotent`, `ember/risk`, `ember/timeout_s`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ember.tools.descriptor import ExecutionMode, Risk, ToolDescriptor

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "WireError",
    "descriptor_from_mcp",
    "descriptor_to_mcp",
    "error_response",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class WireError(Exception):
    """A protocol error to answer as a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(message)


def error_response(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def descriptor_to_mcp(descriptor: ToolDescriptor) -> dict[str, Any]:
    """An ember descriptor as an MCP tool object."""
    tool: dict[str, Any] = {
        "name": descriptor.tool_name,
        "description": descriptor.description,
        "inputSchema": descriptor.parameters,
        "annotations": {
            "idempotentHint": descriptor.idempotent,
            "destructiveHint": descriptor.risk == Risk.HIGH,
            **({} if descriptor.read_only is None else {"readOnlyHint": descriptor.read_only}),
        },
        "_meta": {
            "ember/execution_mode": descriptor.execution_mode.value,
            "ember/idempotent": descriptor.idempotent,
            "ember/risk": descriptor.risk.value,
            "ember/timeout_s": descriptor.timeout_s,
        },
    }
    if descriptor.returns is not None:
        if descriptor.returns.get("type") == "object":
            tool["outputSchema"] = descriptor.returns
        else:  # MCP's outputSchema must describe an object: keep others for ember clients
            tool["_meta"]["ember/returns"] = descriptor.returns
    return tool


def descriptor_from_mcp(tool: dict[str, Any]) -> ToolDescriptor:
    """An MCP tool object (from any MCP server) as an ember descriptor."""
    meta = tool.get("_meta") or {}
    annotations = tool.get("annotations") or {}
    parameters = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return msgspec.convert(
        {
            "tool_name": tool["name"],
            "parameters": parameters,
            "description": tool.get("description") or "",
            "returns": tool.get("outputSchema") or meta.get("ember/returns"),
            "execution_mode": meta.get("ember/execution_mode", ExecutionMode.SYNC.value),
            "idempotent": bool(meta.get("ember/idempotent", annotations.get("idempotentHint"))),
            "risk": meta.get("ember/risk")
            or (Risk.HIGH.value if annotations.get("destructiveHint") else Risk.LOW.value),
            "timeout_s": meta.get("ember/timeout_s"),
            "read_only": hint
            if isinstance(hint := annotations.get("readOnlyHint"), bool)
            else None,
        },
        ToolDescriptor,
    )
