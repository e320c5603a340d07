"""The commands that run and inspect tasks: run, serve, resume, runs (show, resolve), tools."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import msgspec

from ember.app import build_planner, open_journal, open_runtime, open_tools
from ember.config import PlannerSettings, Settings

if TYPE_CHECKING:
    from ember.executor import RunResult
    from ember.journal import Recorded
    from ember.policy.control import ControlPlane
    from ember.tools.registry import RegisteredTool

__all__ = [
    "acting",
    "report",
    "resume",
    "run",
    "runs",
    "runs_resolve",
    "runs_show",
    "serve",
    "settings",
    "tools",
    "tools_serve",
]


def settings(args: argparse.Namespace) -> Settings:
    """The settings the options, the environment and the config file make (loaded once)."""
    planner = PlannerSettings(
        backend=getattr(args, "planner", None),
        model=getattr(args, "model", None),
        base_url=getattr(args, "base_url", None),
        response_format=getattr(args, "response_format", "json_schema"),
        script=getattr(args, "script", None),
    )
    return Settings.load(
        getattr(args, "db", None),
        getattr(args, "config", None),
        planner=planner,
        otlp_endpoint=getattr(args, "otlp_endpoint", None),
    )


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def acting(args: argparse.Namespace, control: ControlPlane) -> str:
    """Who the command acts as: the local OS user, or `--as NAME` with NAME's token in
    `$EMBER_TOKEN` (checked: unknown, revoked or another's token is refused)."""
    import os

    from ember.errors import UserError
    from ember.policy.tokens import authenticate

    name: str | None = getattr(args, "as_principal", None)
    if not name:
        return control.local
    token = os.environ.get("EMBER_TOKEN", "")
    if not token:
        raise UserError(f"--as {name} needs {name}'s token in $EMBER_TOKEN")
    record = authenticate(control.store, token)
    if record.name != name:
        raise UserError(f"$EMBER_TOKEN is {record.name}'s token, not {name}'s")
    return name


def run(args: argparse.Namespace) -> int:
    config = settings(args)

    async def main() -> tuple[RunResult, list[str]]:
        async with open_runtime(config, observer=_Progress().show, say=say) as runtime:
            assert runtime.control is not None
            principal = acting(args, runtime.control)
            runtime.control.refresh().require(principal, "start_run", "runs")
            streaming = _AnswerStream()
            result = await runtime.run(
                args.task, today=args.today, principal=principal, on_text=streaming.write
            )
            streaming.end()
            # it owns only its own run; others left by a dead process are named, not taken
            others = [r for r in runtime.interrupted_runs(limit=100) if r != result.run_id]
            if config.journal_url:  # a cluster's: the workers' runs are not interrupted
                others = await _not_queued(config.journal_url, others, quiet=True)
            return result, others

    result, others = asyncio.run(main())
    if others:
        say(
            f"ember: {len(others)} earlier run(s) in this journal were interrupted (their process "
            f"is gone), e.g. {others[-1]}: `ember resume --all` continues them"
        )
    return report(args, config, result)


class _AnswerStream:
    """The answer the model writes, on stderr as it comes (the whole result follows on stdout)."""

    def __init__(self) -> None:
        self.started = False

    def write(self, text: str) -> None:
        if not self.started:
            self.started = True
            print("  answer: ", end="", file=sys.stderr)
        print(text, end="", file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.started:
            print(file=sys.stderr, flush=True)


def serve(args: argparse.Namespace) -> int:
    from ember.server import serve as serve_http

    serve_http(
        settings(args), host=args.host, port=args.port, auth=not args.no_auth, worker=args.worker
    )
    return 0


def resume(args: argparse.Namespace) -> int:
    """Resume one run, or every interrupted one. A run whose plan was complete needs no
    planner; one whose planner had not finished is planned again by `--planner`, else by the
    planner that started it."""
    from ember.journal import fold

    config = settings(args)
    bare = msgspec.structs.replace(config, planner=PlannerSettings(backend=None))

    async def main() -> int:
        worst = 0
        async with open_runtime(bare, observer=_Progress().show) as runtime:
            run_ids = (
                runtime.interrupted_runs() if args.all else [runtime.journal.find_run(args.run_id)]
            )
            if config.journal_url:  # a cluster's: runs in the workers' queue are theirs
                run_ids = await _not_queued(config.journal_url, run_ids)
            if not run_ids:
                say("no interrupted runs")
            for run_id in run_ids:
                state = fold(run_id, runtime.journal.read(run_id))
                if not state.plan_done:
                    backend = config.planner.backend or state.planner
                    chosen = msgspec.structs.replace(config.planner, backend=backend)
                    runtime.planner = build_planner(chosen, say=say)
                say(f"resuming {run_id}")
                worst = max(worst, report(args, config, await runtime.resume(run_id)))
        return worst

    return asyncio.run(main())


async def _not_queued(url: str, run_ids: list[str], *, quiet: bool = False) -> list[str]:
    """The runs of `run_ids` that no worker may claim (started outside the queue): the
    others are the workers' to take over, under their leases."""
    from ember.journal.leases import Leases

    leases = Leases(url, "")
    mine = []
    try:
        for run_id in run_ids:
            state = await leases.state(run_id)
            if state is not None and (state[1] > 0 or state[0] == "queued"):  # claimed, or to be
                if not quiet:
                    say(f"{run_id} is in the workers' queue: `ember worker` takes it over")
                continue
            mine.append(run_id)
    finally:
        await leases.close()
    return mine


def runs(args: argparse.Namespace) -> int:
    from datetime import datetime

    with open_journal(settings(args)) as journal:
        summaries = journal.runs(args.limit)
    if not summaries:
        say('no runs yet: try `ember run "..."`')
    for summary in summaries:
        when = datetime.fromtimestamp(summary.started_at).strftime("%Y-%m-%d %H:%M:%S")
        who = summary.principal or "-"
        print(
            f"{summary.run_id}  {when}  {summary.status.value:<9}  {who:<12}  {summary.task[:60]}"
        )
    return 0


def runs_show(args: argparse.Namespace) -> int:
    from ember.journal import fold, run_document

    with open_journal(settings(args)) as journal:
        run_id = journal.find_run(args.run_id)
        events = journal.read(run_id)
    if args.json:
        print(json.dumps(run_document(run_id, events), ensure_ascii=False))
        return 0
    state = fold(run_id, events)
    print(
        f"run {run_id}: {state.status.value}\ntask: {state.task}\nplanner: {state.planner}, "
        f"today {state.today}\nprincipal: {state.principal or '-'}\n"
    )
    for step_id, step in sorted(state.steps.items()):
        ms = f"{step.ms:.2f} ms" if step.ms is not None else ""
        print(f"  {step_id}. {step.step.tool:<22} {step.status.value:<9} {ms}")
        if step.error and step.status.value == "failed":
            print(f"       {step.error}")
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


def runs_resolve(args: argparse.Namespace) -> int:
    from ember.journal import Decision

    # a decision needs neither tools nor a planner
    config = msgspec.structs.replace(
        settings(args), demo_tools=False, tools=(), planner=PlannerSettings(backend=None)
    )

    async def main() -> str:
        async with open_runtime(config) as runtime:
            assert runtime.control is not None
            run_id = runtime.journal.find_run(args.run_id)
            by = acting(args, runtime.control)
            await runtime.resolve(run_id, args.step_id, Decision(args.decision), by)
            return run_id

    run_id = asyncio.run(main())
    say(f"step {args.step_id} of {run_id}: {args.decision}. Continue with `ember resume {run_id}`.")
    return 0


def tools(args: argparse.Namespace) -> int:
    async def listing() -> list[RegisteredTool]:
        async with open_tools(settings(args)) as registry:
            return list(registry)

    registered = asyncio.run(listing())
    if args.json:
        descriptors = [dict(t.descriptor.to_json(), source=t.source) for t in registered]
        print(json.dumps(descriptors, indent=2, ensure_ascii=False))
        return 0
    for tool in registered:
        d = tool.descriptor
        print(f"{d.tool_name:<24} {d.execution_mode.value:<6} {tool.source:<8}  {d.summary}")
    return 0


def tools_serve(args: argparse.Namespace) -> int:
    from ember.errors import UserError
    from ember.tools.host import ToolHost, load_tools
    from ember.tools.host import serve as serve_tools

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
    say(f"serving {len(registry)} tools from {args.source} on {where}")
    asyncio.run(serve_tools(ToolHost(registry), uds=args.uds, http=args.http, stdio=args.stdio))
    return 0


def report(args: argparse.Namespace, config: Settings, result: RunResult) -> int:
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        _print_result(result, config)
    if result.status != "succeeded":
        say(f"ember: run {result.run_id} {result.status}: {result.error}")
        return 1
    return 0


class _Progress:
    """Live progress on stderr, from the journal's events as they become durable."""

    def __init__(self) -> None:
        self.tools: dict[int, str] = {}

    def show(self, recorded: Recorded) -> None:
        from ember.journal import (
            PlanStep,
            StepDenied,
            StepDone,
            StepFailed,
            StepIntent,
            StepSkipped,
        )

        line = None
        match recorded.event:
            case PlanStep(step=step):
                self.tools[step.id] = step.tool
                after = f" after {step.after}" if step.after else ""
                each = f" for each item in {step.each}" if step.each else ""
                line = f"plan  {step.id}. {step.tool} {_compact(step.args)}{after}{each}"
            case StepIntent(step_id=step_id, tool=tool, item=item):
                line = f"  start {_where(step_id, item)}. {tool}"
            case StepDone(step_id=step_id, ms=ms, item=item):
                tool = self.tools.get(step_id, "")
                line = f"  done  {_where(step_id, item)}. {tool} ({ms:.2f} ms)"
            case StepFailed(step_id=step_id, error=error, item=item):
                line = f"  FAIL  {_where(step_id, item)}. {error}"
            case StepSkipped(step_id=step_id, reason=reason):
                line = f"  skip  {step_id}. {reason}"
            case StepDenied(step_id=step_id, reason=reason):
                line = f"  DENY  {step_id}. {reason}"
        if line is not None:
            say(line)


def _where(step_id: int, item: int | None) -> str:
    """`3`, or `3[12]` for item 12 of a step over a list."""
    return str(step_id) if item is None else f"{step_id}[{item}]"


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _print_result(result: RunResult, config: Settings) -> None:
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
        "l1_answer_ttft": "  of which the answer, first token",
        "l1_answer": "  of which the answer, written",
    }
    for key, label in labels.items():
        if key in result.latency_ms:
            print(f"  {label:<30} {result.latency_ms[key]:>10.2f}")
    print(f"\njournal: {config.db}   demo outbox: {config.demo_dir / 'outbox'}")
