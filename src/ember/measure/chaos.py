"""`ember chaos`: kill -9 a workflow at random instants, resume it, and count its side effects.

Each trial runs a chain of `steps` side-effecting steps in a child process, SIGKILLs it at a
random instant (seeded) of its run, then resumes it in a fresh process until it finishes. Every
effect is a row in a separate SQLite file, so the count per step is the truth: 0 rows is a lost
step, 2 or more a duplicated effect.

- idempotent mode: the tool dedupes by idempotency key, so recovery re-dispatches the
  interrupted step. Expected: 0 lost, 0 duplicated.
- non-idempotent mode: the tool cannot dedupe, so recovery holds an interrupted step `in_doubt`.
  The harness then plays the operator: it looks at the effect record and resolves `--skip` if the
  effect happened, `--retry` if not. Expected: 0 lost, 0 duplicated, each crash mid-call counted
  as in doubt, never silently repeated.

Resume time is measured from spawning the resuming process to its first tool call.

Peers (`run_peer_chaos`, `ember.measure.chaos_peers`): the same chain, kills and counts on
LangGraph and DBOS workflows, when the `bench` extra installed them, printed beside ember's rows.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["ChaosReport", "chaos_table", "run_chaos", "run_peer_chaos"]


def _run_id(effects: Path) -> str:
    """The run of a trial, named after its effect record (trials may share a journal)."""
    return f"r-chaos-{effects.stem}"


class ChaosReport(msgspec.Struct):
    """The counts of one `ember chaos` mode."""

    trials: int
    steps: int
    durability: str
    idempotent: bool
    system: str = "ember"  # or a peer of `ember.measure.chaos_peers.PEERS`
    crashed: int = 0  # trials whose child was killed before it finished
    lost: int = 0
    duplicated: int = 0
    duplicating_trials: int = 0  # trials with at least one duplicated effect
    in_doubt: int = 0
    unfinished: int = 0  # runs that did not finish after 5 resumes
    resume_samples_ms: list[float] = []

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        samples = data.pop("resume_samples_ms")
        data["resume_ms"] = {
            "p50": round(statistics.median(samples), 1) if samples else None,
            "p99": round(_percentile(samples, 0.99), 1) if samples else None,
            "n": len(samples),
        }
        return data

    @property
    def label(self) -> str:
        """What was crashed, for a table row."""
        if self.system != "ember":
            from ember.measure.chaos_peers import PEERS

            return PEERS[self.system][0]
        tools = "idempotent" if self.idempotent else "non-idempotent"
        return f"ember, {tools} tools, durability {self.durability}"


def chaos_table(reports: list[ChaosReport]) -> str:
    """ember's rows and the peers' side by side (the same trials, steps and kill instants)."""
    first = reports[0]
    lines = [
        f"ember chaos: {first.trials} trials of {first.steps} steps each, kill -9 at a random "
        "instant of each run, then resume",
        f"{'':56} {'killed':>6} {'lost':>5} {'duplicated (trials)':>19} {'in doubt':>8}  "
        "resume p50 / p99 ms",
    ]
    for report in reports:
        resume = report.to_json()["resume_ms"]
        lines.append(
            f"{report.label:56} {report.crashed:>6} {report.lost:>5} "
            f"{f'{report.duplicated} ({report.duplicating_trials})':>19} "
            f"{report.in_doubt:>8}  {resume['p50']} / {resume['p99']}"
        )
    return "\n".join(lines)


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Trial(msgspec.Struct, frozen=True):
    db: Path | str  # a SQLite file, or a postgresql:// URL that the trials share
    effects: Path
    steps: int
    module: str  # the child: `ember.measure.chaos`, or `ember.measure.chaos_peers` for a peer
    how: tuple[str, ...]  # its last arguments: (durability, tool mode), or (peer,)

    def child(self, action: str) -> list[str]:
        where = [str(self.db), str(self.effects), str(self.steps)]
        return [sys.executable, "-m", self.module, action, *where, *self.how]


def run_chaos(
    *,
    trials: int,
    steps: int,
    durability: str,
    idempotent: bool,
    seed: int,
    db: str | None = None,
) -> ChaosReport:
    """Run the crash test on ember (see the module docstring); progress goes to stderr. `db`:
    a postgresql:// journal for every trial (each its own run) instead of a SQLite file each."""
    mode = "idempotent" if idempotent else "non-idempotent"
    report = ChaosReport(trials, steps, "postgresql" if db else durability, idempotent)
    return _crash(report, "ember.measure.chaos", (durability, mode), seed, shared=db)


def run_peer_chaos(peer: str, *, trials: int, steps: int, seed: int) -> ChaosReport:
    """The same crash test on a peer's workflow (`ember.measure.chaos_peers`): its steps cannot
    dedupe, so a step run again after the crash is a duplicated effect."""
    from ember.measure.chaos_peers import PEERS

    if peer not in PEERS:
        raise ValueError(f"unknown peer {peer!r}: one of {', '.join(PEERS)}")
    report = ChaosReport(trials, steps, "as shipped", idempotent=False, system=peer)
    return _crash(report, "ember.measure.chaos_peers", (peer,), seed)


def _crash(
    report: ChaosReport,
    module: str,
    how: tuple[str, ...],
    seed: int,
    *,
    shared: str | None = None,
) -> ChaosReport:
    """Calibrate, then kill and resume `report.trials` workflows of child `module` (`shared`:
    the journal of every trial, else a file each)."""
    rng = random.Random(seed)

    def trial_at(db: Path, effects: Path) -> _Trial:
        return _Trial(shared or db, effects, report.steps, module, how)

    with tempfile.TemporaryDirectory(prefix="ember-chaos-") as tmp:
        base = Path(tmp)
        # the fastest of three whole runs: a slow one would put kills after the run's end
        duration = min(
            _calibrate(trial_at(base / f"c{n}.db", base / f"c{n}-fx.db")) for n in range(3)
        )
        for number in range(report.trials):
            trial = trial_at(base / f"t{number}.db", base / f"t{number}-fx.db")
            report.crashed += _run_and_kill(trial, rng.uniform(0, duration))
            _recover(trial, report)
            counts = _effect_counts(trial.effects)
            report.lost += sum(1 for n in range(1, report.steps + 1) if counts.get(n, 0) == 0)
            duplicated = sum(c - 1 for c in counts.values() if c > 1)
            report.duplicated += duplicated
            report.duplicating_trials += duplicated > 0
            print(
                f"  {report.system} trial {number + 1}/{report.trials}: lost {report.lost}, "
                f"duplicated {report.duplicated}, in doubt {report.in_doubt}",
                file=sys.stderr,
                flush=True,
            )
    return report


def _calibrate(trial: _Trial) -> float:
    """Seconds a whole workflow takes once started: the window to kill in."""
    child = subprocess.Popen(trial.child("work"), stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    child.stdout.readline()  # STARTED
    start = time.perf_counter()
    child.communicate(timeout=300)
    return time.perf_counter() - start


def _run_and_kill(trial: _Trial, delay: float) -> int:
    """Start a workflow, SIGKILL it `delay` seconds after it started; 1 if it was killed."""
    child = subprocess.Popen(trial.child("work"), stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    child.stdout.readline()  # STARTED: the run is about to begin
    time.sleep(delay)
    killed = child.poll() is None
    if killed:
        child.send_signal(signal.SIGKILL)
    child.communicate(timeout=300)
    return int(killed)


def _recover(trial: _Trial, report: ChaosReport) -> None:
    for _ in range(5):
        spawned = time.time()
        done = subprocess.run(
            trial.child("resume"), capture_output=True, text=True, timeout=300, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"the resuming process failed: {done.stderr[-2000:]}")
        out = json.loads(done.stdout.strip().splitlines()[-1])
        if out["first_dispatch"] is not None:
            report.resume_samples_ms.append((out["first_dispatch"] - spawned) * 1000)
        if out["status"] != "waiting":
            return
        counts = _effect_counts(trial.effects)
        for step_id in out["in_doubt"]:
            report.in_doubt += 1
            decision = "skip" if counts.get(step_id, 0) else "retry"  # the operator checked
            subprocess.run(  # through the command a person would use
                [
                    sys.executable,
                    "-m",
                    "ember.cli",
                    "runs",
                    "resolve",
                    "--db",
                    str(trial.db),
                    _run_id(trial.effects),
                    str(step_id),
                    f"--{decision}",
                ],
                check=True,
                capture_output=True,
                timeout=300,
            )
    report.unfinished += 1


def _effect_counts(effects: Path) -> dict[int, int]:
    if not effects.exists():
        return {}
    db = sqlite3.connect(effects)
    try:
        rows = db.execute("SELECT step, count(*) FROM effects GROUP BY step").fetchall()
    except sqlite3.OperationalError:
        rows = []
    finally:
        db.close()
    return dict(rows)


# -- the child process ---------------------------------------------------------------------------


def _runtime(db: str, effects: Path, steps: int, durability: str, idempotent: bool) -> Any:
    from ember import Plan, Runtime, ScriptedPlanner, SQLiteJournal, Step, ToolRegistry, tool

    sink = sqlite3.connect(effects, isolation_level=None)
    sink.execute("PRAGMA journal_mode=WAL")
    sink.execute("CREATE TABLE IF NOT EXISTS effects(step INTEGER, idempotency_key TEXT)")
    sink.execute(
        "CREATE UNIQUE INDEX IF NOT EXISTS once ON effects(idempotency_key) "
        "WHERE idempotency_key IS NOT NULL"
    )

    @tool(name="effect", idempotent=idempotent, inline=True)
    def effect(n: int, idempotency_key: str = "") -> dict[str, int]:
        """Record one side effect."""
        key = idempotency_key if idempotent else None
        sink.execute("INSERT OR IGNORE INTO effects VALUES (?, ?)", (n, key))
        return {"n": n}

    registry = ToolRegistry()
    registry.register(effect)
    plan = Plan(
        [Step(i, "effect", {"n": i}, after=[i - 1] if i > 1 else []) for i in range(1, steps + 1)]
    )
    journal: Any
    if db.startswith("postgresql://"):
        from ember.journal.postgres import PostgresJournal

        journal = PostgresJournal(db)
    else:
        journal = SQLiteJournal(db, durability=durability)  # type: ignore[arg-type]
    return Runtime(registry, ScriptedPlanner({"chaos": plan}), journal), journal


def _main(argv: list[str]) -> int:
    action, db, effects, steps, durability, last = argv
    runtime, journal = _runtime(db, Path(effects), int(steps), durability, last == "idempotent")
    run_id = _run_id(Path(effects))
    from ember.errors import RunNotFoundError, UserError
    from ember.journal import fold

    try:
        state = fold(run_id, journal.read(run_id))
    except RunNotFoundError:
        state = None  # killed before anything was durable: no step can have run
    if action == "work" or state is None:
        print("STARTED", flush=True)
        result = asyncio.run(runtime.run("chaos", run_id=run_id))
    elif state.status in ("succeeded", "failed"):
        print(
            json.dumps({"status": "finished", "in_doubt": [], "first_dispatch": None}), flush=True
        )
        os._exit(0)  # the kill came after the run had finished: nothing to resume
    else:
        try:
            result = asyncio.run(runtime.resume(run_id))
        except UserError as exc:
            print(str(exc), file=sys.stderr)
            return 1
    journal.close()
    in_doubt = [s.id for s in result.steps if s.status == "in_doubt"]
    print(
        json.dumps(
            {
                "status": result.status,
                "in_doubt": in_doubt,
                "first_dispatch": result.first_dispatch,
            }
        ),
        flush=True,
    )
    os._exit(0)  # nothing left to flush: skip interpreter teardown


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
