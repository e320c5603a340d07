"""The `ember` command line: the parser here; the commands in `ember.cli.commands` (run, serve,
runs, resume, tools), `ember.cli.cluster` (worker, enqueue), `ember.cli.control` (tokens,
policy, approvals, approve, deny, audit, doctor) and `ember.cli.measure` (eval, bench, chaos,
assess), imported only when one of them runs, so `ember --help` stays fast. Nothing below the
command line sees argparse: the commands turn the options into `ember.config.Settings` and
call the composition root (`ember.app`).

Exit codes: 0 success; 1 the run failed; 2 bad input (the message says what to change).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from datetime import date
from typing import Any

from ember._version import __version__

__all__ = ["main"]

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
    from ember.extras import missing

    try:
        code: int = args.handler(args)
    except UserError as exc:
        print(f"ember: {exc}", file=sys.stderr)
        return 2
    except (ModuleNotFoundError, BaseExceptionGroup) as exc:
        extra = missing(exc, f"ember {args.command}")
        if extra is None:
            raise
        print(f"ember: {extra}", file=sys.stderr)
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
    parser.add_argument(
        "--as",
        dest="as_principal",
        metavar="NAME",
        help="act as principal NAME, whose token is in $EMBER_TOKEN (default: the OS user)",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")

    _add_run_command(commands)
    _add_serve_command(commands)
    _add_cluster_commands(commands)
    _add_tools_command(commands)
    _add_journal_commands(commands)
    _add_control_commands(commands)
    _add_eval_command(commands)
    _add_bench_command(commands)
    _add_assess_command(commands)
    _add_doctor_command(commands)
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
    run.set_defaults(handler=_command("commands", "run"))


def _add_cluster_commands(commands: Any) -> None:
    worker = commands.add_parser(
        "worker",
        help="claim runs from the shared PostgreSQL journal's queue and run them under leases",
        description="Claims queued runs, and runs whose worker died (its lease expired), with "
        "SELECT ... FOR UPDATE SKIP LOCKED; runs them, renewing its leases; a run taken over "
        "by another worker is fenced: none of this worker's writes to it is committed.",
    )
    _planner_options(worker, default="llama")
    _db_option(worker)
    worker.add_argument("--slots", type=int, default=16, help="runs at once (default 16)")
    worker.add_argument(
        "--lease", type=float, default=10.0, help="lease length, seconds (default 10)"
    )
    worker.add_argument(
        "--poll", type=float, default=0.5, help="seconds between claims (default 0.5)"
    )
    worker.add_argument(
        "--once", action="store_true", help="stop when the queue is empty and its runs ended"
    )
    worker.set_defaults(handler=_command("cluster", "worker"))
    enqueue = commands.add_parser("enqueue", help="queue a task for `ember worker`s")
    enqueue.add_argument("task", help="what to do, in plain words")
    _db_option(enqueue)
    enqueue.set_defaults(handler=_command("cluster", "enqueue"))


def _add_serve_command(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="the console: runs over HTTP, their events live, a web UI; L1-L4 as metrics",
        description='POST /v1/runs {"task": ...} starts a run; GET /v1/runs/ID/events follows '
        "it (Server-Sent Events); the web console is at /, the API's OpenAPI document at "
        "/openapi.json; /metrics (Prometheus), /health. Limits: the [server] table of "
        "ember.toml. See docs/architecture.md.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8321, help="port (default: 8321)")
    serve.add_argument(
        "--otlp-endpoint",
        help="send each run's spans to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318 "
        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT, else none)",
    )
    serve.add_argument(
        "--no-auth",
        action="store_true",
        help="loopback development only: accept requests without a token, as the OS user",
    )
    serve.add_argument(
        "--worker",
        action="store_true",
        help="with --db postgresql://: also claim and run queued runs in this process (else "
        "the server queues them for `ember worker`s)",
    )
    _planner_options(serve, default="llama")
    _db_option(serve)
    serve.set_defaults(handler=_command("commands", "serve"))


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
        choices=["json_schema", "json_object", "none", "driven"],
        default="json_schema",
        help="openai: how the plan is constrained: driven, by the embedded planner's decoder, "
        "one grammar-constrained completion a choice (llama.cpp's servers, ChatML models); "
        "else by the plan's JSON schema sent as the server takes it (json_object for "
        "llama-cpp-python's server)",
    )
    parser.add_argument(
        "--script",
        help="scripted: a JSON file mapping requests to plans "
        '({"request": {"steps": [...]}}) instead of the built-in demo plans',
    )


def _add_tools_command(commands: Any) -> None:
    tools = commands.add_parser("tools", help="list the registered tools, or serve some")
    tools.add_argument("--json", action="store_true", help="print the full descriptors")
    tools.set_defaults(handler=_command("commands", "tools"))
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
    serve.set_defaults(handler=_command("commands", "tools_serve"))


def _add_journal_commands(commands: Any) -> None:
    runs = commands.add_parser("runs", help="list recent runs, or show one")
    _db_option(runs)
    runs.add_argument("--limit", type=int, default=20, help="how many runs (default 20)")
    runs.set_defaults(handler=_command("commands", "runs"))
    runs_commands = runs.add_subparsers(metavar="SUBCOMMAND")
    show = runs_commands.add_parser("show", help="show one run with its events")
    show.add_argument("run_id", help="a run id, or a unique prefix of one")
    _db_option(show)
    show.add_argument("--json", action="store_true", help="print the run and events as JSON")
    show.set_defaults(handler=_command("commands", "runs_show"))
    resolve = runs_commands.add_parser(
        "resolve", help="decide about a waiting step (then `ember resume` the run)"
    )
    resolve.add_argument("run_id", help="a run id, or a unique prefix of one")
    resolve.add_argument("step_id", type=int, help="the step in doubt or awaiting approval")
    decision = resolve.add_mutually_exclusive_group(required=True)
    for name, text in (
        ("retry", "call the tool again (same idempotency key)"),
        ("skip", "take the step as done: the effect did happen"),
        ("fail", "fail the step; the steps that need it are skipped"),
        ("approve", "approve a call waiting for approval (`ember approve` also continues it)"),
        ("deny", "deny a call waiting for approval"),
    ):
        decision.add_argument(
            f"--{name}", dest="decision", action="store_const", const=name, help=text
        )
    _db_option(resolve)
    resolve.set_defaults(handler=_command("commands", "runs_resolve"))

    resume = commands.add_parser("resume", help="resume interrupted runs from the journal")
    target = resume.add_mutually_exclusive_group(required=True)
    target.add_argument("run_id", nargs="?", help="a run id, or a unique prefix of one")
    target.add_argument(
        "--all", action="store_true", help="every interrupted run whose process is gone"
    )
    _planner_options(resume, default=None)  # for a run whose plan was not complete
    _db_option(resume)
    resume.add_argument("--json", action="store_true", help="one JSON object per run")
    resume.set_defaults(handler=_command("commands", "resume"))

    chaos = commands.add_parser(
        "chaos", help="crash test: kill -9 runs at random instants, resume, count effects"
    )
    chaos.add_argument("--trials", type=int, default=20, help="how many crashes (default 20)")
    chaos.add_argument(
        "--steps", type=int, help="steps per workflow (default 100; 20 with --db postgresql:)"
    )
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
    chaos.add_argument(
        "--db",
        help="a postgresql:// journal: crash a cluster of workers on it instead (--workers, "
        "--runs); its runs and effect records stay there",
    )
    chaos.add_argument(
        "--workers", type=int, default=3, help="with --db: worker processes (default 3)"
    )
    chaos.add_argument("--runs", type=int, default=300, help="with --db: runs (default 300)")
    chaos.add_argument(
        "--lease", type=float, default=2.0, help="with --db: the workers' lease, s (default 2)"
    )
    chaos.add_argument("--json", action="store_true", help="print the results as JSON")
    chaos.set_defaults(handler=_command("measure", "chaos"))


def _add_control_commands(commands: Any) -> None:
    """tokens, policy, approvals, approve, deny, audit (`ember.cli.control`)."""
    tokens = commands.add_parser("tokens", help="principals' tokens: create, list, revoke")
    kinds = tokens.add_subparsers(metavar="SUBCOMMAND", required=True)
    create = kinds.add_parser("create", help="create a token for NAME (printed once)")
    create.add_argument("name", help="the principal the token stands for")
    create.add_argument("--role", action="append", help="a role of NAME (repeat for more)")
    _leaf(create, "tokens_create")
    _leaf(kinds.add_parser("list", help="every principal's token and roles"), "tokens_list")
    revoke = kinds.add_parser("revoke", help="revoke NAME's token, or take one role away")
    revoke.add_argument("name")
    revoke.add_argument("--role", help="take only this role away")
    _leaf(revoke, "tokens_revoke")

    policy = commands.add_parser("policy", help="the Cedar policy in force: show, set, test")
    kinds = policy.add_subparsers(metavar="SUBCOMMAND", required=True)
    _leaf(kinds.add_parser("show", help="the policy in force and its version"), "policy_show")
    put = kinds.add_parser("set", help="check a Cedar file and put it in force")
    put.add_argument("file", help="a Cedar policy file (see examples/policy.cedar)")
    _leaf(put, "policy_set")
    test = kinds.add_parser("test", help="would PRINCIPAL be allowed to call TOOL with ARGS?")
    test.add_argument("principal")
    test.add_argument("tool")
    test.add_argument("args", nargs="?", default="{}", help="the arguments as JSON")
    _leaf(test, "policy_test")

    waiting = commands.add_parser("approvals", help="calls waiting for an approval")
    waiting.add_argument("--limit", type=int, default=200, help="runs to look at (default 200)")
    _leaf(waiting, "approvals")
    for name, text in (("approve", "approve a waiting call"), ("deny", "deny a waiting call")):
        decide = commands.add_parser(name, help=f"{text}, then continue its run")
        decide.add_argument("run_id", help="a run id, or a unique prefix of one")
        decide.add_argument("step_id", type=int)
        decide.add_argument("--json", action="store_true", help="print the run's result as JSON")
        _leaf(decide, name)

    audit = commands.add_parser("audit", help="the audit log: verify, export, key")
    kinds = audit.add_subparsers(metavar="SUBCOMMAND", required=True)
    verify = kinds.add_parser("verify", help="check the hash chain and signed checkpoints")
    verify.add_argument("--public-key", help="a public key PEM (default: the signing key's)")
    _leaf(verify, "audit_verify")
    export = kinds.add_parser("export", help="write the entries as JSON Lines")
    export.add_argument("--since", help="from this date or time, e.g. 2026-12-01T09:00")
    export.add_argument("--out", help="write here (default: stdout)")
    _leaf(export, "audit_export")
    _leaf(kinds.add_parser("key", help="print the signing key's public half (PEM)"), "audit_key")


def _leaf(parser: argparse.ArgumentParser, name: str) -> None:
    _db_option(parser)
    parser.set_defaults(handler=_command("control", name))


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
    planner.add_argument(
        "--rules-off",
        help="llama: switch decoding rules off, to measure them (comma-separated, e.g. "
        "numbers,doubt-check; a name that is no rule is refused with the list of them all; "
        "docs/architecture.md says what each does)",
    )
    planner.add_argument(
        "--abstain-band",
        help="llama: LOW,HIGH margins for no tool fits instead of the model's own (e.g. "
        "6.25,6.25: a single threshold)",
    )
    planner.add_argument(
        "--typed-ahead",
        action="store_true",
        help="llama: read each request into the model before submitting it, as a front end "
        "does while the user types (times are then from submit)",
    )
    planner.set_defaults(handler=_command("measure", "eval_planner"))
    answers = kinds.add_parser(
        "answers",
        help="run requests end to end with real tools; score final state and final answer",
    )
    answers.add_argument(
        "--tasks", default="evals/answers/tasks.jsonl", help="the task file (JSON Lines)"
    )
    answers.add_argument("--split", choices=["dev", "heldout", "all"], default="all")
    answers.add_argument("--only", help="comma-separated task ids")
    _planner_options(answers, default="llama")
    answers.add_argument("--json", action="store_true", help="print the summary as JSON")
    answers.set_defaults(handler=_command("measure", "eval_answers"))
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
    bfcl.add_argument(
        "--predictions",
        help="also write each entry's calls and verdict here (JSON Lines: id, category, "
        "correct, calls), to compare two versions entry by entry",
    )
    bfcl.set_defaults(handler=_command("measure", "eval_bfcl"))


def _add_bench_command(commands: Any) -> None:
    bench = commands.add_parser(
        "bench", help="measure ember against floors (and crash-test it), from a source checkout"
    )
    bench.add_argument(
        "--suite",
        choices=["all", "layers", "peers", "executor", "transports", "run", "crash", "revocation"],
        default="all",
    )
    bench.add_argument("--quick", action="store_true", help="fewer samples and crash trials")
    bench.add_argument("--json", action="store_true", help="print the results as JSON")
    bench.add_argument("--out", help="write bench.json and bench.md (Markdown tables) here")
    bench.set_defaults(handler=_command("measure", "bench"))


def _add_assess_command(commands: Any) -> None:
    assess = commands.add_parser(
        "assess", help="fit score, 3-year cost and risk heatmap for hosted vs self-hosted"
    )
    assess.add_argument("scenario", help="a scenario TOML file (see examples/assess/)")
    assess.add_argument("--json", action="store_true", help="print the report as JSON")
    assess.add_argument("--html", help="write a self-contained HTML report here")
    assess.add_argument("--png", help="write the risk heatmap as PNG here")
    assess.add_argument("--svg", help="write the risk heatmap as SVG here")
    assess.set_defaults(handler=_command("measure", "assess"))


def _add_doctor_command(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="where this configuration can send data; which extras and models are installed; "
        "where the journal and caches are",
    )
    _db_option(doctor)
    doctor.add_argument(
        "--verify", action="store_true", help="check the assembled models' SHA-256 again"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(handler=_command("doctor", "doctor"))


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The handler `name` of `ember.cli.<module>`, imported when the command runs."""

    def handler(args: argparse.Namespace) -> int:
        code: int = getattr(importlib.import_module(f"ember.cli.{module}"), name)(args)
        return code

    return handler


def _db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        help="journal database: a SQLite file, or a postgresql:// URL (the shared journal of "
        "workers) (default: $EMBER_DB, else ~/.local/share/ember/ember.db)",
    )
