"""The run server: an HTTP API over one `Runtime`, with Prometheus metrics and OTLP spans.

```
POST /runs            {"task": "...", "today": "YYYY-MM-DD"?}: runs it, answers `ember run --json`
GET  /runs            recent runs, newest first (?limit=20)
GET  /runs/{run_id}   one run (an id prefix is enough): its folded state and its events
GET  /metrics         Prometheus text: ember_layer_seconds{layer}, ember_step_seconds{tool},
                      ember_runs_total{status}
GET  /health           (the only endpoint that needs no token)
```

Every endpoint but `/health` needs `Authorization: Bearer TOKEN` (`ember tokens create`): 401
without a valid one, 403 when the policy denies the token's principal the action (`start_run`
for POST /runs, `read_runs` for reading them), each with a JSON body that says what to do. The
check is `ember.policy.tokens.authenticate`, called by one middleware (`_Authenticated`).
`--no-auth` (loopback only) lets every request act as the OS user, and says so at start.

At start, once its planner is ready, the server resumes the journal's interrupted runs (those
`running` whose process is gone, as `ember resume --all` does); at shutdown, those still going
are left interrupted again, for the next start, rather than recorded as cancelled.

Runs started over HTTP run concurrently in the server's event loop and share the journal (group
commit). Errors are JSON `{"error": "..."}`: 400 names the bad input, 404 an unknown run.
Needs the `server` extra (Starlette, uvicorn, prometheus-client); OTLP needs `otel`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import AsyncIterator, Callable
from datetime import date
from typing import TYPE_CHECKING, Any

import msgspec

from ember.app import open_runtime, run_exporters
from ember.errors import (
    AuthenticationError,
    EmberError,
    PermissionDeniedError,
    RunNotFoundError,
    UserError,
)
from ember.extras import require
from ember.journal import run_document

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ember.config import Settings
    from ember.executor import Runtime
    from ember.telemetry.export import LayerMetrics

__all__ = ["create_app", "serve"]


class _RunApi:
    """The endpoints, over the runtime the app's lifespan opens."""

    def __init__(self, metrics: LayerMetrics) -> None:
        self.metrics = metrics
        self._runtime: Runtime | None = None

    @property
    def runtime(self) -> Runtime:
        assert self._runtime is not None, "the lifespan opens the runtime before requests"
        return self._runtime

    def attach(self, runtime: Runtime) -> None:
        """Serve requests with `runtime` (the lifespan's)."""
        self._runtime = runtime

    def authenticate(self, header: str | None) -> str:
        """The principal a request's `Authorization` header stands for (AuthenticationError)."""
        from ember.policy.tokens import authenticate, bearer

        assert self.runtime.control is not None
        return authenticate(self.runtime.control.store, bearer(header)).name

    def allow(self, request: Request, action: str) -> str:
        """The request's principal, if the policy in force lets it do `action` on the runs."""
        control = self.runtime.control
        assert control is not None
        principal = str(request.state.principal)
        control.refresh().require(principal, action, "runs")
        return principal

    async def start_run(self, request: Request) -> Response:
        try:
            principal = self.allow(request, "start_run")
        except PermissionDeniedError as exc:
            return _denied(exc)
        try:
            body = msgspec.json.decode(await request.body())
        except msgspec.DecodeError as exc:
            return _error(400, f"the body is not JSON: {exc}")
        task = body.get("task") if isinstance(body, dict) else None
        if not isinstance(task, str) or not task.strip():
            return _error(400, 'send {"task": "what to do, in plain words"}')
        today = None
        if body.get("today") is not None:
            try:
                today = date.fromisoformat(str(body["today"]))
            except ValueError:
                return _error(400, f"today={body['today']!r} is not a date: use YYYY-MM-DD")
        try:
            result = await self.runtime.run(task, today=today, principal=principal)
        except UserError as exc:
            return _error(400, str(exc))
        except EmberError as exc:
            return _error(500, str(exc))
        return _json(result.to_json())

    async def list_runs(self, request: Request) -> Response:
        try:
            self.allow(request, "read_runs")
        except PermissionDeniedError as exc:
            return _denied(exc)
        limit = request.query_params.get("limit", "20")
        if not limit.isdigit():
            return _error(400, f"limit={limit!r} is not a whole number")
        return _json(msgspec.to_builtins(self.runtime.journal.runs(int(limit))))

    async def show_run(self, request: Request) -> Response:
        try:
            self.allow(request, "read_runs")
        except PermissionDeniedError as exc:
            return _denied(exc)
        journal = self.runtime.journal
        try:
            run_id = journal.find_run(request.path_params["run_id"])
            events = journal.read(run_id)
        except RunNotFoundError as exc:
            return _error(404, str(exc))
        except EmberError as exc:  # an ambiguous prefix
            return _error(400, str(exc))
        return _json(run_document(run_id, events))

    async def scrape(self, _: Request) -> Response:
        from starlette.responses import Response

        body, content_type = self.metrics.exposition()
        return Response(body, media_type=content_type)

    async def health(self, _: Request) -> Response:
        return _json({"status": "ok"})


async def _resume(runtime: Runtime, run_id: str) -> None:
    try:
        result = await runtime.resume(run_id)
    except EmberError as exc:
        _say(f"could not resume {run_id}: {exc}")
    except Exception as exc:  # a bug: said now, not when the server stops
        _say(f"could not resume {run_id}: {type(exc).__name__}: {exc}")
        raise
    else:
        _say(f"resumed {run_id}: {result.status.value}")


def _say(message: str) -> None:
    print(f"ember serve: {message}", file=sys.stderr, flush=True)


def _json(content: Any, status: int = 200) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(content, status_code=status)


def _error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


def _denied(exc: PermissionDeniedError) -> Response:
    return _json(
        {
            "error": f"forbidden: {exc}",
            "what_to_do": "ask whoever keeps the policy for a rule that permits this "
            "(`ember policy show`; `ember policy test PRINCIPAL TOOL` to check one)",
        },
        403,
    )


class _Authenticated:
    """ASGI middleware: every request but `GET /health` must carry a valid bearer token; the
    principal goes into `request.state.principal`. `local`: act as this principal without a
    token (`--no-auth`)."""

    def __init__(self, app: ASGIApp, api: _RunApi, local: str | None) -> None:
        self.app, self.api, self.local = app, api, local

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/health":
            await self.app(scope, receive, send)
            return
        principal = self.local
        if principal is None:
            header = dict(scope["headers"]).get(b"authorization")
            try:
                principal = self.api.authenticate(header.decode("latin-1") if header else None)
            except AuthenticationError as exc:
                response = _json(
                    {
                        "error": f"unauthorized: {exc}",
                        "what_to_do": "send `Authorization: Bearer TOKEN` with a token from "
                        "`ember tokens create NAME`",
                    },
                    401,
                )
                response.headers["WWW-Authenticate"] = 'Bearer realm="ember"'
                await response(scope, receive, send)
                return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def create_app(
    settings: Settings, *, ready: Callable[[], None] | None = None, auth: bool = True
) -> Starlette:
    """The ASGI app over ember as `settings` configure it. Its lifespan opens the runtime
    inside the server's event loop, gets the planner ready, resumes interrupted runs, then calls
    `ready`. `auth=False`: no token needed, every request acts as the OS user."""
    require("ember serve", "starlette", "uvicorn", "prometheus_client")
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route

    exporters = run_exporters(settings)
    api = _RunApi(exporters.metrics)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            async with open_runtime(settings, observer=exporters.observe) as runtime:
                api.attach(runtime)
                await runtime.warm()  # the embedded model loaded before the first request
                interrupted = runtime.interrupted_runs()
                if interrupted:
                    _say(
                        f"resuming {len(interrupted)} interrupted run(s): {', '.join(interrupted)}"
                    )
                resuming = [asyncio.create_task(_resume(runtime, run_id)) for run_id in interrupted]
                if ready is not None:
                    ready()
                try:
                    yield
                finally:  # what is still running stays interrupted, for the next start
                    runtime.leave_interrupted()
                    for task in resuming:
                        task.cancel()
                    await asyncio.gather(*resuming, return_exceptions=True)
        finally:
            exporters.close()

    return Starlette(
        routes=[
            Route("/runs", api.start_run, methods=["POST"]),
            Route("/runs", api.list_runs, methods=["GET"]),
            Route("/runs/{run_id}", api.show_run, methods=["GET"]),
            Route("/metrics", api.scrape, methods=["GET"]),
            Route("/health", api.health, methods=["GET"]),
        ],
        middleware=[Middleware(_Authenticated, api=api, local=None if auth else _local())],
        lifespan=lifespan,
    )


def _local() -> str:
    from ember.policy.control import local_user

    return local_user()


def serve(
    settings: Settings, *, host: str = "127.0.0.1", port: int = 8321, auth: bool = True
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
    app = create_app(settings, ready=ready, auth=auth)
    config: Any = uvicorn.Config(app, log_level="warning", lifespan="on")
    with listener:
        uvicorn.Server(config).run(sockets=[listener])
