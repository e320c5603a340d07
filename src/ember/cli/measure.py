"""The measuring commands: eval (planner, bfcl), bench, chaos, assess. They call
`ember.measure` and `ember.assess`, which the runtime never imports."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from ember.app import build_planner
from ember.cli.commands import say, settings
from ember.errors import UserError

__all__ = ["assess", "bench", "chaos", "eval_bfcl", "eval_planner"]


def assess(args: argparse.Namespace) -> int:
    from ember.assess import build_report, heatmap, load_scenario, render_html, render_terminal

    report = build_report(load_scenario(args.scenario))
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        render_terminal(report)
    for path, fmt in ((args.png, "png"), (args.svg, "svg")):
        if path:
            heatmap(report, Path(path), fmt=fmt)
    if args.html:
        Path(args.html).write_text(render_html(report), encoding="utf-8")
    if not args.json:
        for path in (args.png, args.svg, args.html):
            if path:
                say(f"wrote {path}")
    return 0


def eval_planner(args: argparse.Namespace) -> int:
    from ember.measure.planner_eval import evaluate_planner, load_tasks
    from ember.measure.scoring import print_summary
    from ember.tools.demo import demo_catalog
    from ember.tools.descriptor import ToolDescriptor

    tasks = load_tasks(args.tasks)[: args.limit]
    catalogue = demo_catalog()
    if args.catalog:
        raw = json.loads(Path(args.catalog).read_text(encoding="utf-8"))
        catalogue = [ToolDescriptor.from_json(item) for item in raw]
    chosen = settings(args).planner
    if args.rules_off or args.abstain_band:
        from ember.planner.decoding import check_rules

        rules_off = tuple(args.rules_off.split(",")) if args.rules_off else ()
        check_rules(frozenset(rules_off))  # before the model loads, not after
        band = _band(args.abstain_band) if args.abstain_band else None
        chosen = msgspec.structs.replace(
            chosen,
            rules_off=rules_off,
            abstain_band=band,
        )
    planner = build_planner(chosen, say=say)
    assert planner is not None, "eval planner always names a planner"
    summary = asyncio.run(evaluate_planner(planner, tasks, catalogue, typed_ahead=args.typed_ahead))
    if args.predictions:
        with open(args.predictions, "w", encoding="utf-8") as out:
            for task_id, plan in summary["predictions"].items():
                out.write(json.dumps({"id": task_id, "plan": plan}, ensure_ascii=False) + "\n")
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "predictions"}))
        return 0
    print_summary(summary)
    latency = summary["latency_s"]
    print(
        f"\nTTFT median {latency['ttft']['median']} s, p90 {latency['ttft']['p90']} s; "
        f"plan median {latency['plan']['median']} s, p90 {latency['plan']['p90']} s; "
        f"first step median {latency['first_step']['median']} s"
        + (" (typed ahead: from submit)" if summary["typed_ahead"] else "")
    )
    if "passes" in summary:
        passes = summary["passes"]
        print(f"model passes a plan: median {passes['median']}, p90 {passes['p90']}")
    for task_id, error in summary["planner_errors"].items():
        print(f"  {task_id}: planner error: {error}")
    return 0


def eval_answers(args: argparse.Namespace) -> int:
    from ember.measure.answers_eval import evaluate_answers, load_tasks

    tasks = load_tasks(args.tasks)
    if args.split != "all":
        tasks = [t for t in tasks if t["split"] == args.split]
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t["id"] in wanted]
    planner = build_planner(settings(args).planner, say=say)
    assert planner is not None, "eval answers always names a planner"
    summary = asyncio.run(evaluate_answers(planner, tasks, progress=say))
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
        return 0
    for split, rate in summary["by_split"].items():
        print(f"{split:<8} {rate['passed']}/{rate['n']} = {rate['rate']:.1%}")
    for kind, rate in summary["by_kind"].items():
        print(f"  {kind:<20} {rate['passed']}/{rate['n']}")
    return 0


def _band(text: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise UserError(f"--abstain-band {text!r}: give two numbers, LOW,HIGH") from None
    return low, high


def eval_bfcl(args: argparse.Namespace) -> int:
    from ember.measure.bfcl import evaluate_bfcl

    categories = [name.strip() for name in args.categories.split(",") if name.strip()]
    # every entry has its own catalogue: its prompt prefix is not worth keeping on disk
    chosen = msgspec.structs.replace(settings(args).planner, prefix_cache=False)
    planner = build_planner(chosen, say=say)
    assert planner is not None, "eval bfcl always names a planner"
    with contextlib.ExitStack() as stack:
        record = None
        if args.predictions:
            out = stack.enter_context(open(args.predictions, "w", encoding="utf-8"))

            def record(entry: dict[str, Any]) -> None:
                out.write(json.dumps(entry, ensure_ascii=False) + "\n")
                out.flush()  # a run stopped halfway keeps what it scored

        summary = asyncio.run(evaluate_bfcl(planner, categories, limit=args.limit, record=record))
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{'category':<20} {'correct':>9} {'accuracy':>9}")
    for category, row in summary["by_category"].items():
        correct = f"{row['correct']}/{row['total']}"
        print(f"{category:<20} {correct:>9} {row['accuracy']:>9.1%}")
    latency = summary["latency_s"]
    print(
        f"\nTTFT median {latency['ttft']['median']} s, p90 {latency['ttft']['p90']} s; "
        f"plan median {latency['plan']['median']} s, p90 {latency['plan']['p90']} s"
    )
    return 0


def bench(args: argparse.Namespace) -> int:
    """Run the benchmark suites of a source checkout (`benchmarks/`) in a child process: they
    measure ember against floors and peers, and are not part of the installed package."""
    import os
    import subprocess
    import tempfile

    import ember

    root = Path(ember.__file__).resolve().parents[2]  # src/ember/__init__.py in a checkout
    if not (root / "benchmarks" / "run.py").is_file():
        raise UserError(
            "ember bench runs the benchmarks of a source checkout: clone ember and install it "
            "with `scripts/install` (an installed package has no benchmarks/)"
        )
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="ember-bench-"))
    result = out / "bench.json"
    command = [sys.executable, "-m", "benchmarks.run", "--suite", args.suite, "--json", str(result)]
    command += ["--quick"] if args.quick else []
    command += ["--markdown", str(out / "bench.md")] if args.out else []
    stdout = sys.stderr if args.json else None  # tables to the terminal, never into JSON
    env = dict(os.environ, PYTHONPATH=str(root))
    subprocess.run(command, cwd=root, check=True, stdout=stdout, env=env)
    if args.json:
        print(result.read_text())
    if args.out:
        say(f"wrote {result} and {out / 'bench.md'}")
    return 0


def _cluster_chaos(args: argparse.Namespace) -> int:
    from ember.errors import UserError
    from ember.extras import require
    from ember.journal.postgres import is_postgres_url

    if not is_postgres_url(args.db):
        raise UserError("ember chaos --db takes a postgresql:// URL: the cluster's journal")
    require("ember chaos --db", "psycopg", "psycopg_pool")
    from ember.measure.cluster_chaos import run_cluster_chaos

    report = run_cluster_chaos(
        args.db,
        runs=args.runs,
        steps=args.steps or 20,
        workers=args.workers,
        lease_s=args.lease,
        seed=args.seed,
    )
    print(json.dumps(report.to_json()) if args.json else report.table())
    return 1 if report.lost or report.duplicated or report.unfinished else 0


def chaos(args: argparse.Namespace) -> int:
    from ember.measure.chaos import chaos_table, run_chaos, run_peer_chaos
    from ember.measure.chaos_peers import PEERS, installed_peers

    if args.db is not None:
        return _cluster_chaos(args)
    args.steps = args.steps or 100
    modes = ["idempotent", "non-idempotent"] if args.mode == "both" else [args.mode]
    peers = [] if args.no_peers else installed_peers()
    missing = [peer for peer in PEERS if peer not in peers]
    if missing and not args.no_peers:
        say(
            f"ember chaos: not installed, so not crashed side by side: {', '.join(missing)} "
            '(pip install -e ".[bench]")'
        )
    reports = [
        run_chaos(
            trials=args.trials,
            steps=args.steps,
            durability=args.durability,
            idempotent=mode == "idempotent",
            seed=args.seed,
        )
        for mode in modes
    ]
    peer_reports = [
        run_peer_chaos(peer, trials=args.trials, steps=args.steps, seed=args.seed) for peer in peers
    ]
    if args.json:
        out = (
            reports[0].to_json()
            if len(reports) == 1
            else {"modes": {mode: r.to_json() for mode, r in zip(modes, reports, strict=True)}}
        )
        if peer_reports:
            out["peers"] = {peer: r.to_json() for peer, r in zip(peers, peer_reports, strict=True)}
        print(json.dumps(out))
    else:
        print(chaos_table(reports + peer_reports))
    failed = any(r.duplicated or r.lost for r in reports)  # the peers' duplicates are theirs
    return 1 if failed else 0
