"""The revocation race: revoke a principal's token at random instants while its runs are running
in another process, and count the calls that happened after a revocation had committed.

A child process runs 10-step chains as principal `racer`, back to back, on a real SQLite
journal; each call appends its idempotency key to an effect log of its own (the truth of what
happened). This process revokes `racer`'s token at a random instant (0-`spacing_ms`), then
gives it a new one a moment later, `revocations` times. Afterwards the audit log, whose order is
the order in which the database committed everything, says for each allowed call whether
`racer` was revoked at that point; a stale call is an allowed call (or an effect) that comes
after a revocation and before the next token. Expected: 0.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from ember.journal.control import ControlStore

__all__ = ["RaceReport", "run_revocation_race"]

_POLICY = '@id("racer calls") permit(principal == User::"racer", action, resource);\n'


class RaceReport(msgspec.Struct):
    """What `run_revocation_race` counted."""

    revocations: int
    runs: int = 0
    calls_allowed: int = 0
    calls_denied: int = 0
    effects: int = 0
    stale_calls: int = 0  # allowed calls after a revocation committed, before the next token
    stale_effects: int = 0  # effects of such calls, or effects with no allowed call at all
    seconds: float = 0.0


def run_revocation_race(
    revocations: int = 1000, *, spacing_ms: float = 8.0, seed: int = 1
) -> RaceReport:
    """Race `revocations` revocations against running runs (see the module docstring)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        db, effects, stop = Path(tmp) / "race.db", Path(tmp) / "effects.log", Path(tmp) / "stop"
        store = ControlStore(db)
        store.add_token("racer", (), _digest(0), "race")
        store.set_policy(_POLICY, "race")
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "ember.measure.revocation", str(db), str(effects), str(stop)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for(lambda: effects.exists() and effects.stat().st_size > 0, child)
            for round_ in range(1, revocations + 1):
                time.sleep(rng.uniform(0, spacing_ms) / 1000)
                store.revoke("racer", "race")
                time.sleep(rng.uniform(0, spacing_ms / 4) / 1000)
                store.add_token("racer", (), _digest(round_), "race")
        finally:
            stop.touch()
            out, _ = child.communicate(timeout=120)
        report = _count(store, effects, revocations)
        report.runs = int(json.loads(out.strip().splitlines()[-1])["runs"])
        report.seconds = time.perf_counter() - started
        store.close()
    return report


def _digest(round_: int) -> str:
    return f"{round_:064x}"


def _wait_for(ready: Any, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        if child.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the racing runs did not start")
        time.sleep(0.01)


def _count(store: ControlStore, effects: Path, revocations: int) -> RaceReport:
    """Walk the audit log in commit order, knowing when `racer` was revoked."""
    report = RaceReport(revocations)
    revoked, allowed, stale = False, set(), set()
    for row in store.audit():
        entry = json.loads(row.body)
        kind = entry["kind"]
        if kind in ("token.revoke", "token.create") and entry.get("name") == "racer":
            revoked = kind == "token.revoke"
        elif kind == "call" and entry["principal"] == "racer":
            report.calls_allowed += 1
            allowed.add(entry["key"])
            if revoked:
                stale.add(entry["key"])
        elif kind == "deny" and entry["principal"] == "racer":
            report.calls_denied += 1
    happened = effects.read_text().split()
    report.effects = len(happened)
    report.stale_calls = len(stale)
    report.stale_effects = sum(1 for key in happened if key in stale or key not in allowed)
    return report


def _race(db: Path, effects: Path, stop: Path) -> None:
    """The child: 10-step chains as `racer`, back to back, until `stop` exists."""
    import asyncio

    from ember import Plan, Runtime, ScriptedPlanner, SQLiteJournal, Step, ToolRegistry, tool
    from ember.policy.control import ControlPlane

    log = effects.open("a", buffering=1)

    @tool(inline=True)
    def touch(n: int, idempotency_key: str = "") -> dict[str, int]:
        """Leaves an effect."""
        log.write(idempotency_key + "\n")
        return {"n": n}

    registry = ToolRegistry()
    registry.register(touch)
    plan = Plan([Step(i, "touch", {"n": i}, [i - 1] if i > 1 else []) for i in range(1, 11)])
    journal, store = SQLiteJournal(db), ControlStore(db)
    runtime = Runtime(
        registry, ScriptedPlanner({"race": plan}), journal, control=ControlPlane(store)
    )

    stopping = os.path.exists  # checked between runs: a stat call, not worth a thread

    async def main() -> int:
        runs = 0
        while not stopping(stop):
            await runtime.run("race", principal="racer")
            runs += 1
        return runs

    runs = asyncio.run(main())
    runtime.close()
    print(json.dumps({"runs": runs}))


if __name__ == "__main__":
    _race(*(Path(arg) for arg in sys.argv[1:4]))
    os._exit(0)
