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

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

from ember.config import PlannerSettings, Settings
from ember.errors import PlannerError
from ember.extras import require

if TYPE_CHECKING:
    from ember.executor import Runtime
    from ember.journal import Event, SQLiteJournal
    from ember.planner import Planner
    from ember.telemetry.export import RunExporters
    from ember.tools.registry import ToolRegistry

__all__ = ["build_planner", "open_journal", "open_runtime", "open_tools", "run_exporters"]


@contextlib.contextmanager
def open_journal(settings: Settings) -> Iterator[SQLiteJournal]:
    """The journal at `settings.db`, closed on exit."""
    from ember.journal import SQLiteJournal

    journal = SQLiteJournal(settings.db)
    try:
        yield journal
    finally:
        journal.close()


@contextlib.asynccontextmanager
async def open_tools(settings: Settings) -> AsyncIterator[ToolRegistry]:
    """The demo tools (unless the settings turn them off), the enabled tool packs and the
    configured tool sources, connected until exit."""
    from ember.tools.demo import DemoWorld, demo_registry
    from ember.tools.packs import register_packs
    from ember.tools.registry import ToolRegistry
    from ember.tools.sources import open_tool_sources

    registry = (
        demo_registry(DemoWorld(settings.demo_dir)) if settings.demo_tools else ToolRegistry()
    )
    register_packs(registry, settings.packs, data_dir=settings.db.parent)
    async with open_tool_sources(registry, settings.tools):
        yield registry


def build_planner(
    settings: PlannerSettings, *, say: Callable[[str], None] | None = None
) -> Planner | None:
    """The planner `settings.backend` names (None for none). `say` hears about slow work
    ahead (loading the embedded model)."""
    if settings.backend is None:
        return None
    if settings.backend == "scripted":
        from ember.planner.scripted import DEMO_SCRIPT, ScriptedPlanner, load_script

        return ScriptedPlanner(load_script(settings.script) if settings.script else DEMO_SCRIPT)
    if settings.backend == "openai":
        require("the openai planner", "httpx")
        from ember.planner.openai import OpenAIPlanner

        if not settings.base_url or not settings.model:
            raise PlannerError(
                "--planner openai needs --base-url (or EMBER_OPENAI_BASE_URL), e.g. "
                "http://127.0.0.1:8000/v1, and --model, the name the server knows the model by"
            )
        return OpenAIPlanner(
            settings.base_url, settings.model, response_format=settings.response_format
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
    return LlamaPlanner(settings.model, prefix_cache=settings.prefix_cache)


@contextlib.asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    observer: Callable[[Event], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> AsyncIterator[Runtime]:
    """A `Runtime` over the settings' journal, tools and planner, all closed on exit.
    `observer` sees each journal event once it is durable (progress, exporters)."""
    from ember.executor import Runtime
    from ember.journal.observed import ObservedJournal

    with open_journal(settings) as journal:
        async with open_tools(settings) as registry:
            observed = ObservedJournal(journal, observer) if observer else journal
            planner = build_planner(settings.planner, say=say)
            with Runtime(registry, planner, observed) as runtime:
                yield runtime


def run_exporters(settings: Settings) -> RunExporters:
    """Prometheus metrics of every finished run, and OTLP spans when an endpoint is set."""
    from ember.telemetry.export import LayerMetrics, RunExporters, SpanExport

    spans = SpanExport(settings.otlp_endpoint) if settings.otlp_endpoint else None
    return RunExporters(LayerMetrics(), spans)
