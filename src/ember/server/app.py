"""The run server: the console's API over one `Runtime`, its web UI, metrics and OTLP spans.

```
POST /v1/runs                     {"task", "today"?, "planner"?} -> 202 {run_id, events}
                                  (?wait=true: 200 with the result, as `ember run --json`)
GET  /v1/runs                     ?status=&principal=&since=&before=&limit=: a page, newest first
GET  /v1/runs/{id}                the run's folded state and its events (an id prefix is enough)
GET  /v1/runs/{id}/events         Server-Sent Events: replayed, then live (Last-Event-ID)
POST /v1/runs/{id}/cancel
POST /v1/runs/{id}/steps/{n}/approve | deny | resolve {"decision": retry|skip|fail}
GET  /v1/inbox                    steps waiting for a person;  GET /v1/audit: the chain verified
GET  /v1/tools                    the tools and where each lives
POST /v1/prefill                  {"session", "text"}: 204; 409 when the planner cannot prefill
GET  /metrics  /health  /openapi.json  /   (the web UI, under /static)
```

`POST /runs`, `GET /runs` and `GET /runs/{id}` stay as aliases (POST /runs waits for the end).
Every endpoint but `/health`, `/openapi.json` and the UI's files needs `Authorization: Bearer
TOKEN` (`ember tokens create`); 401 without a valid one, 403 when the policy denies the action.
`--no-auth` (loopback only) lets every request act as the OS user. Limits (`[server]` in
ember.toml): body size (413), task length (422), requests a second per token and runs at once
(429 with Retry-After). Every error is a JSON `Problem` naming the field and what to do.

At start, once its planner is ready, the server resumes the journal's interrupted runs; at
shutdown, those still going are left interrupted again, for the next start.
Needs the `server` extra (Starlette, uvicorn, prometheus-client); OTLP needs `otel`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ember.app import open_runtime, run_exporters
from ember.errors import UserError
from ember.executor import RunResult
from ember.extras import require
from ember.server.api import Console
from ember.server.desk import Desk
from ember.server.errors import exception_handlers, json_response
from ember.server.events import EventHub
from ember.server.limits import Gate
from ember.server.schema import (
    AuditView,
    Cancelled,
    Decided,
    Endpoint,
    Health,
    Inbox,
    Param,
    PrefillRequest,
    ResolveRequest,
    RunAccepted,
    RunDocument,
    RunPage,
    RunRequest,
    ToolList,
    openapi,
)

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ember.config import Settings
    from ember.executor import Runtime
    from ember.journal import Recorded
    from ember.telemetry.export import LayerMetrics

__all__ = ["STATIC", "create_app", "endpoints", "serve"]

STATIC = Path(__file__).parent / "static"

_RUN_ID = Param("run_id", "path", {"type": "string"}, "a run id (or a unique prefix of one)")
_STEP = Param("step", "path", {"type": "integer", "minimum": 0}, "the step's id")
_LIST = [
    Param("status", "query", {"enum": ["running", "waiting", "succeeded", "failed", "cancelled"]}),
    Param("principal", "query", {"type": "string"}, "who started the runs"),
    Param("since", "query", {"type": "string"}, "started at or after: ISO date/time or epoch s"),
    Param(
        "before",
        "query",
        {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
        "the `next` of the last page",
    ),
    Param("limit", "query", {"type": "integer", "minimum": 1, "maximum": 500}),
]


def endpoints(console: Console, desk: Desk, metrics: LayerMetrics) -> list[Endpoint]:
    """Every route, as the app serves it and the OpenAPI document describes it."""

    async def submit_and_wait(request: Request) -> Response:
        request.scope["query_string"] = b"wait=true"
        return await console.submit(request)

    async def scrape(_: Request) -> Response:
        from starlette.responses import Response

        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    async def index(_: Request) -> Response:
        from starlette.responses import FileResponse

        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    run, decide = [_RUN_ID], [_RUN_ID, _STEP]
    gone = {404: "no such run (or not one this token may see)"}
    waiting = {**gone, 409: "the step is not waiting for this decision"}
    wait = Param("wait", "query", {"enum": ["true", "false"]}, "true: answer when it is over")
    submitted = {200: RunResult, 202: RunAccepted, 409: "no planner", 429: "too many runs"}
    return [
        Endpoint("POST", "/v1/runs", console.submit, "Start a run", submitted, RunRequest, [wait]),
        Endpoint("GET", "/v1/runs", console.list_runs, "List runs", {200: RunPage}, None, _LIST),
        Endpoint(
            "GET",
            "/v1/runs/{run_id}",
            console.show_run,
            "A run",
            {200: RunDocument, **gone},
            params=run,
        ),
        Endpoint(
            "GET",
            "/v1/runs/{run_id}/events",
            console.events,
            "A run's events as Server-Sent Events (replayed, then live)",
            {200: "text/event-stream", 400: "a Last-Event-ID this server never sent", **gone},
            params=[
                _RUN_ID,
                Param("Last-Event-ID", "header", {"type": "string"}, "resume after this event"),
                Param("after", "query", {"type": "string"}, "as Last-Event-ID"),
            ],
        ),
        Endpoint(
            "POST",
            "/v1/runs/{run_id}/cancel",
            console.cancel,
            "Cancel a run",
            {200: Cancelled, 409: "not running here", **gone},
            params=run,
        ),
        Endpoint(
            "POST",
            "/v1/runs/{run_id}/steps/{step}/approve",
            desk.approve,
            "Approve a waiting step",
            {202: Decided, **waiting},
            params=decide,
        ),
        Endpoint(
            "POST",
            "/v1/runs/{run_id}/steps/{step}/deny",
            desk.deny,
            "Deny a waiting step",
            {202: Decided, **waiting},
            params=decide,
        ),
        Endpoint(
            "POST",
            "/v1/runs/{run_id}/steps/{step}/resolve",
            desk.resolve,
            "Decide a step in doubt",
            {202: Decided, **waiting},
            ResolveRequest,
            decide,
        ),
        Endpoint("GET", "/v1/inbox", desk.inbox, "Steps waiting for a person", {200: Inbox}),
        Endpoint(
            "GET",
            "/v1/audit",
            desk.audit,
            "The audit chain, verified",
            {200: AuditView, 409: "no audit log"},
        ),
        Endpoint("GET", "/v1/tools", desk.tools, "The tools and where they live", {200: ToolList}),
        Endpoint(
            "POST",
            "/v1/prefill",
            desk.prefill,
            "Prefill the planner while typing",
            {204: None, 409: "the planner cannot prefill"},
            PrefillRequest,
        ),
        Endpoint("GET", "/metrics", scrape, "Prometheus metrics", {200: "text/plain"}),
        Endpoint("GET", "/health", desk.health, "Health", {200: Health}, public=True),
        Endpoint("GET", "/", index, "The web console", {200: "text/html"}, public=True),
        Endpoint(
            "POST",
            "/runs",
            submit_and_wait,
            "Run a task, answer when over",
            submitted,
            RunRequest,
            deprecated=True,
        ),
        Endpoint(
            "GET",
            "/runs",
            console.list_runs,
            "List runs",
            {200: RunPage},
            None,
            _LIST,
            deprecated=True,
        ),
        Endpoint(
            "GET",
            "/runs/{run_id}",
            console.show_run,
            "A run",
            {200: RunDocument, **gone},
            params=run,
            deprecated=True,
        ),
    ]


def create_app(
    settings: Settings,
    *,
    ready: Callable[[], None] | None = None,
    auth: bool = True,
    worker: bool = False,
) -> Starlette:
    """The ASGI app over ember as `settings` configure it. Its lifespan opens the runtime
    inside the server's event loop, gets the planner ready, resumes interrupted runs, then calls
    `ready`. `auth=False`: no token needed, every request acts as the OS user.

    On a PostgreSQL journal (`settings.journal_url`) the server is one of a cluster's: new runs
    go to the queue for `ember worker`s, which also take over interrupted runs (none is resumed
    here at start); `worker=True` runs a worker inside the server too."""
    require("ember serve", "starlette", "uvicorn", "prometheus_client")
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    exporters = run_exporters(settings)
    hub = EventHub()
    console = Console(settings.server, hub, local=not auth)
    desk = Desk(console, settings.signing_key)
    document: dict[str, Any] = {}

    async def described(_: Request) -> Response:
        return json_response(document)

    table = [
        *endpoints(console, desk, exporters.metrics),
        Endpoint(
            "GET",
            "/openapi.json",
            described,
            "This document",
            {200: "application/json"},
            public=True,
        ),
    ]
    document.update(openapi(table))

    def observe(recorded: Recorded) -> None:
        exporters.observe(recorded)
        hub.observe(recorded)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            # a cluster's server that only queues runs plans none: no model to load
            queues_only = bool(settings.journal_url) and not worker
            planned = _without_planner(settings) if queues_only else settings
            async with open_runtime(planned, observer=observe) as runtime:
                console.attach(runtime)
                await runtime.warm()  # the embedded model loaded before the first request
                async with console.tasks.open(), _cluster(settings, console, runtime, worker):
                    if console.queue is None:
                        _resume_interrupted(console, runtime)
                    if ready is not None:
                        ready()
                    try:
                        yield
                    finally:  # what is still running stays interrupted, for the next start
                        runtime.leave_interrupted()
        finally:
            exporters.close()

    routes: list[Any] = [
        Route(_starlette_path(e.path), e.handler, methods=[e.method]) for e in table
    ]
    routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    local = None if auth else _local()
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(Gate, authenticate=console.authenticate, local=local, limits=settings.server)
        ],
        exception_handlers=exception_handlers(),
        lifespan=lifespan,
    )


def _starlette_path(path: str) -> str:
    return path.replace("{step}", "{step:int}")


@contextlib.asynccontextmanager
async def _cluster(
    settings: Settings, console: Console, runtime: Runtime, worker: bool
) -> AsyncIterator[None]:
    """On a PostgreSQL journal: the queue new runs go to, and (`worker`) a worker claiming
    runs in this process, stopped at exit; else nothing."""
    if not settings.journal_url:
        if worker:
            raise UserError("ember serve --worker needs the shared journal: --db postgresql://")
        yield
        return
    from ember.executor.runtime import owner_id
    from ember.journal.leases import Leases
    from ember.journal.observed import ObservedJournal
    from ember.journal.postgres import PostgresJournal
    from ember.worker import Worker

    console.queue = Leases(settings.journal_url, owner_id())
    claims = Leases(settings.journal_url, owner_id())
    stop, task = asyncio.Event(), None
    if worker:
        journal = runtime.journal
        inner = journal.inner if isinstance(journal, ObservedJournal) else journal
        assert isinstance(inner, PostgresJournal)
        task = asyncio.create_task(Worker(runtime, inner, claims).serve(stop))
    try:
        yield
    finally:
        stop.set()
        if task is not None:
            await task
        await claims.close()
        await console.queue.close()


def _without_planner(settings: Settings) -> Settings:
    import msgspec

    from ember.config import PlannerSettings

    return msgspec.structs.replace(settings, planner=PlannerSettings(backend=None))


def _resume_interrupted(console: Console, runtime: Runtime) -> None:
    interrupted = runtime.interrupted_runs()
    if interrupted:
        _say(f"resuming {len(interrupted)} interrupted run(s): {', '.join(interrupted)}")
    for run_id in interrupted:
        console.tasks.adopt(run_id, "", _resumer(runtime, run_id))


def _resumer(runtime: Runtime, run_id: str) -> Callable[[], Any]:
    async def resume() -> RunResult:
        result = await runtime.resume(run_id)  # an error is said by the run's task
        _say(f"resumed {run_id}: {result.status.value}")
        return result

    return resume


def _say(message: str) -> None:
    print(f"ember serve: {message}", file=sys.stderr, flush=True)


def _local() -> str:
    from ember.policy.control import local_user

    return local_user()


def serve(
    settings: Settings,
    *,
    host: str = "127.0.0.1",
    port: int = 8321,
    auth: bool = True,
    worker: bool = False,
) -> None:
    """Serve until SIGINT/SIGTERM; queued spans are sent before it returns. `auth=False`
    (`--no-auth`) is refused unless `host` is a loopback address."""
    import ipaddress

    require("ember serve", "starlette", "uvicorn", "prometheus_client")

    import uvicorn

    if not auth:
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise UserError(
                f"--no-auth is for loopback development only, not --host {host}: create "
                "tokens (`ember tokens create NAME`) and drop --no-auth"
            )
        _say(
            f"WARNING: --no-auth: every request acts as OS user {_local()} without a token. "
            "For development on this machine only."
        )

    def ready() -> None:
        where = f" and sending spans to {settings.otlp_endpoint}" if settings.otlp_endpoint else ""
        _say(f"listening on http://{host}:{port}{where}")

    # Bound before the app starts: the port is known free before the model loads, and once
    # "listening" is printed, connections are accepted (served when start-up is over).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        listener = socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise UserError(
            f"cannot listen on {host}:{port}: {reason}: choose another --port"
        ) from None
    app = create_app(settings, ready=ready, auth=auth, worker=worker)
    # Event streams of runs that wait for a person stay open: a stop waits for them 5 s at most.
    config: Any = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
    )
    with listener:
        uvicorn.Server(config).run(sockets=[listener])
