"""Run the benchmarks: each contender in its own process, then one table (and JSON).

    python -m benchmarks.run                  # the layers suite, table on stdout
    python -m benchmarks.run --json out.json  # also write the results as JSON
    python -m benchmarks.run --quick          # fewer samples
    python -m benchmarks.run --suite crash    # kill -9 runs at random instants (ember chaos)
    python -m benchmarks.run --markdown out.md  # also write Markdown tables (benchmarks.report)

Each row reports the median and p99 of per-operation samples in microseconds, and the ratio of
the median to the row's floor, measured in the same run on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from typing import Any, NamedTuple

import msgspec

from benchmarks import contenders, flagships, peers
from benchmarks.report import render


class Row(NamedTuple):
    name: str  # stable: results are compared across versions by it
    contender: str  # function in benchmarks.contenders
    floor: str | None  # the name of the row this one is compared with
    samples: int
    kwargs: dict[str, Any] = {}  # noqa: RUF012 (never mutated)
    target_us: float | None = None  # the median an issue asks for, if any
    target_ratio: float | None = None  # or the ratio to the floor it asks for


def _peer_rows() -> list[Row]:
    """The same 3-step and 20-step chains in ember and its peers, in memory and durable, each
    against the floor of its kind: an asyncio task per step, or a raw SQLite commit."""
    rows = []
    for steps in (3, 20):
        memory, durable = "l2.floor.asyncio_task", "l3.floor.sqlite_commit_wal_normal"
        chain = {"steps": steps}
        rows += [
            Row(f"peer.ember.chain{steps}_per_step", "ember_chain_step", memory, 4000, chain),
            Row(
                f"l2.peer.langgraph_chain{steps}_per_node",
                "langgraph_chain_step",
                memory,
                2000,
                chain,
            ),
            Row(
                f"peer.langgraph_toolnode.chain{steps}_per_step",
                "langgraph_toolnode_step",
                memory,
                400,
                chain,
            ),
            Row(
                f"peer.pydantic_ai.chain{steps}_per_step",
                "pydantic_ai_chain_step",
                memory,
                400,
                chain,
            ),
            Row(
                f"peer.ember_sqlite.chain{steps}_per_step",
                "ember_chain_step",
                durable,
                2000,
                {**chain, "journal": "sqlite"},
            ),
            Row(
                f"peer.langgraph_sqlite_sync.chain{steps}_per_node",
                "langgraph_chain_step",
                durable,
                400,
                {**chain, "durability": "sync"},
            ),
            Row(
                f"peer.langgraph_sqlite_async.chain{steps}_per_node",
                "langgraph_chain_step",
                durable,
                400,
                {**chain, "durability": "async"},
            ),
            Row(f"l3.peer.dbos_chain{steps}_per_step", "dbos_chain_step", durable, 200, chain),
        ]
    floors = [
        Row("l2.floor.bare_call", "floor_bare_call", None, 20000),
        Row("l2.floor.asyncio_task", "floor_asyncio_task", "l2.floor.bare_call", 20000),
        Row("l3.floor.sqlite_commit_wal_normal", "floor_sqlite_commit", None, 2000),
    ]
    return floors + rows


SUITES: dict[str, list[Row]] = {
    "layers": [
        Row("l2.floor.bare_call", "floor_bare_call", None, 20000),
        Row("l2.floor.asyncio_task", "floor_asyncio_task", "l2.floor.bare_call", 20000),
        Row("l2.ember.step_overhead", "ember_l2_step", "l2.floor.asyncio_task", 20000),
        Row(
            "l2.ember.chain20_per_step",
            "ember_chain_step",
            "l2.floor.asyncio_task",
            20000,
            target_us=30.0,
        ),
        Row("l3.floor.sqlite_commit_wal_normal", "floor_sqlite_commit", None, 5000),
        Row(
            "l3.floor.sqlite_step_records",
            "floor_sqlite_step_records",
            "l3.floor.sqlite_commit_wal_normal",
            5000,
        ),
        Row(
            "l3.ember.durable_chain20_per_step",
            "ember_chain_step",
            "l3.floor.sqlite_commit_wal_normal",
            10000,
            {"journal": "sqlite"},
            target_us=60.0,
        ),
        Row(
            "l3.ember.durable_chain20_policy_audit_per_step",
            "ember_chain_step",
            "l3.ember.durable_chain20_per_step",
            10000,
            {"journal": "sqlite", "policy": "allow"},
            target_ratio=1.3,
        ),
        Row(
            "l3.ember.durable_chain20_alternating",
            "ember_chain_alternating",
            None,
            10000,
        ),
        Row(
            "l3.ember.durable_chain20_policy_conditions_per_step",
            "ember_chain_step",
            "l3.ember.durable_chain20_per_step",
            10000,
            {"journal": "sqlite", "policy": "conditions"},
        ),
        Row(
            "l3.ember.concurrent100_per_step",
            "ember_concurrent_runs",
            "l3.floor.sqlite_commit_wal_normal",
            20000,
            target_us=50.0,
        ),
        Row("l3.ember.recover_10k_events", "ember_recover_10k", None, 20, target_us=100_000.0),
        Row(
            "l3.ember.append_normal",
            "ember_l3_append",
            "l3.floor.sqlite_commit_wal_normal",
            5000,
            target_us=60.0,
        ),
        Row(
            "l3.floor.sqlite_commit_wal_full",
            "floor_sqlite_commit",
            None,
            500,
            {"synchronous": "FULL"},
        ),
        Row("l3.floor.fsync_append", "floor_fsync_append", None, 500),
        Row(
            "l3.ember.append_full",
            "ember_l3_append",
            "l3.floor.sqlite_commit_wal_full",
            500,
            {"durability": "full"},
        ),
        Row("policy.floor.cedar_is_authorized", "policy_cedar_raw", None, 20000),
        Row("policy.decide.rule_without_conditions", "policy_decide", "l2.floor.bare_call", 50000),
        Row(
            "policy.decide.argument_conditions",
            "policy_decide",
            "policy.floor.cedar_is_authorized",
            20000,
            {"policy": "conditions"},
            target_us=50.0,
        ),
        Row("validate.jsonschema_rs", "validate_jsonschema_rs", None, 50000),
        Row("validate.fastjsonschema", "validate_fastjsonschema", "validate.jsonschema_rs", 50000),
    ],
    "peers": _peer_rows(),
    "transports": [
        Row("transport.inproc", "transport_inproc", None, 20000),
        Row("transport.floor.uds_echo", "floor_uds_echo", None, 5000),
        Row("transport.uds", "transport_uds", "transport.floor.uds_echo", 5000, target_us=100.0),
        Row("transport.mcp_stdio", "transport_mcp_stdio", "transport.floor.uds_echo", 1000),
        Row("transport.floor.http_keepalive", "floor_http_keepalive", None, 3000),
        Row(
            "transport.http",
            "transport_http",
            "transport.floor.http_keepalive",
            3000,
            target_us=1000.0,
        ),
    ],
    "run": [
        Row("travel.scripted", "run_layers", None, 30, {"planner": "scripted", "_warmup": False}),
        # the flagship workflows of examples/ (docs/tool-packs.md), scripted planner
        *(
            Row(
                f"flagship.{name}.scripted",
                "flagship_layers",
                None,
                samples,
                {"name": name, "_warmup": False},
            )
            for name, samples in (
                ("competitors", 5),
                ("invoices", 5),
                ("mail_merge", 5),
                ("plc_watch", 2),
            )
        ),
        # the flagships planned by the embedded model (evals/planner/FLAGSHIPS.md)
        *(
            Row(
                f"flagship.{name}.llama",
                "flagship_layers",
                None,
                3,
                {"name": name, "planner": "llama", "_warmup": False},
            )
            for name in ("competitors", "invoices", "mail_merge", "plc_watch")
        ),
        Row("travel.llama", "run_layers", None, 5, {"planner": "llama", "_warmup": False}),
        Row(
            "travel.llama.shape_known",
            "run_layers",
            None,
            5,
            {"planner": "llama", "shapes": True, "_warmup": False},
        ),
        Row(
            "travel.llama.typed_ahead",
            "run_layers",
            None,
            5,
            {"planner": "llama", "typed": True, "_warmup": False},
        ),
        Row(
            "travel.llama_0.5b",
            "run_layers",
            None,
            5,
            {"planner": "llama", "model": "qwen2.5-coder-0.5b", "_warmup": False},
        ),
        Row(
            "travel.llama_0.5b.typed_ahead",
            "run_layers",
            None,
            5,
            {"planner": "llama", "model": "qwen2.5-coder-0.5b", "typed": True, "_warmup": False},
        ),
    ],
    "executor": [
        Row("fanout10x50ms.floor.gather", "floor_gather_fanout", None, 30),
        Row(
            "fanout10x50ms.ember",
            "ember_fanout",
            "fanout10x50ms.floor.gather",
            30,
            target_ratio=1.04,
        ),
        Row("fanout10x50ms.peer.langgraph", "langgraph_fanout", "fanout10x50ms.floor.gather", 30),
        Row("travel.whole_plan_first", "ember_streamed_plan", None, 5, {"streamed": False}),
        Row("travel.streamed", "ember_streamed_plan", "travel.whole_plan_first", 5),
    ],
}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _stats(data: list[float]) -> dict[str, float]:
    return {
        "median_us": statistics.median(data) * 1e6,
        "p99_us": percentile(data, 0.99) * 1e6,
        "n": len(data),
    }


def measure_one(contender: str, samples: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Runs in the child process. A contender returns samples, or {series: samples}."""
    fn = (
        getattr(contenders, contender, None)
        or getattr(peers, contender, None)
        or getattr(flagships, contender)
    )
    if kwargs.pop("_warmup", True):
        fn(max(10, samples // 20), **kwargs)  # imports, caches, page-warm
    data = fn(samples, **kwargs)
    if isinstance(data, dict):
        return {"series": {key: _stats(values) for key, values in data.items()}}
    return _stats(data)


def run_row(row: Row, quick: bool) -> list[dict[str, Any]]:
    samples = max(min(row.samples, 3), row.samples // 10) if quick else row.samples
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--one",
            row.contender,
            str(samples),
            json.dumps(row.kwargs),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["?"])[-1]
        return [{"name": row.name, "contender": row.contender, "skipped": last}]
    measured = json.loads(child.stdout)
    if "series" not in measured:
        return [{"name": row.name, "contender": row.contender, **measured}]
    return [
        {
            "name": f"{row.name}.{key}",
            "contender": row.contender,
            **stats,
            **({"reference": REFERENCES[key]} if key in REFERENCES else {}),
        }
        for key, stats in measured["series"].items()
    ]


# What the hosted platform claims for each layer (../shared/SOURCE-NOTES.md): printed beside
# ember's figures for the same layer, labelled as the vendor's claims, never as a target met.
REFERENCES = {
    "l1_ttft": "vendor claims 180 ms",
    "l2_overhead": "vendor claims 95 ms",
    "l3_persist": "vendor claims 42 ms",
    "l4_e2e": "vendor claims 650 ms",
}


def machine() -> dict[str, Any]:
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(
                line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "system": platform.platform(),
        "load_avg_1m": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--suite", choices=[*sorted(SUITES), "crash", "revocation", "all"], default="all"
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", dest="json_out", help="write results to this file")
    parser.add_argument("--markdown", help="write the results as Markdown tables to this file")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        name, samples, kwargs = args.one
        print(json.dumps(measure_one(name, int(samples), json.loads(kwargs))))
        return 0

    suites = [*sorted(SUITES), "crash", "revocation"] if args.suite == "all" else [args.suite]
    report: dict[str, Any] = {
        "machine": machine(),
        "command": " ".join(["python -m benchmarks.run", *sys.argv[1:]]),
        "suites": {},
    }
    for suite in suites:
        if suite == "crash":
            report["suites"][suite] = run_crash(args.quick)
            continue
        if suite == "revocation":
            report["suites"][suite] = run_revocation(args.quick)
            continue
        print(
            f"\n[{suite}]\n{'benchmark':<36} {'median us':>11} {'p99 us':>11} "
            f"{'x floor':>8}  target",
            flush=True,
        )
        report["suites"][suite] = run_suite(SUITES[suite], args.quick)
    for path, text in ((args.json_out, json.dumps(report, indent=2)), (args.markdown, None)):
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w") as handle:
                handle.write(text if text is not None else render(report) + "\n")
    return 0


def run_crash(quick: bool) -> list[dict[str, Any]]:
    """`ember chaos` on 100-step chains, idempotent and not (10 trials each with --quick)."""
    from ember.measure.chaos import run_chaos

    trials = 10 if quick else 100
    print(f"\n[crash]\n{trials} kills of 100-step chains, then resume", flush=True)
    rows = []
    for mode in ("idempotent", "non-idempotent"):
        report = run_chaos(
            trials=trials, steps=100, durability="normal", idempotent=mode == "idempotent", seed=1
        )
        row = {"name": f"crash.normal.{mode}", **report.to_json()}
        print(
            f"{row['name']}: lost {row['lost']}, duplicated {row['duplicated']}, "
            f"in doubt {row['in_doubt']}, resume p50 {row['resume_ms']['p50']} ms",
            flush=True,
        )
        rows.append(row)
    return rows


def run_revocation(quick: bool) -> list[dict[str, Any]]:
    """Revoke a principal at random instants while its runs run in another process; count the
    calls made after a revocation committed (`ember.measure.revocation`)."""
    from ember.measure.revocation import run_revocation_race

    revocations = 100 if quick else 1000
    print(f"\n[revocation]\n{revocations} revocations during running runs", flush=True)
    report = run_revocation_race(revocations)
    row = {"name": "revocation.race", **msgspec.to_builtins(report)}
    print(
        f"{row['name']}: {report.revocations} revocations, {report.runs} runs, "
        f"{report.calls_allowed} calls allowed, {report.calls_denied} denied, "
        f"stale calls {report.stale_calls}, stale effects {report.stale_effects}",
        flush=True,
    )
    return [row]


def run_suite(rows: list[Row], quick: bool) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    by_name: dict[str, dict[str, Any]] = {}
    for row in rows:
        for result in run_row(row, quick):
            _place(row, result, by_name)
            results.append(result)
            print(_line(result), flush=True)
    return results


def _place(row: Row, result: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> None:
    """Add the ratio to the row's floor and the verdict on its target, then remember it."""
    floor = by_name.get(row.floor or "")
    if "median_us" in result and floor and "median_us" in floor:
        result["floor"] = row.floor
        result["ratio_to_floor"] = result["median_us"] / floor["median_us"]
    if row.target_us is not None and "median_us" in result:
        result["target_us"] = row.target_us
        result["meets_target"] = result["median_us"] <= row.target_us
    if row.target_ratio is not None and "ratio_to_floor" in result:
        result["target_ratio"] = row.target_ratio
        result["meets_target"] = result["ratio_to_floor"] <= row.target_ratio
    by_name[result["name"]] = result


def _line(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"{result['name']:<36} skipped: {result['skipped']}"
    ratio = f"{result['ratio_to_floor']:.2f}" if "ratio_to_floor" in result else "floor"
    target = result.get("reference", "")
    if "meets_target" in result:
        verdict = "pass" if result["meets_target"] else "FAIL"
        goal = (
            f"<= {result['target_us']:.0f} us"
            if "target_us" in result
            else f"<= {result['target_ratio']:.2f} x floor"
        )
        target = f"{goal}: {verdict}"
    return (
        f"{result['name']:<36} {result['median_us']:>11.2f} {result['p99_us']:>11.2f} "
        f"{ratio:>8}  {target}"
    )


if __name__ == "__main__":
    sys.exit(main())
