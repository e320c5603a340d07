"""`ember chaos --db postgresql://... --workers 3`: crash a cluster of workers and count effects.

The harness queues `runs` runs of `steps` side-effecting steps (`ember.measure.fx`: each call
is a row its tool writes itself) in the shared journal, starts `workers` worker processes, and
while they work SIGKILLs one at random every `kill_every_s` on average and starts a new one in
its place; once, a third of the way in (by effects recorded), it terminates every backend
connection of the database (`pg_terminate_backend`): every worker's journal, lease and tool
connections at once.

- idempotent runs (`effect`): an interrupted call is made again with the same idempotency key,
  which the tool dedupes. Expected: 0 lost, 0 duplicated, 0 in doubt.
- non-idempotent runs (`effect_once`): an interrupted call is held in doubt; the harness plays
  the operator (`ember runs resolve`): skip if the effect record has the step, else retry.
  Expected: 0 lost, 0 duplicated; the in-doubt steps counted.

Every run must finish. Takeover: for each kill, the time from the SIGKILL to the moment another
worker resumed each run the killed worker held (its `run.resumed` event); its floor is the lease.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from ember.journal import RunResumed, StepStatus, fold
from ember.journal.leases import Leases
from ember.journal.postgres import PostgresJournal
from ember.measure import fx

__all__ = ["ClusterChaosReport", "run_cluster_chaos"]


class ClusterChaosReport(msgspec.Struct):
    runs: int
    steps: int
    workers: int
    lease_s: float
    killed: int = 0  # workers SIGKILLed
    terminated: int = 0  # backend connections ended by pg_terminate_backend
    lost: int = 0
    duplicated: int = 0
    in_doubt: int = 0
    unfinished: int = 0
    seconds: float = 0.0
    takeover_samples_ms: list[float] = []

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        samples = sorted(data.pop("takeover_samples_ms"))
        data["takeover_ms"] = {
            "p50": round(statistics.median(samples), 1) if samples else None,
            "p99": round(samples[min(len(samples) - 1, round(0.99 * (len(samples) - 1)))], 1)
            if samples
            else None,
            "n": len(samples),
            "floor (lease)": self.lease_s * 1000,
        }
        return data

    def table(self) -> str:
        takeover = self.to_json()["takeover_ms"]
        return (
            f"ember chaos on PostgreSQL: {self.runs} runs x {self.steps} steps on {self.workers} "
            f"workers, {self.killed} workers SIGKILLed, {self.terminated} backends terminated, "
            f"{self.seconds:.1f} s\n"
            f"lost {self.lost}  duplicated {self.duplicated}  in doubt {self.in_doubt}  "
            f"unfinished {self.unfinished}\n"
            f"takeover after a kill: p50 {takeover['p50']} ms, p99 {takeover['p99']} ms "
            f"(n={takeover['n']}; floor: the lease, {self.lease_s * 1000:.0f} ms)"
        )


class _Cluster:
    """The worker processes, by slot; a killed one is replaced."""

    def __init__(self, url: str, root: Path, lease_s: float) -> None:
        self.url, self.root, self.lease_s = url, root, lease_s
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        pause = os.environ.get("FX_PAUSE_S", "0.05")  # each call: a run of 20 takes > 1 s
        env = dict(os.environ, FX_URL=self.url, FX_PAUSE_S=pause)
        command = [sys.executable, "-m", "ember.cli", "--config", str(self.root / "ember.toml")]
        command += ["worker", "--db", self.url, "--planner", "scripted"]
        command += ["--script", str(self.root / "plans.json"), "--lease", str(self.lease_s)]
        command += ["--poll", "0.1"]
        log = (self.root / f"worker-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def run_cluster_chaos(
    url: str,
    *,
    runs: int = 300,
    steps: int = 20,
    workers: int = 3,
    idempotent_share: float = 0.5,
    kill_every_s: float = 1.5,
    lease_s: float = 2.0,
    seed: int = 1,
    timeout_s: float = 1800.0,
) -> ClusterChaosReport:
    """Crash a cluster as the module docstring says; progress goes to stderr."""
    rng = random.Random(seed)
    report = ClusterChaosReport(runs, steps, workers, lease_s)
    PostgresJournal(url).close()
    fx.prepare(url)
    tag = f"{int(time.time())}-{seed}"
    ids = [f"r-chaos-{tag}-{n}" for n in range(runs)]
    once = {run_id for run_id in ids if rng.random() >= idempotent_share}
    with tempfile.TemporaryDirectory(prefix="ember-cluster-chaos-") as tmp:
        root = Path(tmp)
        (root / "ember.toml").write_text(
            'demo_tools = false\n[[tools]]\nmodule = "ember.measure.fx"\n', encoding="utf-8"
        )
        plans = {"idempotent": fx.plan("effect", steps), "once": fx.plan("effect_once", steps)}
        (root / "plans.json").write_text(json.dumps(plans), encoding="utf-8")
        asyncio.run(_enqueue(url, ids, once))
        cluster = _Cluster(url, root, lease_s)
        started = time.monotonic()
        churn = _Churn(url, ids, steps, kill_every_s, started + timeout_s)
        try:
            for _ in range(workers):
                cluster.start()
            _churn(churn, cluster, rng, report)
        finally:
            cluster.stop()
        report.seconds = time.monotonic() - started
    _count(url, ids, report, churn.kills)
    return report


async def _enqueue(url: str, ids: list[str], once: set[str]) -> None:
    leases = Leases(url, "chaos")
    for run_id in ids:
        await leases.enqueue(run_id, "once" if run_id in once else "idempotent")
    await leases.close()


class _Churn(msgspec.Struct):
    """What the harness does while the workers work (see `_churn`)."""

    url: str
    ids: list[str]
    steps: int
    kill_every_s: float
    deadline: float
    kills: list[tuple[float, list[str]]] = []


def _churn(
    churn: _Churn, cluster: _Cluster, rng: random.Random, report: ClusterChaosReport
) -> None:
    """Kill and replace workers, terminate the backends once, resolve in-doubt steps, until
    every run is done (or the deadline). The kills begin once the workers have claimed runs."""
    import psycopg

    ids = churn.ids
    terminate_at: int | None = len(ids) * churn.steps // 3  # effects: a third of the way
    next_kill: float | None = None
    with psycopg.connect(churn.url, autocommit=True) as db:
        while time.monotonic() < churn.deadline:
            rows = db.execute(
                "SELECT state, count(*) FROM runs WHERE run_id = ANY(%s) GROUP BY state", (ids,)
            ).fetchall()
            states: dict[str, int] = dict(rows)
            done = states.get("done", 0)
            if done == len(ids):
                return
            if states.get("waiting"):
                report.in_doubt += _resolve(churn.url, db, ids)
            if terminate_at is not None and _effects(db, ids) >= terminate_at:
                report.terminated += _terminate(db)
                terminate_at = None  # once
                _say(f"terminated {report.terminated} backend connections")
            if next_kill is None and states.get("running"):
                next_kill = time.monotonic() + rng.expovariate(1 / churn.kill_every_s)
            if next_kill is not None and time.monotonic() >= next_kill:
                _kill_one(db, cluster, rng, report, churn.kills)
                next_kill = time.monotonic() + rng.expovariate(1 / churn.kill_every_s)
            _say(f"{done}/{len(ids)} runs done, {report.killed} workers killed")
            time.sleep(0.25)


def _effects(db: Any, ids: list[str]) -> int:
    row = db.execute("SELECT count(*) FROM fx_effects WHERE run = ANY(%s)", (ids,)).fetchone()
    return int(row[0]) if row else 0


def _terminate(db: Any) -> int:
    """End every other client connection to the database; how many were ended."""
    ended = db.execute(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND backend_type = 'client backend'"
    ).fetchone()
    return int(ended[0]) if ended else 0


def _kill_one(
    db: Any,
    cluster: _Cluster,
    rng: random.Random,
    report: ClusterChaosReport,
    kills: list[tuple[float, list[str]]],
) -> None:
    alive = [proc for proc in cluster.procs if proc.poll() is None]
    victim = rng.choice(alive)
    import socket

    owner = f"{socket.gethostname()}:{victim.pid}"
    held = [
        run_id
        for (run_id,) in db.execute(
            "SELECT run_id FROM runs WHERE owner = %s AND state = 'running'", (owner,)
        ).fetchall()
    ]
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    kills.append((time.time(), held))
    report.killed += 1
    cluster.start()


def _resolve(url: str, db: Any, ids: list[str]) -> int:
    """Play the operator for every run waiting with steps in doubt: skip a step whose effect
    the record has, retry one it has not (through `ember runs resolve`)."""
    waiting = [
        run_id
        for (run_id,) in db.execute(
            "SELECT run_id FROM runs WHERE run_id = ANY(%s) AND state = 'waiting'", (ids,)
        ).fetchall()
    ]
    if not waiting:
        return 0
    journal = PostgresJournal(url)
    effects = fx.counts(url, waiting)
    resolved = 0
    try:
        for run_id in waiting:
            state = fold(run_id, journal.read(run_id))
            for step_id, step in state.steps.items():
                if step.status is not StepStatus.IN_DOUBT or step.decision is not None:
                    continue
                decision = "skip" if effects.get((run_id, step_id)) else "retry"
                command = [sys.executable, "-m", "ember.cli", "runs", "resolve", "--db", url]
                done = subprocess.run(
                    [*command, run_id, str(step_id), f"--{decision}"],
                    check=False,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                if done.returncode != 0:  # said, and tried again at the next look
                    _say(f"ember runs resolve {run_id} {step_id} failed: {done.stderr[-500:]}")
                    continue
                resolved += 1
    finally:
        journal.close()
    return resolved


def _count(
    url: str, ids: list[str], report: ClusterChaosReport, kills: list[tuple[float, list[str]]]
) -> None:
    import psycopg

    effects = fx.counts(url, ids)
    with psycopg.connect(url, autocommit=True) as db:
        done = {
            run_id
            for (run_id,) in db.execute(
                "SELECT run_id FROM runs WHERE run_id = ANY(%s) AND state = 'done'", (ids,)
            ).fetchall()
        }
    report.unfinished = len(ids) - len(done)
    for run_id in done:
        for step in range(1, report.steps + 1):
            count = effects.get((run_id, step), 0)
            report.lost += count == 0
            report.duplicated += max(0, count - 1)
    journal = PostgresJournal(url)
    try:
        for killed_at, held in kills:
            for run_id in held:
                resumed = [e.at for e in journal.read(run_id) if isinstance(e, RunResumed)]
                after = [at for at in resumed if at > killed_at]
                if after:
                    report.takeover_samples_ms.append((min(after) - killed_at) * 1000)
    finally:
        journal.close()


def _say(message: str) -> None:
    print(f"  chaos: {message}", file=sys.stderr, flush=True)
