"""Real crashes: child processes killed with SIGKILL, and a WAL torn at many offsets."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ember.errors import RunNotFoundError
from ember.journal import SQLiteJournal, StepDone
from ember.measure.chaos import run_chaos
from ember.plan import Step

from .conftest import ember as run_ember
from .test_recovery import crashed_journal


@pytest.mark.parametrize("idempotent", [True, False])
def test_sigkill_at_random_instants_never_loses_or_repeats_an_effect(
    idempotent: bool, location: Path | str
) -> None:
    """On both journals: a SQLite file a trial, or one PostgreSQL database for all trials."""
    shared = location if isinstance(location, str) else None
    report = run_chaos(
        trials=6, steps=40, durability="normal", idempotent=idempotent, seed=7, db=shared
    )
    assert report.crashed >= 3  # most kills land mid-run
    assert report.lost == 0
    assert report.duplicated == 0
    assert report.unfinished == 0
    if idempotent:
        assert report.in_doubt == 0
    resumes = report.resume_samples_ms  # how long, is for benchmarks; that they were timed, here
    assert resumes
    assert min(resumes) > 0


@pytest.mark.parametrize("peer", ["langgraph-async", "dbos"])
def test_the_peers_are_crashed_the_same_way_and_counted(peer: str) -> None:
    """The peers' workflows (the bench extra) under the same kills: whatever they duplicate is
    counted from the effect records, and none of their runs is left unfinished."""
    from ember.measure.chaos import chaos_table, run_peer_chaos
    from ember.measure.chaos_peers import installed_peers

    if peer not in installed_peers():
        pytest.skip(f'{peer} is not installed: pip install -e ".[bench]"')
    report = run_peer_chaos(peer, trials=3, steps=30, seed=7)
    assert report.crashed >= 2
    assert report.lost == 0  # both resume from durable state; what they may do is repeat
    assert report.unfinished == 0
    assert report.in_doubt == 0  # they have no such notion: a step runs again or not
    assert report.resume_samples_ms  # a resume was timed (how long is for benchmarks)
    assert report.duplicating_trials <= min(report.duplicated, report.trials)
    row = chaos_table([report]).splitlines()[-1]
    assert row.startswith(report.label)
    assert f" {report.duplicated} ({report.duplicating_trials}) " in row


def test_torn_wal_never_invents_or_loses_a_committed_event(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal._db.execute("PRAGMA wal_autocheckpoint=0")  # keep every commit in the WAL
    wal = Path(f"{path}-wal")
    events = [
        StepDone("r-1", float(i), i, {"text": "x" * (i * 37 % 900)}, 1.0, 0.1) for i in range(1, 41)
    ]
    committed: list[tuple[int, int]] = []  # (WAL size once durable, events committed)

    async def write() -> None:
        for count, event in enumerate(events, start=1):
            if count % 3 == 2:  # queued: it shares the next commit's row with the next event
                journal.append_soon(event)
                continue
            await journal.append(event)
            committed.append((os.path.getsize(wal), count))

    asyncio.run(write())
    rows = journal._db.execute("SELECT count(*) FROM events").fetchone()[0]
    assert rows == len(events) - len(events) // 3  # a third of the rows hold two events
    db_bytes, wal_bytes = path.read_bytes(), wal.read_bytes()
    journal.close()
    offsets = sorted(
        {
            *range(0, len(wal_bytes), 997),
            *(size - 1 for size, _ in committed),
            *(size for size, _ in committed),
        }
    )
    for offset in offsets:
        copy = tmp_path / f"cut{offset}"
        copy.mkdir()
        (copy / "j.db").write_bytes(db_bytes)
        (copy / "j.db-wal").write_bytes(wal_bytes[:offset])
        reopened = SQLiteJournal(copy / "j.db")
        try:
            found = reopened.read("r-1")
        except RunNotFoundError:
            found = []
        reopened.close()
        expected = max((count for size, count in committed if size <= offset), default=0)
        assert found == events[:expected], f"WAL cut at byte {offset}"
        shutil.rmtree(copy)
    assert len(offsets) > 40


def test_resume_and_resolve_from_the_command_line(
    tmp_path: Path, ember_env: dict[str, str]
) -> None:
    plan = [
        Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-03"}),
        Step(
            2, "send_email", {"to": "a@example.com", "subject": "Weather", "body": "{$1.forecast}"}
        ),
    ]
    crashed_journal(
        Path(ember_env["EMBER_DB"]),
        plan,
        {1: {"city": "Oslo", "date": "2026-03-03", "forecast": "sunny", "temp_c": 1.0}},
        [2],
    ).close()

    def ember(*args: str) -> subprocess.CompletedProcess[str]:
        return run_ember(ember_env, *args)

    listed = ember("runs")
    assert "r-1" in listed.stdout
    assert "running" in listed.stdout
    resumed = ember("resume", "--all", "--json")
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["status"] == "succeeded"  # send_email is idempotent in the demo pack
    assert out["steps"][1]["args"]["body"] == "sunny"
    assert "resuming r-1" in resumed.stderr
    assert ember("resume", "--all").stderr.strip() == "no interrupted runs"
    finished = ember("resume", "r-1")
    assert finished.returncode == 2
    assert "already finished (succeeded)" in finished.stderr
    not_doubtful = ember("runs", "resolve", "r-1", "2", "--skip")
    assert not_doubtful.returncode == 2
    assert "is not waiting for a decision" in not_doubtful.stderr
