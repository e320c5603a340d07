"""The measuring commands of `ember`: assess, eval, bench, chaos (see `ember.cli`, which parses
their options and imports this module only when one of them runs)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ember import cli

__all__ = ["assess", "bench", "chaos", "eval_bfcl", "eval_planner"]


def assess(args: argparse.Namespace) -> int:
    from pathlib import Path

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
                print(f"wrote {path}", file=sys.stderr)
    return 0


def eval_planner(args: argparse.Namespace) -> int:
    import asyncio

    from ember.planner.evaluate import evaluate_planner, load_tasks
    from ember.planner.scoring import print_summary
    from ember.tools.demo import demo_catalog
    from ember.tools.descriptor import ToolDescriptor

    tasks = load_tasks(args.tasks)[: args.limit]
    catalogue = demo_catalog()
    if args.catalog:
        from pathlib import Path

        raw = json.loads(Path(args.catalog).read_text(encoding="utf-8"))
        catalogue = [ToolDescriptor.from_json(item) for item in raw]
    summary = asyncio.run(evaluate_planner(cli._planner(args, args.planner), tasks, catalogue))
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
        f"plan median {latency['plan']['median']} s, p90 {latency['plan']['p90']} s"
    )
    for task_id, error in summary["planner_errors"].items():
        print(f"  {task_id}: planner error: {error}")
    return 0


def eval_bfcl(args: argparse.Namespace) -> int:
    import asyncio

    from ember.planner.bfcl import evaluate_bfcl

    categories = [name.strip() for name in args.categories.split(",") if name.strip()]
    summary = asyncio.run(
        evaluate_bfcl(
            cli._planner(args, args.planner, prefix_cache=False), categories, limit=args.limit
        )
    )
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
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    import ember
    from ember.errors import UserError

    root = Path(ember.__file__).resolve().parents[2]
    if not (root / "benchmarks" / "run.py").is_file():
        raise UserError(
            "ember bench runs the benchmarks of a source checkout: clone ember and "
            "install it with `scripts/install`"
        )
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="ember-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    result = out / "bench.json"
    report: dict[str, Any] = {"suites": {}}
    if args.suite != "crash":
        command = [sys.executable, "-m", "benchmarks.run", "--json", str(result)]
        command += ["--suite", args.suite] + (["--quick"] if args.quick else [])
        stdout = sys.stderr if args.json else None  # tables to the terminal, never into JSON
        subprocess.run(
            command, cwd=root, check=True, stdout=stdout, env=dict(os.environ, PYTHONPATH=str(root))
        )
        report = json.loads(result.read_text())
    if args.suite in ("all", "crash"):
        from ember.chaos import run_chaos

        trials = 10 if args.quick else 100
        report["suites"]["crash"] = [
            {
                "name": f"crash.normal.{mode}",
                **run_chaos(
                    trials=trials,
                    steps=100,
                    durability="normal",
                    idempotent=mode == "idempotent",
                    seed=1,
                ).to_json(),
            }
            for mode in ("idempotent", "non-idempotent")
        ]
        if not args.json:
            for row in report["suites"]["crash"]:
                print(
                    f"{row['name']}: lost {row['lost']}, duplicated {row['duplicated']}, "
                    f"in doubt {row['in_doubt']}, resume p50 {row['resume_ms']['p50']} ms"
                )
    result.write_text(json.dumps(report, indent=2))
    if args.out:
        sys.path.insert(0, str(root))
        from benchmarks.report import render

        (out / "bench.md").write_text(render(report) + "\n")
        print(f"wrote {out / 'bench.json'} and {out / 'bench.md'}", file=sys.stderr)
    if args.json:
        print(json.dumps(report))
    return 0


def chaos(args: argparse.Namespace) -> int:
    from ember.chaos import chaos_table, run_chaos, run_peer_chaos
    from ember.chaos_peers import PEERS, installed_peers

    modes = ["idempotent", "non-idempotent"] if args.mode == "both" else [args.mode]
    peers = [] if args.no_peers else installed_peers()
    missing = [peer for peer in PEERS if peer not in peers]
    if missing and not args.no_peers:
        print(
            f"ember chaos: not installed, so not crashed side by side: {', '.join(missing)} "
            '(pip install -e ".[bench]")',
            file=sys.stderr,
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
