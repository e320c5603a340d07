"""The shared PostgreSQL journal and its workers, beside SQLite and beside their floors, in one run
(docs/benchmarks.md, "Scale-out: PostgreSQL and workers").

    python -m benchmarks.cluster --db postgresql://postgres@127.0.0.1:5432/postgres

`--db` is an administrator's URL: each measurement gets a database of its own, dropped after.

- floor: a bare PostgreSQL commit (one ~350-byte row, autocommit) on one connection, and a
  bare SQLite commit (WAL, synchronous=NORMAL), each in a row of its own, sequentially;
- the durable step of one 20-step chain (no control plane), SQLite and PostgreSQL, per step;
- durable steps/s: `--runs` 20-step chains in one process on SQLite and on PostgreSQL (group
  commit), and on PostgreSQL by 1, 2 and 4 `ember worker` processes (the control plane on:
  every intent decided and audited, as `ember worker` runs), from the first run's start to the
  last run's end in the journal's own times;
- takeover: a worker holding runs is SIGKILLed; the time to each of its runs' `run.resumed` by
  another worker, p50 and p99, beside its floor, the lease.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.contenders import _chain_plan, _chain_registry

STEPS = 20


@contextmanager
def scratch(admin: str) -> Iterator[str]:
    """A new database's URL, dropped after."""
    import psycopg

    name = f"ember_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _median_p99(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.99 * len(ordered)))]


def floor_pg_commit(url: str, n: int = 2000) -> list[float]:
    import psycopg

    body = b"x" * 350
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE floor(seq bigint GENERATED ALWAYS AS IDENTITY, body bytea)")
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            conn.execute("INSERT INTO floor(body) VALUES (%s)", (body,))
            samples.append(time.perf_counter() - start)
    return samples


def floor_sqlite_commit(n: int = 2000) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        db = sqlite3.connect(Path(tmp) / "f.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE floor(seq INTEGER PRIMARY KEY, body BLOB)")
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            db.execute("INSERT INTO floor(body) VALUES (?)", (b"x" * 350,))
            samples.append(time.perf_counter() - start)
        db.close()
    return samples


def chain_steps(journal: Any, runs: int = 40) -> list[float]:
    """One 20-step chain at a time: seconds a step (L4 / steps), per run."""
    from ember import Runtime, ScriptedPlanner

    async def main() -> list[float]:
        runtime = Runtime(
            _chain_registry(), ScriptedPlanner({"chain": _chain_plan(STEPS)}), journal
        )
        out = []
        for _ in range(runs):
            done = await runtime.run("chain")
            assert done.status == "succeeded", done.error
            out.append(done.latency_ms["l4_e2e"] / 1000 / STEPS)
        return out

    return asyncio.run(main())


def concurrent_steps_per_s(journal: Any, runs: int, store: Any = None) -> float:
    """`runs` 20-step chains at once in one process: durable steps a second. `store`: the
    control plane's rows, to decide and audit every call as a worker does."""
    from ember import Runtime, ScriptedPlanner
    from ember.policy.control import ControlPlane

    control = ControlPlane(store) if store is not None else None

    async def main() -> float:
        planner = ScriptedPlanner({"chain": _chain_plan(STEPS)})
        runtime = Runtime(_chain_registry(), planner, journal, control=control)
        start = time.perf_counter()
        results = await asyncio.gather(*(runtime.run("chain") for _ in range(runs)))
        assert all(r.status == "succeeded" for r in results)
        return runs * STEPS / (time.perf_counter() - start)

    return asyncio.run(main())


def _cluster_files(root: Path) -> None:
    from ember.policy.signing import AuditSigner

    AuditSigner(root / "audit-key")  # made once here, not by workers starting at once
    (root / "ember.toml").write_text(
        'demo_tools = false\n[[tools]]\nmodule = "benchmarks.cluster_tools"\n', encoding="utf-8"
    )
    plan = {
        "steps": [
            {"id": i, "tool": "inc", "args": {"x": 0 if i == 1 else f"${i - 1}.y"}}
            for i in range(1, STEPS + 1)
        ]
    }
    slow = {
        "steps": [
            {"id": i, "tool": "nap", "args": {"n": i}, "after": [i - 1] if i > 1 else []}
            for i in range(1, STEPS + 1)
        ]
    }
    (root / "plans.json").write_text(json.dumps({"chain": plan, "slow": slow}), encoding="utf-8")


def _worker(url: str, root: Path, name: str, *, lease: float = 10.0, slots: int = 64) -> Any:
    command = [sys.executable, "-m", "ember.cli", "--config", str(root / "ember.toml"), "worker"]
    command += ["--db", url, "--planner", "scripted", "--script", str(root / "plans.json")]
    command += ["--lease", str(lease), "--poll", "0.05", "--slots", str(slots)]
    log = (root / f"{name}.log").open("wb")
    env = dict(os.environ, EMBER_AUDIT_KEY=str(root / "audit-key"))
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    log.close()
    return proc


def _wait(check: Callable[[], bool], timeout: float = 300.0, root: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            logs = [p.read_text(errors="replace")[-2000:] for p in (root or Path()).glob("*.log")]
            raise RuntimeError(f"timed out; the workers' logs end: {logs}")
        time.sleep(0.05)


def _ready(root: Path, names: list[str]) -> Callable[[], bool]:
    return lambda: all(
        "claiming runs" in (root / f"{name}.log").read_text(errors="replace") for name in names
    )


def workers_steps_per_s(admin: str, workers: int, runs: int) -> float:
    """`runs` chains queued at once for `workers` worker processes: steps a second, from the
    first run's start to the last one's end (the journal's times)."""
    from ember.journal import RunDone, RunStarted
    from ember.journal.leases import Leases
    from ember.journal.postgres import PostgresJournal

    with scratch(admin) as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _cluster_files(root)
        PostgresJournal(url).close()
        names = [f"w{n}" for n in range(workers)]
        procs = [_worker(url, root, name) for name in names]
        try:
            _wait(_ready(root, names), 60, root)
            leases = Leases(url, "bench")
            ids = [f"r-{n}" for n in range(runs)]

            async def enqueue() -> None:
                for run_id in ids:
                    await leases.enqueue(run_id, "chain")
                await leases.close()

            asyncio.run(enqueue())
            journal = PostgresJournal(url)

            def done() -> bool:
                rows = journal._query("SELECT count(*) FROM runs WHERE state = 'done'")
                return bool(rows[0][0] == runs)

            _wait(done)
            events = [journal.read(run_id) for run_id in ids]
            journal.close()
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(timeout=60)
    first = min(e.at for run in events for e in run if isinstance(e, RunStarted))
    last = max(e.at for run in events for e in run if isinstance(e, RunDone))
    return runs * STEPS / (last - first)


def takeover_ms(admin: str, kills: int, lease: float) -> list[float]:
    """Kill a worker that holds runs, `kills` times; ms from each kill to each of its runs'
    resumption by the other worker."""
    import socket

    from ember.journal import RunResumed
    from ember.journal.leases import Leases
    from ember.journal.postgres import PostgresJournal

    samples: list[float] = []
    with scratch(admin) as url, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _cluster_files(root)
        journal = PostgresJournal(url)
        procs = {name: _worker(url, root, name, lease=lease) for name in ("a", "b")}
        try:
            _wait(_ready(root, ["a", "b"]), 60, root)
            leases = Leases(url, "bench")
            for kill in range(kills):
                ids = [f"r-{kill}-{n}" for n in range(4)]

                async def enqueue(ids: list[str] = ids) -> None:
                    for run_id in ids:
                        await leases.enqueue(run_id, "slow")

                asyncio.run(enqueue())
                held: list[Any] = []

                def claimed(ids: list[str] = ids, held: list[Any] = held) -> bool:
                    held[:] = journal._query(
                        "SELECT run_id, owner FROM runs WHERE run_id = ANY(%s) "
                        "AND state = 'running'",
                        (ids,),
                    )
                    return len(held) == len(ids)

                _wait(claimed)
                time.sleep(0.5)  # mid-run, a renewal or two later
                name, proc = next(
                    (n, p)
                    for n, p in procs.items()
                    if any(o.endswith(f":{p.pid}") for _, o in held)
                )
                owner = f"{socket.gethostname()}:{proc.pid}"
                victims = [run_id for run_id, o in held if o == owner]
                proc.send_signal(signal.SIGKILL)
                killed_at = time.time()
                proc.wait()
                procs[name] = _worker(url, root, f"{name}{kill}", lease=lease)

                def resumed(victims: list[str] = victims) -> bool:
                    return all(
                        any(isinstance(e, RunResumed) for e in journal.read(r)) for r in victims
                    )

                _wait(resumed)
                for run_id in victims:
                    at = min(e.at for e in journal.read(run_id) if isinstance(e, RunResumed))
                    samples.append((at - killed_at) * 1000)
            asyncio.run(leases.close())
        finally:
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                proc.wait(timeout=60)
            journal.close()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="an administrator's postgresql:// URL")
    parser.add_argument("--runs", type=int, default=200, help="chains for steps/s (default 200)")
    parser.add_argument("--kills", type=int, default=8, help="takeover trials (default 8)")
    parser.add_argument("--lease", type=float, default=1.0, help="lease for takeover, s")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    from ember import SQLiteJournal
    from ember.journal.control import ControlStore
    from ember.journal.pgcontrol import PostgresControlStore
    from ember.journal.postgres import PostgresJournal

    out: dict[str, Any] = {}
    out["floor.pg_commit_us"] = _median_p99([s * 1e6 for s in floor_pg_commit_in(args.db)])
    out["floor.sqlite_commit_us"] = _median_p99([s * 1e6 for s in floor_sqlite_commit()])
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteJournal(Path(tmp) / "b.db")
        out["sqlite.chain_step_us"] = _median_p99([s * 1e6 for s in chain_steps(sqlite)])
        out["sqlite.steps_per_s_one_process"] = concurrent_steps_per_s(sqlite, args.runs)
        store = ControlStore(Path(tmp) / "b.db")
        out["sqlite.steps_per_s_one_process_control"] = concurrent_steps_per_s(
            sqlite, args.runs, store
        )
        store.close()
        sqlite.close()
    with scratch(args.db) as url:
        pg = PostgresJournal(url)
        out["pg.chain_step_us"] = _median_p99([s * 1e6 for s in chain_steps(pg)])
        out["pg.steps_per_s_one_process"] = concurrent_steps_per_s(pg, args.runs)
        pg_store = PostgresControlStore(url)
        out["pg.steps_per_s_one_process_control"] = concurrent_steps_per_s(pg, args.runs, pg_store)
        pg_store.close()
        pg.close()
    for workers in (1, 2, 4):
        out[f"pg.steps_per_s_{workers}_workers"] = workers_steps_per_s(args.db, workers, args.runs)
    samples = takeover_ms(args.db, args.kills, args.lease)
    out["takeover_ms"] = _median_p99(samples)
    out["takeover_floor_ms"] = args.lease * 1000
    _print(out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


def floor_pg_commit_in(admin: str) -> list[float]:
    with scratch(admin) as url:
        return floor_pg_commit(url)


def _print(out: dict[str, Any]) -> None:
    pg_floor, sqlite_floor = out["floor.pg_commit_us"][0], out["floor.sqlite_commit_us"][0]
    print(f"{'measure':<44} {'median':>10} {'p99':>10} {'x floor':>8}")
    rows = [
        ("floor: bare PostgreSQL commit (us)", out["floor.pg_commit_us"], pg_floor),
        ("floor: bare SQLite commit (us)", out["floor.sqlite_commit_us"], sqlite_floor),
        ("durable chain step, SQLite (us)", out["sqlite.chain_step_us"], sqlite_floor),
        ("durable chain step, PostgreSQL (us)", out["pg.chain_step_us"], pg_floor),
    ]
    for label, (median, p99), floor in rows:
        print(f"{label:<44} {median:>10.1f} {p99:>10.1f} {median / floor:>8.2f}")
    print()
    base = out["sqlite.steps_per_s_one_process"]
    for key, label in (
        ("sqlite.steps_per_s_one_process", "SQLite, one process"),
        ("sqlite.steps_per_s_one_process_control", "SQLite, one process (control plane on)"),
        ("pg.steps_per_s_one_process", "PostgreSQL, one process"),
        ("pg.steps_per_s_one_process_control", "PostgreSQL, one process (control plane on)"),
        ("pg.steps_per_s_1_workers", "PostgreSQL, 1 worker (control plane on)"),
        ("pg.steps_per_s_2_workers", "PostgreSQL, 2 workers (control plane on)"),
        ("pg.steps_per_s_4_workers", "PostgreSQL, 4 workers (control plane on)"),
    ):
        print(f"durable steps/s, {label:<46} {out[key]:>9.0f}  x SQLite {out[key] / base:.2f}")
    median, p99 = out["takeover_ms"]
    floor = out["takeover_floor_ms"]
    print(
        f"\ntakeover after a worker's death: p50 {median:.0f} ms, p99 {p99:.0f} ms; floor (the "
        f"lease) {floor:.0f} ms: x{median / floor:.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
