"""The composition root: one `Settings` in, ember's parts out (journal, tools, planner, Runtime).

Every command and library user that wants ember as configured builds it here, so the parts are
wired one way:

```python
settings = Settings.load()
async with open_runtime(settings) as runtime:
    result = await runtime.run("What's the weather in Tokyo tomorrow?")
```
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

import msgspec

from ember.config import (
    THIS_PROCESS,
    Destination,
    PlannerSettings,
    Settings,
    ToolSource,
    egress_allows,
    host_of,
)
from ember.errors import EgressError, PlannerError
from ember.extras import require

if TYPE_CHECKING:
    from ember.executor import Runtime
    from ember.journal import Recorded, SQLiteJournal
    from ember.journal.postgres import PostgresJournal
    from ember.planner import Planner
    from ember.policy.control import ControlPlane
    from ember.telemetry.export import RunExporters
    from ember.tools.registry import ToolRegistry

__all__ = [
    "CHECKPOINT_EVERY_S",
    "build_planner",
    "check_egress",
    "destinations",
    "open_control",
    "open_journal",
    "open_runtime",
    "open_tools",
    "run_exporters",
]

CHECKPOINT_EVERY_S = 60.0  # how often a long-lived runtime signs the audit log's head


@contextlib.contextmanager
def open_journal(settings: Settings) -> Iterator[SQLiteJournal | PostgresJournal]:
    """The journal the settings name: the PostgreSQL one at `settings.journal_url` if set,
    else the SQLite file at `settings.db`; closed on exit."""
    journal: SQLiteJournal | PostgresJournal
    if settings.journal_url:
        require("a postgresql:// journal", "psycopg", "psycopg_pool")
        from ember.journal.postgres import PostgresJournal

        journal = PostgresJournal(settings.journal_url)
    else:
        from ember.journal import SQLiteJournal

        journal = SQLiteJournal(settings.db)
    try:
        yield journal
    finally:
        journal.close()


@contextlib.contextmanager
def open_control(settings: Settings) -> Iterator[ControlPlane]:
    """The control plane of the settings' journal (policy, tokens, audit), closed on exit."""
    from ember.journal.control import ControlRows, ControlStore
    from ember.policy.control import ControlPlane

    store: ControlRows
    if settings.journal_url:
        require("a postgresql:// journal", "psycopg")
        from ember.journal.pgcontrol import PostgresControlStore

        store = PostgresControlStore(settings.journal_url)
    else:
        store = ControlStore(settings.db)
    try:
        yield ControlPlane(store)
    finally:
        store.close()


def destinations(settings: Settings) -> list[Destination]:
    """Every place the configuration can send data to, other than this process: tool sources
    (their calls' arguments), the planner (the request and the catalogue), the span exporter
    (tool names and timings) and a PostgreSQL journal (everything). Empty for the default
    configuration (`ember doctor`)."""
    found = [
        Destination(source.destination, "tools", source.kinds[0] + ":" + _named(source))
        for source in settings.tools
    ]
    planner = settings.planner
    if planner.backend == "openai" and planner.base_url:
        found.append(Destination(host_of(planner.base_url), "model", planner.model or "openai"))
    if settings.otlp_endpoint:
        found.append(Destination(host_of(settings.otlp_endpoint), "spans", "otlp"))
    if settings.journal_url:  # every event of every run, the control plane
        found.append(Destination(_database_host(settings.journal_url), "journal", "postgresql"))
    return [d for d in found if d.where != THIS_PROCESS]


def _database_host(url: str) -> str:
    """`HOST:PORT` of a PostgreSQL URL (5432 when it names no port)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5432}"


def _named(source: ToolSource) -> str:
    mcp = source.mcp
    named = source.module or source.uds or source.http
    return named or (mcp.url or " ".join([mcp.command or "", *mcp.args]) if mcp else "")


def check_egress(settings: Settings) -> None:
    """Refuse a configuration that would send data where its `egress` list does not allow."""
    refused = [d for d in destinations(settings) if not egress_allows(settings.egress, d.where)]
    if refused:
        listed = "; ".join(f"{d.what} via {d.via} -> {d.where}" for d in refused)
        raise EgressError(
            f"the configuration would send data to destinations its egress list lacks: "
            f"{listed}. Add them to `egress` in ember.toml, or remove those sources "
            f"(`ember doctor` lists every destination)"
        )


@contextlib.asynccontextmanager
async def open_tools(settings: Settings) -> AsyncIterator[ToolRegistry]:
    """The demo tools (unless the settings turn them off), the enabled tool packs and the
    configured tool sources, connected until exit (refused before connecting if the `egress`
    list lacks one)."""
    from ember.tools.demo import DemoWorld, demo_registry
    from ember.tools.packs import register_packs
    from ember.tools.registry import ToolRegistry
    from ember.tools.sources import open_tool_sources

    check_egress(_replace(settings, planner=PlannerSettings(backend=None)))
    registry = (
        demo_registry(DemoWorld(settings.demo_dir)) if settings.demo_tools else ToolRegistry()
    )
    register_packs(registry, settings.packs, data_dir=settings.db.parent)
    async with open_tool_sources(registry, settings.tools):
        yield registry


def _replace(settings: Settings, **changes: object) -> Settings:
    return msgspec.structs.replace(settings, **changes)


def build_planner(
    settings: PlannerSettings,
    *,
    say: Callable[[str], None] | None = None,
    egress: tuple[str, ...] | None = None,
) -> Planner | None:
    """The planner `settings.backend` names (None for none). `say` hears about slow work
    ahead (loading the embedded model). `egress`: where a remote model may be."""
    if settings.backend is None:
        return None
    if settings.backend == "scripted":
        from ember.planner.scripted import DEMO_SCRIPT, ScriptedPlanner, load_script

        return ScriptedPlanner(load_script(settings.script) if settings.script else DEMO_SCRIPT)
    if settings.backend == "openai":
        require("the openai planner", "httpx")
        from ember.planner.openai import OpenAIPlanner

        where = host_of(settings.base_url) if settings.base_url else ""
        if where and not egress_allows(egress, where):
            raise EgressError(
                f"the openai planner would send requests to {where}, which the egress list "
                f"of ember.toml lacks: add {where!r} to `egress`"
            )
        if not settings.base_url or not settings.model:
            raise PlannerError(
                "--planner openai needs --base-url (or EMBER_OPENAI_BASE_URL), e.g. "
                "http://127.0.0.1:8000/v1, and --model, the name the server knows the model by"
            )
        return OpenAIPlanner(
            settings.base_url,
            settings.model,
            response_format=settings.response_format,
            abstain_band=settings.abstain_band,
            rules_off=frozenset(settings.rules_off),
        )
    require(
        "the llama planner (ember's default)",
        "numpy",
        "llama_cpp",
        "pycountry",
        hint="or plan with --planner scripted (fixed demo plans) or --planner openai "
        "(an OpenAI-compatible server)",
    )
    from ember.planner.llama import LlamaPlanner

    if say is not None:
        say("loading the model (the first run assembles it from its packages)...")
    return LlamaPlanner(
        settings.model,
        prefix_cache=settings.prefix_cache,
        rules_off=frozenset(settings.rules_off),
        abstain_band=settings.abstain_band,
    )


@contextlib.asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    observer: Callable[[Recorded], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> AsyncIterator[Runtime]:
    """A `Runtime` over the settings' journal, tools, planner and control plane, all closed
    on exit. `observer` sees each journal event once it is durable, with its position in the
    journal (progress, exporters, the server's event streams).
    The audit log's head is signed every `CHECKPOINT_EVERY_S` and at exit."""
    from ember.executor import Runtime
    from ember.journal.observed import ObservedJournal

    check_egress(settings)
    with open_journal(settings) as journal, open_control(settings) as control:
        async with open_tools(settings) as registry, _checkpoints(settings, control):
            observed = ObservedJournal(journal, observer) if observer else journal
            planner = build_planner(settings.planner, say=say, egress=settings.egress)
            with Runtime(registry, planner, observed, control=control) as runtime:
                yield runtime


@contextlib.asynccontextmanager
async def _checkpoints(settings: Settings, control: ControlPlane) -> AsyncIterator[None]:
    """Sign the audit log's head periodically while the body runs, and once at its end."""
    from ember.policy.signing import AuditSigner

    signer = AuditSigner(settings.signing_key)

    async def periodically() -> None:
        while True:
            await asyncio.sleep(CHECKPOINT_EVERY_S)
            signer.checkpoint(control.store)

    # not a TaskGroup: in Python 3.11 it would wrap the body's own errors in an ExceptionGroup
    task = asyncio.create_task(periodically())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        signer.checkpoint(control.store)


def run_exporters(settings: Settings) -> RunExporters:
    """Prometheus metrics of every finished run, and OTLP spans when an endpoint is set."""
    from ember.telemetry.export import LayerMetrics, RunExporters, SpanExport

    if settings.otlp_endpoint:
        check_egress(_replace(settings, tools=(), planner=PlannerSettings(backend=None)))
    spans = SpanExport(settings.otlp_endpoint) if settings.otlp_endpoint else None
    return RunExporters(LayerMetrics(), spans)
