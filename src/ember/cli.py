"""The `ember` command line. Heavy modules are imported inside the commands that need them, so
`ember --help` stays fast.

Exit codes: 0 success; 1 the run failed; 2 bad input (the message says what to change).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import date
from typing import TYPE_CHECKING, Any

from ember._version import __version__

if TYPE_CHECKING:
    from ember.config import Settings
    from ember.executor import RunResult, Runtime
    from ember.journal import Event, SQLiteJournal
    from ember.planner import Planner
    from ember.tools.registry import RegisteredTool, ToolRegistry

EXAMPLE = (
    "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and "
    "email the booking to alice@example.com"
)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `ember` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    from ember.errors import EmberError, EmberInternalError, UserError

    try:
        code: int = args.handler(args)
    except UserError as exc:
        print(f"ember: {exc}", file=sys.stderr)
        return 2
    except EmberError as exc:
        if isinstance(exc, EmberInternalError):
            raise
        print(f"ember: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ember: interrupted", file=sys.stderr)
        return 130
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember",
        description="A self-hosted AI agent runtime: a planner model turns a request into a "
        "graph of tool calls, run in parallel, journaled durably, timed layer by layer.",
    )
    parser.add_argument("--version", action="version", version=f"ember {__version__}")
    parser.add_argument(
        "--config", help="tool sources and settings (default: ./ember.toml, or $EMBER_CONFIG)"
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    _add_run_command(commands)
    _add_serve_command(commands)
    _add_tools_command(commands)
    _add_journal_commands(commands)
    _add_eval_command(commands)
    _add_bench_command(commands)
    _add_assess_command(commands)
    return parser


def _add_run_command(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="plan and run a task with the demo tools",
        description=f'Plan and run a task. Example: ember run "{EXAMPLE}"',
    )
    run.add_argument("task", help="what to do, in plain words")
    _planner_options(run, default="llama")
    run.add_argument(
        "--today",
        type=date.fromisoformat,
        help="the date the request is made, YYYY-MM-DD (default: today)",
    )
    _db_option(run)
    run.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout (progress still goes to stderr)",
    )
    run.set_defaults(handler=_cmd_run)


def _add_serve_command(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="run tasks over HTTP; export L1-L4 as Prometheus metrics and OTLP spans",
        description='POST /runs {"task": ...} runs a task; GET /runs, /runs/ID, /metrics '
        "(Prometheus), /health. See docs/architecture.md.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8321, help="port (default: 8321)")
    serve.add_argument(
        "--otlp-endpoint",
        help="send each run's spans to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318 "
        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT, else none)",
    )
    _planner_options(serve, default="llama")
    _db_option(serve)
    serve.set_defaults(handler=_cmd_serve)


def _planner_options(parser: argparse.ArgumentParser, *, default: str | None) -> None:
    """The options that choose and configure a planner: one definition for every command."""
    fallback = default or "the run's own"
    parser.add_argument(
        "--planner",
        choices=["llama", "scripted", "openai"],
        default=default,
        help="llama: the embedded model; scripted: fixed plans; openai: an OpenAI-compatible "
        f"server (default: {fallback})",
    )
    parser.add_argument(
        "--model",
        help="llama: a shipped model's name (qwen2.5-coder-1.5b, the default; "
        "qwen2.5-coder-0.5b, faster, less accurate) or a path to a GGUF file; openai: the "
        "name the server knows the model by",
    )
    parser.add_argument(
        "--base-url",
        help="openai: the server's API root, e.g. http://127.0.0.1:8000/v1 "
        "(default: $EMBER_OPENAI_BASE_URL)",
    )
    parser.add_argument(
        "--response-format",
        choices=["json_schema", "json_object", "none"],
        default="json_schema",
        help="openai: how the plan schema is sent (json_object for llama-cpp-python's server)",
    )
    parser.add_argument(
        "--script",
        help="scripted: a JSON file mapping requests to plans "
        '({"request": {"steps": [...]}}) instead of the built-in demo plans',
    )


def _add_tools_command(commands: Any) -> None:
    tools = commands.add_parser("tools", help="list the registered tools, or serve some")
    tools.add_argument("--json", action="store_true", help="print the full descriptors")
    tools.set_defaults(handler=_cmd_tools)
    serve = tools.add_subparsers(metavar="SUBCOMMAND").add_parser(
        "serve", help="host the @tool functions of a Python file or module (MCP method names)"
    )
    serve.add_argument("source", help="a .py file or an importable module")
    serve.add_argument("--uds", help="listen on this Unix socket path")
    serve.add_argument("--http", help="listen on HOST:PORT (POST /mcp, GET /health)")
    serve.add_argument(
        "--stdio",
        action="store_true",
        help="answer on stdin/stdout (how MCP clients start a server)",
    )
    serve.set_defaults(handler=_cmd_tools_serve)


def _add_journal_commands(commands: Any) -> None:
    runs = commands.add_parser("runs", help="list recent runs, or show one")
    _db_option(runs)
    runs.add_argument("--limit", type=int, default=20, help="how many runs (default 20)")
    runs.set_defaults(handler=_cmd_runs)
    runs_commands = runs.add_subparsers(metavar="SUBCOMMAND")
    show = runs_commands.add_parser("show", help="show one run with its events")
    show.add_argument("run_id", help="a run id, or a unique prefix of one")
    _db_option(show)
    show.add_argument("--json", action="store_true", help="print the run and events as JSON")
    show.set_defaults(handler=_cmd_runs_show)
    resolve = runs_commands.add_parser(
        "resolve", help="decide about an in-doubt step (then `ember resume` the run)"
    )
    resolve.add_argument("run_id", help="a run id, or a unique prefix of one")
    resolve.add_argument("step_id", type=int, help="the in-doubt step")
    decision = resolve.add_mutually_exclusive_group(required=True)
    for name, text in (
        ("retry", "call the tool again (same idempotency key)"),
        ("skip", "take the step as done: the effect did happen"),
        ("fail", "fail the step; the steps that need it are skipped"),
    ):
        decision.add_argument(
            f"--{name}", dest="decision", action="store_const", const=name, help=text
        )
    _db_option(resolve)
    resolve.set_defaults(handler=_cmd_runs_resolve)

    resume = commands.add_parser("resume", help="resume interrupted runs from the journal")
    target = resume.add_mutually_exclusive_group(required=True)
    target.add_argument("run_id", nargs="?", help="a run id, or a unique prefix of one")
    target.add_argument(
        "--all", action="store_true", help="every interrupted run whose process is gone"
    )
    _planner_options(resume, default=None)  # for a run whose plan was not complete
    _db_option(resume)
    resume.add_argument("--json", action="store_true", help="one JSON object per run")
    resume.set_defaults(handler=_cmd_resume)

    chaos = commands.add_parser(
        "chaos", help="crash test: kill -9 runs at random instants, resume, count effects"
    )
    chaos.add_argument("--trials", type=int, default=20, help="how many crashes (default 20)")
    chaos.add_argument("--steps", type=int, default=100, help="steps per workflow (default 100)")
    chaos.add_argument("--durability", choices=["normal", "full"], default="normal")
    chaos.add_argument(
        "--mode",
        choices=["idempotent", "non-idempotent", "both"],
        default="both",
        help="side-effecting tools that dedupe by key, ones that cannot, or both",
    )
    chaos.add_argument("--seed", type=int, default=1, help="random seed for the kill instants")
    chaos.add_argument(
        "--no-peers",
        action="store_true",
        help="crash ember only, not also LangGraph and DBOS (run when the bench extra has them)",
    )
    chaos.add_argument("--json", action="store_true", help="print the results as JSON")
    chaos.set_defaults(handler=_measuring("chaos"))


def _add_eval_command(commands: Any) -> None:
    evaluate = commands.add_parser("eval", help="measure a planner's accuracy and latency")
    kinds = evaluate.add_subparsers(metavar="WHAT", required=True)
    planner = kinds.add_parser(
        "planner", help="plan a task set's requests and score them with its scorer"
    )
    planner.add_argument("--tasks", required=True, help="a task file (JSON Lines), e.g. dev.jsonl")
    planner.add_argument("--catalog", help="the tool catalogue JSON (default: the demo tools')")
    _planner_options(planner, default="llama")
    planner.add_argument("--limit", type=int, help="only the first N tasks")
    planner.add_argument("--json", action="store_true", help="print the summary as JSON")
    planner.add_argument("--predictions", help="also write the plans here (JSON Lines)")
    planner.set_defaults(handler=_measuring("eval_planner"))
    bfcl = kinds.add_parser(
        "bfcl", help="score the planner on BFCL's single-turn categories with BFCL's own checker"
    )
    bfcl.add_argument(
        "--categories",
        default="simple_python,multiple,parallel,parallel_multiple,irrelevance",
        help="comma-separated BFCL categories (default: all five)",
    )
    _planner_options(bfcl, default="llama")
    bfcl.add_argument("--limit", type=int, help="only the first N entries of each category")
    bfcl.add_argument("--json", action="store_true", help="print the summary as JSON")
    bfcl.set_defaults(handler=_measuring("eval_bfcl"))


def _add_bench_command(commands: Any) -> None:
    bench = commands.add_parser(
        "bench", help="measure ember against floors (and crash-test it), from a source checkout"
    )
    bench.add_argument(
        "--suite",
        choices=["all", "layers", "peers", "executor", "transports", "run", "crash"],
        default="all",
    )
    bench.add_argument("--quick", action="store_true", help="fewer samples and crash trials")
    bench.add_argument("--json", action="store_true", help="print the results as JSON")
    bench.add_argument("--out", help="write bench.json and bench.md (Markdown tables) here")
    bench.set_defaults(handler=_measuring("bench"))


def _add_assess_command(commands: Any) -> None:
    assess = commands.add_parser(
        "assess", help="fit score, 3-year cost and risk heatmap for hosted vs self-hosted"
    )
    assess.add_argument("scenario", help="a scenario TOML file (see examples/assess/)")
    assess.add_argument("--json", action="store_true", help="print the report as JSON")
    assess.add_argument("--html", help="write a self-contained HTML report here")
    assess.add_argument("--png", help="write the risk heatmap as PNG here")
    assess.add_argument("--svg", help="write the risk heatmap as SVG here")
    assess.set_defaults(handler=_measuring("assess"))


def _measuring(command: str) -> Callable[[argparse.Namespace], int]:
    """The handler of a measuring command, imported from `ember.cli_measure` when it runs."""

    def handler(args: argparse.Namespace) -> int:
        from ember import cli_measure

        code: int = getattr(cli_measure, command)(args)
        return code

    return handler


def _db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        help="journal database (default: $EMBER_DB, else ~/.local/share/ember/ember.db)",
    )


# -- ember run ----------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    async def main(journal: SQLiteJournal) -> RunResult:
        async with _open_runtime(args, journal, args.planner) as runtime:
            return await runtime.run(args.task, today=args.today)

    from ember.executor.runtime import interrupted_runs

    with _journal(args) as journal:
        result = asyncio.run(main(journal))
        # `ember run` owns only its own run; others left by a dead process are named, not taken
        others = [run for run in interrupted_runs(journal, limit=100) if run != result.run_id]
    if others:
        print(
            f"ember: {len(others)} earlier run(s) in this journal were interrupted (their process "
            f"is gone), e.g. {others[-1]}: `ember resume --all` continues them",
            file=sys.stderr,
        )
    return _report(args, result)


def _cmd_serve(args: argparse.Namespace) -> int:
    import functools
    import os

    from ember.server import serve

    endpoint = args.otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    with _journal(args) as journal:
        opener = functools.partial(_open_runtime, args, journal, args.planner)
        serve(journal, opener, host=args.host, port=args.port, otlp_endpoint=endpoint)
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    from ember.config import Settings

    return Settings.load(_db(args), getattr(args, "config", None))


@contextlib.contextmanager
def _journal(args: argparse.Namespace) -> Iterator[SQLiteJournal]:
    from ember.journal import SQLiteJournal

    journal = SQLiteJournal(_settings(args).db)
    try:
        yield journal
    finally:
        journal.close()


@contextlib.asynccontextmanager
async def _open_tools(args: argparse.Namespace) -> AsyncIterator[ToolRegistry]:
    """The demo tools (unless the config turns them off) and the config's tool sources."""
    from ember.tools.demo import DemoWorld, demo_registry
    from ember.tools.registry import ToolRegistry
    from ember.tools.sources import open_tool_sources

    settings = _settings(args)
    registry = (
        demo_registry(DemoWorld(settings.demo_dir)) if settings.demo_tools else ToolRegistry()
    )
    async with open_tool_sources(registry, settings.tools):
        yield registry


@contextlib.asynccontextmanager
async def _open_runtime(
    args: argparse.Namespace,
    journal: SQLiteJournal,
    planner: str | None,
    observer: Callable[[Event], None] | None = None,
) -> AsyncIterator[Runtime]:
    """The tools, the journal (each durable event shown to `observer`, by default as progress
    on stderr), and a planner if one is named."""
    from ember.executor import Runtime
    from ember.journal.observed import ObservedJournal

    async with _open_tools(args) as registry:
        observed = ObservedJournal(journal, observer or _Progress().show)
        runtime = Runtime(registry, _planner(args, planner) if planner else None, observed)
        try:
            yield runtime
        finally:
            runtime.close()


def _report(args: argparse.Namespace, result: RunResult) -> int:
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        _print_result(result, _settings(args))
    if result.status != "succeeded":
        print(f"ember: run {result.run_id} {result.status}: {result.error}", file=sys.stderr)
        return 1
    return 0


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def _planner(args: argparse.Namespace, name: str, *, prefix_cache: bool = True) -> Planner:
    """The planner the options name. `prefix_cache=False` keeps prompt prefixes off the disk
    (for task sets whose catalogue changes with every task)."""
    from ember.errors import PlannerError

    if name == "scripted":
        from ember.planner.scripted import DEMO_SCRIPT, ScriptedPlanner, load_script

        return ScriptedPlanner(load_script(args.script) if args.script else DEMO_SCRIPT)
    if name == "openai":
        import os

        from ember.planner.openai import OpenAIPlanner

        base_url = getattr(args, "base_url", None) or os.environ.get("EMBER_OPENAI_BASE_URL")
        if not base_url or not args.model:
            raise PlannerError(
                "--planner openai needs --base-url (or EMBER_OPENAI_BASE_URL), e.g. "
                "http://127.0.0.1:8000/v1, and --model, the name the server knows the model by"
            )
        return OpenAIPlanner(base_url, args.model, response_format=args.response_format)
    from ember.planner.llama import LlamaPlanner

    print("loading the model (the first run assembles it from its packages)...", file=sys.stderr)
    return LlamaPlanner(args.model, prefix_cache=prefix_cache)


class _Progress:
    """Live progress on stderr, from the journal's events as they become durable."""

    def __init__(self) -> None:
        self.tools: dict[int, str] = {}

    def show(self, event: Event) -> None:
        from ember.journal import PlanStep, StepDone, StepFailed, StepIntent, StepSkipped

        line = None
        match event:
            case PlanStep(step=step):
                self.tools[step.id] = step.tool
                after = f" after {step.after}" if step.after else ""
                line = f"plan  {step.id}. {step.tool} {_compact(step.args)}{after}"
            case StepIntent(step_id=step_id, tool=tool):
                line = f"  start {step_id}. {tool}"
            case StepDone(step_id=step_id, ms=ms):
                line = f"  done  {step_id}. {self.tools.get(step_id, '')} ({ms:.2f} ms)"
            case StepFailed(step_id=step_id, error=error):
                line = f"  FAIL  {step_id}. {error}"
            case StepSkipped(step_id=step_id, reason=reason):
                line = f"  skip  {step_id}. {reason}"
        if line is not None:
            print(line, file=sys.stderr, flush=True)


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _print_result(result: RunResult, settings: Settings) -> None:
    print(f"\n# Run {result.run_id}: {result.status}\n")
    print(result.answer)
    print("\n## Step results (JSON)\n")
    print(json.dumps({str(s.id): s.result for s in result.steps}, indent=2, ensure_ascii=False))
    print("\n## Latency (ms)\n")
    labels = {
        "l1_ttft": "L1 planning, first token",
        "l1_plan": "L1 planning, plan complete",
        "l2_overhead": "L2 orchestration overhead",
        "l3_persist": "L3 journal persistence",
        "l4_e2e": "L4 end to end",
    }
    for key, label in labels.items():
        print(f"  {label:<30} {result.latency_ms[key]:>10.2f}")
    print(f"\njournal: {settings.db}   demo outbox: {settings.demo_dir / 'outbox'}")


# -- ember tools / runs -------------------------------------------------------------------------


def _cmd_tools(args: argparse.Namespace) -> int:
    import asyncio

    async def listing() -> list[RegisteredTool]:
        async with _open_tools(args) as registry:
            return list(registry)

    registry = asyncio.run(listing())
    if args.json:
        descriptors = [dict(t.descriptor.to_json(), source=t.source) for t in registry]
        print(json.dumps(descriptors, indent=2, ensure_ascii=False))
        return 0
    for registered in registry:
        d = registered.descriptor
        print(f"{d.tool_name:<24} {d.execution_mode.value:<6} {registered.source:<8}  {d.summary}")
    return 0


def _cmd_tools_serve(args: argparse.Namespace) -> int:
    import asyncio

    from ember.errors import UserError
    from ember.tools.host import ToolHost, load_tools, serve

    if not (args.uds or args.http or args.stdio):
        raise UserError("say where to listen: --uds PATH, --http HOST:PORT and/or --stdio")
    registry = load_tools(args.source)
    where = " and ".join(
        w
        for w in (
            args.uds and f"unix:{args.uds}",
            args.http and f"http://{args.http}/mcp",
            args.stdio and "stdio",
        )
        if w
    )
    print(
        f"serving {len(registry)} tools from {args.source} on {where}", file=sys.stderr, flush=True
    )
    asyncio.run(serve(ToolHost(registry), uds=args.uds, http=args.http, stdio=args.stdio))
    return 0


def _db(args: argparse.Namespace) -> str | None:
    db: str | None = getattr(args, "db", None)
    return db


def _cmd_runs_resolve(args: argparse.Namespace) -> int:
    import asyncio

    from ember.executor import Runtime
    from ember.journal import Decision
    from ember.tools.registry import ToolRegistry

    with _journal(args) as journal:
        run_id = journal.find_run(args.run_id)
        runtime = Runtime(ToolRegistry(), None, journal)  # a decision needs no tools
        asyncio.run(runtime.resolve(run_id, args.step_id, Decision(args.decision), _user()))
    print(
        f"step {args.step_id} of {run_id}: {args.decision}. Continue with `ember resume {run_id}`.",
        file=sys.stderr,
    )
    return 0


def _cmd_resume(args: argparse.Namespace) -> int:
    import asyncio

    from ember.executor.runtime import interrupted_runs

    with _journal(args) as journal:
        if args.all:
            run_ids = interrupted_runs(journal)
            if not run_ids:
                print("no interrupted runs", file=sys.stderr)
        else:
            run_ids = [journal.find_run(args.run_id)]
        worst = 0
        for run_id in run_ids:
            from ember.journal import fold

            state = fold(run_id, journal.read(run_id))
            planner_name = None if state.plan_done else (args.planner or state.planner)
            print(f"resuming {run_id}", file=sys.stderr)
            result = asyncio.run(_resume(args, journal, planner_name, run_id))
            worst = max(worst, _report(args, result))
    return worst


async def _resume(
    args: argparse.Namespace, journal: SQLiteJournal, planner: str | None, run_id: str
) -> RunResult:
    async with _open_runtime(args, journal, planner) as runtime:
        return await runtime.resume(run_id)


def _cmd_runs(args: argparse.Namespace) -> int:
    from datetime import datetime

    with _journal(args) as journal:
        summaries = journal.runs(args.limit)
    if not summaries:
        print('no runs yet: try `ember run "..."`', file=sys.stderr)
    for run in summaries:
        when = datetime.fromtimestamp(run.started_at).strftime("%Y-%m-%d %H:%M:%S")
        print(f"{run.run_id}  {when}  {run.status.value:<9}  {run.task[:70]}")
    return 0


def _cmd_runs_show(args: argparse.Namespace) -> int:
    import msgspec

    from ember.journal import fold, run_document

    with _journal(args) as journal:
        run_id = journal.find_run(args.run_id)
        events = journal.read(run_id)
    if args.json:
        print(json.dumps(run_document(run_id, events), ensure_ascii=False))
        return 0
    state = fold(run_id, events)
    print(
        f"run {run_id}: {state.status.value}\ntask: {state.task}\nplanner: {state.planner}, "
        f"today {state.today}\n"
    )
    for step_id, step in sorted(state.steps.items()):
        ms = f"{step.ms:.2f} ms" if step.ms is not None else ""
        print(f"  {step_id}. {step.step.tool:<22} {step.status.value:<9} {ms}")
    print("\nevents:")
    for event in events:
        body = msgspec.to_builtins(event)
        kind = body.pop("kind")
        body.pop("run_id")
        body.pop("at")
        print(f"  {kind:<12} {_compact(body)}")
    if state.latency_ms:
        print("\nlatency (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in state.latency_ms.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
