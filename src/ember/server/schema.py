"""The API's bodies as msgspec Structs, and the OpenAPI document generated from them.

Every route is declared once, as an `Endpoint` (method, path, handler, the Struct of its body,
the Structs of its answers); `ember.server.app` builds the Starlette routes from the same list
and `openapi()` the document served at `/openapi.json`, whose schemas come from
`msgspec.json.schema_components`: the document cannot drift from the code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date
from typing import Any, Literal

import msgspec

from ember._version import __version__
from ember.journal import Event, RunState, RunSummary

__all__ = [
    "AuditEntry",
    "AuditView",
    "Cancelled",
    "Decided",
    "Endpoint",
    "Health",
    "Inbox",
    "InboxItem",
    "Param",
    "PrefillRequest",
    "Problem",
    "ResolveRequest",
    "RunAccepted",
    "RunDocument",
    "RunPage",
    "RunRequest",
    "ToolInfo",
    "ToolList",
    "openapi",
]


class Problem(msgspec.Struct, frozen=True):
    """Every error: what happened, the field at fault (if one is), what to do about it."""

    error: str
    what_to_do: str
    field: str | None = None


class RunRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Start a run: the task in plain words; `today` (YYYY-MM-DD) for relative dates; `planner`,
    if given, must be the server's."""

    task: str
    today: date | None = None
    planner: str | None = None


class RunAccepted(msgspec.Struct, frozen=True):
    """A run started: follow it at `events` (Server-Sent Events)."""

    run_id: str
    events: str
    status: Literal["running"] = "running"


class RunPage(msgspec.Struct, frozen=True):
    """Runs, newest first; `next`: pass it as `before` for the page of older runs."""

    runs: list[RunSummary]
    next: int | None = None


class RunDocument(msgspec.Struct, frozen=True):
    """A run as its journal says it is: its folded state and its events."""

    run: RunState
    events: list[Event]


class Cancelled(msgspec.Struct, frozen=True):
    run_id: str
    status: str


class ResolveRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A decision about a step in doubt: call it again, take it as done, or fail it."""

    decision: Literal["retry", "skip", "fail"]


class Decided(msgspec.Struct, frozen=True):
    """A decision recorded; the run goes on (`status`: running) in the server."""

    run_id: str
    step: int
    decision: str
    by: str
    status: str = "running"


class PrefillRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The request as typed so far, in one typing session (e.g. a browser tab)."""

    session: str
    text: str


class ToolInfo(msgspec.Struct, frozen=True):
    """A registered tool and where it lives (`source`: inproc, uds, http, mcp, a pack)."""

    name: str
    description: str
    execution_mode: str
    risk: str
    idempotent: bool
    source: str
    parameters: dict[str, Any]


class ToolList(msgspec.Struct, frozen=True):
    tools: list[ToolInfo]


class InboxItem(msgspec.Struct, frozen=True):
    """A step that waits for a person: `status` awaiting_approval (approve or deny) or in_doubt
    (retry, skip or fail)."""

    run_id: str
    step: int
    tool: str
    args: dict[str, Any]
    status: str
    reason: str
    principal: str
    task: str


class Inbox(msgspec.Struct, frozen=True):
    items: list[InboxItem]


class AuditEntry(msgspec.Struct, frozen=True):
    seq: int
    at: float
    kind: str
    entry: dict[str, Any]
    hash: str


class AuditView(msgspec.Struct, frozen=True):
    """The audit log's hash chain, verified now: `ok`, how many entries and signed checkpoints,
    the first broken entry (if any), and the latest entries."""

    ok: bool
    entries: int
    checkpoints: int
    signed: bool
    broken: str | None
    recent: list[AuditEntry]


class Health(msgspec.Struct, frozen=True):
    status: str


class Param(msgspec.Struct, frozen=True):
    """A query or path parameter of an endpoint."""

    name: str
    where: Literal["query", "path", "header"]
    schema: dict[str, Any]
    description: str = ""
    required: bool = False


Handler = Callable[[Any], Awaitable[Any]]


class Endpoint(msgspec.Struct, frozen=True):
    """One route: what the OpenAPI document says of it and the handler that serves it.
    `responses`: status -> a Struct type, or a media type for a non-JSON answer."""

    method: str
    path: str
    handler: Handler
    summary: str
    responses: dict[int, Any]
    body: Any = None
    params: list[Param] = []
    public: bool = False  # no token needed
    deprecated: bool = False  # an alias kept for older clients


# The errors any authenticated endpoint may answer, and why.
_COMMON_ERRORS = {
    401: "no valid bearer token",
    403: "the policy denies this principal the action",
    413: "the request body is larger than the server accepts",
    429: "too many requests for this token (see Retry-After)",
}
_WHY = {
    200: "OK",
    202: "accepted",
    204: "done, nothing to answer",
    400: "the request is malformed (not JSON, a bad query parameter)",
    404: "no such run (or not one this token may see) or step",
    409: "the run or the planner is not in a state that allows this",
    422: "a field has the wrong type or value",
    429: "too many requests or runs (see Retry-After)",
}


def openapi(endpoints: list[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of `endpoints`, schemas generated from their Structs."""
    types: list[Any] = [Problem]
    for endpoint in endpoints:
        if endpoint.body is not None:
            types.append(endpoint.body)
        types += [t for t in endpoint.responses.values() if not isinstance(t, str)]
    unique = list(dict.fromkeys(types))
    schemas, components = msgspec.json.schema_components(
        unique, ref_template="#/components/schemas/{name}"
    )
    by_type = dict(zip(unique, schemas, strict=True))
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint, by_type)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ember",
            "version": __version__,
            "description": "The run server: start runs, follow them as Server-Sent Events, "
            "decide waiting steps, read the journal, the tools and the audit log.",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _operation(endpoint: Endpoint, by_type: dict[Any, Any]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": endpoint.summary,
        "operationId": endpoint.handler.__name__.strip("_"),
        "responses": {},
    }
    if endpoint.params:
        operation["parameters"] = [
            {
                "name": p.name,
                "in": p.where,
                "required": p.required or p.where == "path",
                "schema": p.schema,
                "description": p.description,
            }
            for p in endpoint.params
        ]
    if endpoint.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": by_type[endpoint.body]}},
        }
    errors = {} if endpoint.public else dict(_COMMON_ERRORS)
    if endpoint.body is not None:
        errors |= {400: _WHY[400], 422: _WHY[422]}
    if any(p.where in ("query", "header") for p in endpoint.params):
        errors |= {400: "a query parameter or header is malformed"}
    for status, answer in sorted({**errors, **endpoint.responses}.items()):
        operation["responses"][str(status)] = _response(status, answer, by_type)
    if endpoint.deprecated:
        operation["deprecated"] = True
    if endpoint.public:
        operation["security"] = []
    else:
        operation["security"] = [{"bearer": []}]
    return operation


def _response(status: int, answer: Any, by_type: dict[Any, Any]) -> dict[str, Any]:
    if status >= 400:
        why = answer if isinstance(answer, str) else _WHY.get(status, "error")
        content = {"application/json": {"schema": by_type[Problem]}}
        response: dict[str, Any] = {"description": why, "content": content}
        if status == 429:
            response["headers"] = {"Retry-After": {"schema": {"type": "integer"}}}
        return response
    if answer is None:
        return {"description": _WHY.get(status, "OK")}
    if isinstance(answer, str):
        return {"description": _WHY.get(status, "OK"), "content": {answer: {}}}
    return {
        "description": _WHY.get(status, "OK"),
        "content": {"application/json": {"schema": by_type[answer]}},
    }
