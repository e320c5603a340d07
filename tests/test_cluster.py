"""Workers on the shared PostgreSQL journal: leases claimed with SKIP LOCKED and taken over when
they expire (an injected clock), appends fenced by the lease epoch, and a real worker frozen
with SIGSTOP past its lease while another takes its run over."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ember.errors import JournalError, RunNotFoundError
from ember.journal import RunStatus, StepDone, StepIntent, fold, pgwrite
from ember.journal.leases import Leases
from ember.journal.postgres import FencedError, PostgresJournal
from ember.measure import fx
from ember.testing import FakeClock

from .test_journal import events_of


def test_runs_are_claimed_once_and_an_expired_lease_is_taken_over(postgres_db: str) -> None:
    PostgresJournal(postgres_db).close()  # the schema
    clock = FakeClock(start=1000.0)
    first = Leases(postgres_db, "a:1", lease_s=10.0, clock=clock)
    second = Leases(postgres_db, "b:2", lease_s=10.0, clock=clock)

    async def scenario() -> None:
        for n in range(3):
            await first.enqueue(f"r-{n}", f"task {n}")
        mine = await first.claim(2)
        assert [(c.run_id, c.epoch, c.task) for c in mine] == [
            ("r-0", 1, "task 0"),
            ("r-1", 1, "task 1"),
        ]
        assert [c.run_id for c in await second.claim(5)] == ["r-2"]  # the rest, not a's
        assert await second.claim(5) == []
        clock.advance(6.0)
        assert await first.renew({"r-0": 1, "r-1": 1}) == []  # held until 1016
        assert await second.renew({"r-2": 1}) == []
        clock.advance(6.0)  # 1012: not expired
        assert await second.claim(5) == []
        assert await second.renew({"r-2": 1}) == []  # b renews; a stopped
        clock.advance(5.0)  # 1017: a's leases ended at 1016
        taken = await second.claim(5)
        assert [(c.run_id, c.epoch) for c in taken] == [("r-0", 2), ("r-1", 2)]
        assert await first.renew({"r-0": 1, "r-1": 1}) == ["r-0", "r-1"]  # a learns it
        assert await first.state("r-0") == ("running", 2, "b:2")
        await second.expire("r-1", 2)  # b gives r-1 up: the next claim takes it at once
        assert [(c.run_id, c.epoch) for c in await first.claim(5)] == [("r-1", 3)]
        await first.close()
        await second.close()

    asyncio.run(scenario())


def test_a_stale_epoch_is_refused_and_the_other_runs_of_the_commit_are_written(
    postgres_db: str,
) -> None:
    zombie, successor = PostgresJournal(postgres_db), PostgresJournal(postgres_db)
    leases = Leases(postgres_db, "z:1", lease_s=10.0)

    async def scenario() -> None:
        await leases.enqueue("r-held", "task")
        (claim,) = await leases.claim()
        zombie.hold("r-held", claim.epoch)
        for event in events_of("r-held")[:2]:
            await zombie.append(event)
        await leases.expire("r-held", claim.epoch)
        (again,) = await leases.claim()  # another worker's claim: epoch 2
        successor.hold("r-held", again.epoch)
        intent = events_of("r-held")[2]
        other = events_of("r-free")[0]
        zombie.append_soon(other)  # in the same commit as the refused intent
        with pytest.raises(FencedError, match="r-held was taken over .*epoch 2.*epoch 1"):
            await zombie.append(intent)
        await successor.append(intent)
        await leases.close()

    asyncio.run(scenario())
    events = successor.read("r-held")
    assert events == events_of("r-held")[:3]  # the zombie's intent is not there; the new one is
    assert successor.read("r-free") == events_of("r-free")[:1]
    zombie.close()
    successor.close()


def test_a_commit_stalled_between_its_round_trips_gives_the_runs_row_lock_up(
    postgres_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process stopped between its commit's reads and writes (here its event loop, blocked
    right after the reads, as a SIGSTOP would) keeps the held run's row lock only until the
    server ends its session, idle in a transaction: another session locks the row meanwhile
    (a takeover's claim), and the stalled appender is told its append failed; nothing of it
    was written."""
    journal = PostgresJournal(postgres_db)
    leases = Leases(postgres_db, "z:1")
    waited: list[float] = []
    fenced = pgwrite._fenced

    def stalled(*args: Any) -> None:
        waited.append(_locked(postgres_db, "SELECT 1 FROM runs WHERE run_id = 'r-stalled'"))
        fenced(*args)

    monkeypatch.setattr(pgwrite, "_fenced", stalled)

    async def scenario() -> None:
        await leases.enqueue("r-stalled", "task")
        (claim,) = await leases.claim()
        journal.hold("r-stalled", claim.epoch)
        with pytest.raises(JournalError, match="cannot write to the journal"):
            await journal.append(events_of("r-stalled")[0])
        await leases.close()

    asyncio.run(scenario())
    assert len(waited) == 1, "the row stayed locked while the commit was stalled"
    with pytest.raises(RunNotFoundError):
        journal.read("r-stalled")
    journal.close()


def test_a_control_change_stalled_in_its_transaction_gives_the_control_row_up(
    postgres_db: str,
) -> None:
    """A control-plane change stopped inside its transaction (its process frozen with the
    control row locked) keeps the row only until the server ends its session: a worker's
    commit, which reads that row under a share lock, gets it meanwhile; the change is not
    made, and its caller is told so."""
    from ember.journal.pgcontrol import PostgresControlStore

    PostgresJournal(postgres_db).close()  # the schema
    store = PostgresControlStore(postgres_db)
    before = store.version()
    waited: list[float] = []

    def stalled(db: Any, version: int, at: float) -> dict[str, Any]:
        waited.append(_locked(postgres_db, "SELECT 1 FROM control WHERE id = 0", "SHARE"))
        return {"by": "test"}

    with pytest.raises(JournalError, match="nothing was changed"):
        store._change("policy.set", stalled)
    assert len(waited) == 1, "the control row stayed locked while the change was stalled"
    assert store.version() == before
    store.close()


def _locked(url: str, select: str, mode: str = "UPDATE") -> float:
    """Lock the rows of `select` (`FOR mode`) from another session, as a worker's claim or
    commit would: the seconds it waited. A lock not had in 20 s fails the test."""
    import psycopg

    started = time.monotonic()
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SET lock_timeout = '20s'")
        with other.transaction():
            other.execute(f"{select} FOR {mode}")
    return time.monotonic() - started


def _worker(
    url: str, root: Path, name: str, *, lease: float = 1.0
) -> tuple[subprocess.Popen[bytes], Path]:
    log = root / f"{name}.log"
    env = dict(os.environ, FX_URL=url, FX_PAUSE_S="0.25")
    command = [
        sys.executable,
        "-m",
        "ember.cli",
        "--config",
        str(root / "ember.toml"),
        "worker",
        "--db",
        url,
        "--planner",
        "scripted",
        "--script",
        str(root / "plans.json"),
        "--lease",
        str(lease),
        "--poll",
        "0.1",
    ]
    with log.open("wb") as out:
        child = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    return child, log


def _until(
    condition: Callable[[], bool],
    what: str,
    timeout: float = 90.0,
    log: Path | None = None,
    db: str | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            said = log.read_text()[-3000:] if log is not None else ""
            raise AssertionError(f"gave up waiting: {what}; {said}{_sessions(db)}")
        time.sleep(0.05)


def _sessions(url: str | None) -> str:
    """The database's other sessions and the locks they wait for: what a stuck worker waits on."""
    if url is None:
        return ""
    import psycopg

    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=3)
    except psycopg.Error as exc:
        return f"\n(the sessions could not be read: {exc})"
    with conn:
        sessions = conn.execute(
            "SELECT pid, state, wait_event_type, wait_event, now() - xact_start, left(query, 120) "
            "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        waiting = conn.execute(
            "SELECT pid, locktype, relation::regclass, mode FROM pg_locks WHERE NOT granted"
        ).fetchall()
    return "\nsessions: " + "\n  ".join(map(str, sessions)) + f"\nlocks waited for: {waiting}"


def cluster_dir(root: Path, steps: int) -> Path:
    """A config with the effect tools only, and the plan of task 'chain'."""
    (root / "ember.toml").write_text(
        'demo_tools = false\n[[tools]]\nmodule = "ember.measure.fx"\n', encoding="utf-8"
    )
    plans = {"chain": fx.plan("effect", steps)}
    (root / "plans.json").write_text(json.dumps(plans), encoding="utf-8")
    return root


def test_a_frozen_worker_is_fenced_after_another_takes_its_run_over(
    postgres_db: str, tmp_path: Path
) -> None:
    steps = 8
    root = cluster_dir(tmp_path, steps)
    journal = PostgresJournal(postgres_db)
    fx.prepare(postgres_db)
    leases = Leases(postgres_db, "test:0")
    asyncio.run(leases.enqueue("r-frozen", "chain"))
    first, first_log = _worker(postgres_db, root, "first")
    second = None
    try:
        _until(lambda: sum(fx.counts(postgres_db).values()) >= 2, "the first worker's effects")
        first.send_signal(signal.SIGSTOP)  # frozen, its lease running out
        second, second_log = _worker(postgres_db, root, "second")

        def done() -> bool:
            state = asyncio.run(leases.state("r-frozen"))
            return state is not None and state[0] == "done"

        _until(done, "the second worker to finish the run", log=second_log, db=postgres_db)
        first.send_signal(signal.SIGCONT)  # it wakes and carries on where it was
        # refused by the fence; or, if it was frozen inside a commit, its session was ended by
        # the server (idle in transaction) so that its run could be taken over
        _until(
            lambda: any(
                said in first_log.read_text()
                for said in ("was taken over by another worker", "interrupted (JournalError")
            ),
            "the first worker's writes to be refused",
            log=first_log,
        )
    finally:
        first.send_signal(signal.SIGCONT)
        for child in (first, second):
            if child is not None:
                child.terminate()
                child.wait(timeout=30)
        asyncio.run(leases.close())
    assert "r-frozen: resuming (lease epoch 2)" in second_log.read_text()
    assert fx.counts(postgres_db) == {("r-frozen", n): 1 for n in range(1, steps + 1)}
    events = journal.read("r-frozen")
    state = fold("r-frozen", events)
    assert state.status is RunStatus.SUCCEEDED
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("RunDone") == kinds.count("RunResumed") == 1
    resumed = kinds.index("RunResumed")
    for n in range(1, steps + 1):  # one outcome a step: nothing of the zombie's got in
        assert len([e for e in events if isinstance(e, StepDone) and e.step_id == n]) == 1
        intents = [i for i, e in enumerate(events) if isinstance(e, StepIntent) and e.step_id == n]
        assert len({events[i].idempotency_key for i in intents}) == 1  # type: ignore[union-attr]
        # before the takeover, or after it; twice only for the call in flight at the freeze,
        # which the second worker made again with the same key
        assert len([i for i in intents if i < resumed]) <= 1
        assert len([i for i in intents if i > resumed]) <= 1
    journal.close()


def test_chaos_on_a_cluster_loses_and_repeats_nothing(postgres_db: str) -> None:
    """`ember chaos --db ... --workers 3`, small: workers SIGKILLed at random and replaced, every
    backend connection terminated once; counted from the tools' own records."""
    from ember.measure.cluster_chaos import run_cluster_chaos

    report = run_cluster_chaos(
        postgres_db, runs=24, steps=20, workers=3, kill_every_s=1.0, lease_s=1.0, seed=3
    )
    assert report.unfinished == 0
    assert report.lost == 0
    assert report.duplicated == 0
    assert report.killed >= 1
    assert report.terminated >= 3  # at least each worker's journal connection
    assert report.to_json()["takeover_ms"]["floor (lease)"] == 1000.0


def test_workers_started_at_once_share_one_new_audit_key(tmp_path: Path) -> None:
    """The first start of several workers on one host: one key, whole, loaded by all."""
    script = (
        "import sys; from pathlib import Path; from ember.policy.signing import AuditSigner; "
        "print(AuditSigner(Path(sys.argv[1])).key_id)"
    )
    key = tmp_path / "keys" / "audit-key"
    children = [
        subprocess.Popen([sys.executable, "-c", script, str(key)], stdout=subprocess.PIPE)
        for _ in range(6)
    ]
    ids = {child.communicate(timeout=60)[0].strip() for child in children}
    assert all(child.returncode == 0 for child in children)
    assert len(ids) == 1
    assert [p.name for p in key.parent.iterdir()] == ["audit-key"]


def test_a_durable_sleep_finishes_at_its_deadline_on_the_worker_that_took_it_over(
    postgres_db: str, tmp_path: Path
) -> None:
    """A run sleeping on a worker that is killed: another worker takes it over when the lease
    ends and wakes it at the deadline counted from the first intent, not a new full sleep."""
    from ember.journal import RunResumed

    seconds = 4.0
    (tmp_path / "ember.toml").write_text("demo_tools = true\n", encoding="utf-8")
    plans = {"nap": {"steps": [{"id": 1, "tool": "sleep", "args": {"seconds": seconds}}]}}
    (tmp_path / "plans.json").write_text(json.dumps(plans), encoding="utf-8")
    journal = PostgresJournal(postgres_db)
    leases = Leases(postgres_db, "test:0")
    asyncio.run(leases.enqueue("r-nap", "nap"))
    os.environ.setdefault("EMBER_DEMO_DIR", str(tmp_path / "demo"))
    first, _ = _worker(postgres_db, tmp_path, "first")
    second = None
    try:

        def sleeping() -> bool:
            try:
                return any(isinstance(e, StepIntent) for e in journal.read("r-nap"))
            except Exception:  # not started yet
                return False

        _until(sleeping, "the first worker to start the sleep")
        first.send_signal(signal.SIGKILL)
        first.wait()
        second, _ = _worker(postgres_db, tmp_path, "second")
        _until(lambda: asyncio.run(leases.state("r-nap")) == ("done", 2, ""), "the takeover")
    finally:
        for child in (first, second):
            if child is not None and child.poll() is None:
                child.terminate()
                child.wait(timeout=30)
        asyncio.run(leases.close())
    events = journal.read("r-nap")
    intent = next(e for e in events if isinstance(e, StepIntent))
    resumed = next(e for e in events if isinstance(e, RunResumed))
    done = next(e for e in events if isinstance(e, StepDone))
    assert fold("r-nap", events).status is RunStatus.SUCCEEDED
    assert done.result == {"woke_at": intent.at + seconds}  # the deadline of the first intent
    assert done.at >= intent.at + seconds
    assert done.at < resumed.at + seconds  # the rest of the sleep, not a new one
    journal.close()


def test_a_stopped_worker_hands_its_runs_over_at_once(postgres_db: str, tmp_path: Path) -> None:
    """SIGTERM (a rolling restart): the worker stops, then gives its runs up, so another takes
    them over now, not when their (here minute-long) leases would have ended."""
    steps = 8
    root = cluster_dir(tmp_path, steps)
    fx.prepare(postgres_db)
    journal = PostgresJournal(postgres_db)
    leases = Leases(postgres_db, "test:0")
    asyncio.run(leases.enqueue("r-stop", "chain"))
    first, first_log = _worker(postgres_db, root, "first", lease=60.0)
    second = None
    try:
        _until(lambda: sum(fx.counts(postgres_db).values()) >= 2, "the first worker's effects")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0
        second, second_log = _worker(postgres_db, root, "second", lease=60.0)

        def done() -> bool:
            state = asyncio.run(leases.state("r-stop"))
            return state is not None and state[0] == "done"

        _until(done, "the second worker to take the run over", timeout=40.0, log=second_log)
    finally:
        for child in (first, second):
            if child is not None and child.poll() is None:
                child.terminate()
                child.wait(timeout=30)
        asyncio.run(leases.close())
    assert "r-stop: resuming (lease epoch 2)" in second_log.read_text()
    assert fx.counts(postgres_db) == {("r-stop", n): 1 for n in range(1, steps + 1)}
    assert fold("r-stop", journal.read("r-stop")).status is RunStatus.SUCCEEDED
    assert "Traceback" not in first_log.read_text()
    journal.close()
