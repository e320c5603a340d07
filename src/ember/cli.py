"""The `ember` command line. Heavy modules are imported inside the commands that need them, so
`ember --help` stays fast.

Exit codes: 0 success; 1 the run failed; 2 bad input (the message says what to change).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from typing import TYPE_CHECKING, Any

from ember._version import __version__

if TYPE_CHECKING:
    from ember.config import Settings
    from ember.executor import RunResult
    from ember.journal import Event
    from ember.planner import Planner

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
    from ember.errors import UserError

    try:
        code: int = args.handler(args)
    except UserError as exc:
        print(f"ember: {exc}", file=sys.stderr)
        return 2
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
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="plan and run a task with the demo tools",
        description=f'Plan and run a task. Example: ember run "{EXAMPLE}"',
    )
    run.add_argument("task", help="what to do, in plain words")
    run.add_argument(
        "--planner",
        choices=["llama", "scripted", "openai"],
        default="llama",
        help="llama: the embedded model (default); scripted: fixed demo plans; "
        "openai: an OpenAI-compatible server",
    )
    run.add_argument(
        "--model",
        help="llama: a shipped model's name or a path to a GGUF file (default: qwen2.5-coder-0.5b)",
    )
    run.add_argument(
        "--script",
        help="scripted: a JSON file mapping requests to plans "
        '({"request": {"steps": [...]}}) instead of the built-in demo plans',
    )
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

    tools = commands.add_parser("tools", help="list the registered tools")
    tools.add_argument("--json", action="store_true", help="print the full descriptors")
    tools.set_defaults(handler=_cmd_tools)

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
    return parser


def _db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db", help="journal database (default: $EMBER_DB, else ~/.local/share/ember/ember.db)"
    )


# -- ember run ----------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio

    from ember.config import Settings
    from ember.executor import Runtime
    from ember.journal import SQLiteJournal
    from ember.journal.observed import ObservedJournal
    from ember.tools.demo import DemoWorld, demo_registry

    settings = Settings.load(args.db)
    planner = _planner(args)
    registry = demo_registry(DemoWorld(settings.demo_dir))
    journal = SQLiteJournal(settings.db)
    progress = _Progress()
    try:
        runtime = Runtime(registry, planner, ObservedJournal(journal, progress.show))
        result = asyncio.run(runtime.run(args.task, today=args.today))
    finally:
        journal.close()
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        _print_result(result, settings)
    if result.status != "succeeded":
        print(f"ember: run {result.run_id} {result.status}: {result.error}", file=sys.stderr)
        return 1
    return 0


def _planner(args: argparse.Namespace) -> Planner:
    from ember.errors import PlannerError

    if args.planner == "scripted":
        from ember.planner.scripted import DEMO_SCRIPT, ScriptedPlanner, load_script

        return ScriptedPlanner(load_script(args.script) if args.script else DEMO_SCRIPT)
    if args.planner == "openai":
        raise PlannerError(
            "the openai planner is not built yet (issue: Planner); use "
            "--planner llama (embedded model) or --planner scripted"
        )
    from ember.planner.llama import LlamaPlanner

    print("loading the model (the first run assembles it from its packages)...", file=sys.stderr)
    return LlamaPlanner(args.model)


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
    from ember.tools.demo import demo_catalog

    descriptors = demo_catalog()
    if args.json:
        print(json.dumps([d.to_json() for d in descriptors], indent=2, ensure_ascii=False))
        return 0
    for d in descriptors:
        print(f"{d.tool_name:<24} {d.execution_mode.value:<6} demo    {d.summary}")
    return 0


def _cmd_runs(args: argparse.Namespace) -> int:
    from datetime import datetime

    from ember.config import Settings
    from ember.journal import SQLiteJournal

    journal = SQLiteJournal(Settings.load(args.db).db)
    try:
        summaries = journal.runs(args.limit)
    finally:
        journal.close()
    if not summaries:
        print('no runs yet: try `ember run "..."`', file=sys.stderr)
    for run in summaries:
        when = datetime.fromtimestamp(run.started_at).strftime("%Y-%m-%d %H:%M:%S")
        print(f"{run.run_id}  {when}  {run.status.value:<9}  {run.task[:70]}")
    return 0


def _cmd_runs_show(args: argparse.Namespace) -> int:
    import msgspec

    from ember.config import Settings
    from ember.journal import SQLiteJournal, fold

    journal = SQLiteJournal(Settings.load(args.db).db)
    try:
        run_id = journal.find_run(args.run_id)
        events = journal.read(run_id)
    finally:
        journal.close()
    state = fold(run_id, events)
    if args.json:
        print(
            json.dumps(
                {"run": msgspec.to_builtins(state), "events": msgspec.to_builtins(events)},
                ensure_ascii=False,
            )
        )
        return 0
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
