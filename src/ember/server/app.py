"""The run server: an HTTP API over one `Runtime`, with Prometheus metrics and OTLP spans.

```
POST /runs            {"task": "...", "today": "YYYY-MM-DD"?}: runs it, answers `ember run --json`
GET  /runs            recent runs, newest first (?limit=20)
GET  /runs/{run_id}   one run (an id prefix is enough): its folded state and its events
GET  /metrics         Prometheus text: ember_layer_seconds{layer}, ember_step_seconds{tool},
                      ember_runs_total{status}
GET  /health
```

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
from contextlib import AbstractAsyncContextManager
from datetime import date
from typing import TYPE_CHECKING, Any

import msgspec

from ember.errors import EmberError, RunNotFoundError, UserError
from ember.journal import run_document
from ember.planner.base import PlanningTask
from ember.telemetry.export import LayerMetrics, RunExporters, SpanExport

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ember.executor import Runtime
    from ember.journal import Event, SQLiteJournal

__all__ = ["create_app", "serve"]

OpenRuntime = Callable[[Callable[["Event"], None]], AbstractAsyncContextManager["Runtime"]]


class _RunApi:
    """The endpoints, over one journal and the runtime the app's lifespan opens."""

    def __init__(self, journal: SQLiteJournal, metrics: LayerMetrics) -> None:
        self.journal = journal
        self.metrics = metrics
        self.runtime: Runtime | None = None

    async def start_run(self, request: Request) -> Response:
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
        assert self.runtime is not None, "the lifespan opens the runtime before requests"
        try:
            result = await self.runtime.run(task, today=today)
        except UserError as exc:
            return _error(400, str(exc))
        except EmberError as exc:
            return _error(500, str(exc))
        return _json(result.to_json())

    async def list_runs(self, request: Request) -> Response:
        limit = request.query_params.get("limit", "20")
        if not limit.isdigit():
            return _error(400, f"limit={limit!r} is not a whole number")
        return _json(msgspec.to_builtins(self.journal.runs(int(limit))))

    async def show_run(self, request: Request) -> Response:
        try:
            run_id = self.journal.find_run(request.path_params["run_id"])
            events = self.journal.read(run_id)
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


def _interrupted(journal: SQLiteJournal) -> list[str]:
    from ember.executor.runtime import interrupted_runs

    run_ids = interrupted_runs(journal)
    if run_ids:
        _say(f"resuming {len(run_ids)} interrupted run(s): {', '.join(run_ids)}")
    return run_ids


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


def create_app(
    journal: SQLiteJournal,
    open_runtime: OpenRuntime,
    *,
    otlp_endpoint: str | None = None,
    ready: Callable[[], None] | None = None,
) -> Starlette:
    """The ASGI app. `open_runtime(observer)` opens the runtime (tools, planner) inside the
    server's event loop, with `observer` seeing each durable journal event; `ready` is called
    once it is open."""
    try:
        from starlette.applications import Starlette
        from starlette.routing import Route
    except ImportError:
        raise UserError(
            'ember serve needs the server extra: run `pip install -e ".[server]"` (or '
            "`scripts/install`)"
        ) from None
    metrics = LayerMetrics()
    exporters = RunExporters([metrics, *([SpanExport(otlp_endpoint)] if otlp_endpoint else [])])
    api = _RunApi(journal, metrics)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            async with open_runtime(exporters.observe) as runtime:
                api.runtime = runtime
                warm = getattr(runtime.planner, "warm", None)  # the embedded model's
                if warm is not None:  # loaded and its prompt prefix read before the first run
                    catalogue = tuple(runtime.registry.descriptors())
                    await asyncio.to_thread(warm, PlanningTask("", date.today(), catalogue))
                resuming = [
                    asyncio.create_task(_resume(runtime, run_id))
                    for run_id in _interrupted(journal)
                ]
                if ready is not None:
                    ready()
                try:
                    yield
                finally:  # what is still running stays interrupted, for the next start
                    runtime.stopping = True
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
        lifespan=lifespan,
    )


def serve(
    journal: SQLiteJournal,
    open_runtime: OpenRuntime,
    *,
    host: str = "127.0.0.1",
    port: int = 8321,
    otlp_endpoint: str | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; queued spans are sent before it returns."""
    import uvicorn

    def ready() -> None:
        where = f" and sending spans to {otlp_endpoint}" if otlp_endpoint else ""
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
    app = create_app(journal, open_runtime, otlp_endpoint=otlp_endpoint, ready=ready)
    config: Any = uvicorn.Config(app, log_level="warning", lifespan="on")
    with listener:
        uvicorn.Server(config).run(sockets=[listener])
