from __future__ import annotations

import asyncio
import sqlite3
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ember.errors import CorruptRecordError, JournalError, RunNotFoundError
from ember.journal import (
    PlanStep,
    RunDone,
    RunResumed,
    RunStarted,
    RunStatus,
    RunWaiting,
    SQLiteJournal,
    StepDone,
    StepInDoubt,
    StepIntent,
    StepStatus,
    fold,
    idempotency_key,
)
from ember.journal.sqlite import MIGRATIONS
from ember.plan import Step

from .backends import execute, open_at, query


def events_of(run_id: str) -> list:  # type: ignore[type-arg]
    step = Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-03"})
    key = idempotency_key(run_id, 1, "get_weather", step.args)
    return [
        RunStarted(run_id, 1.0, "weather in Oslo", "scripted", "2026-03-02"),
        PlanStep(run_id, 1.1, step),
        StepIntent(run_id, 1.2, 1, "get_weather", step.args, key),
        StepDone(run_id, 1.3, 1, {"temp_c": 3.5}, 0.4, 0.1),
        RunDone(run_id, 1.4, RunStatus.SUCCEEDED, "3.5 C", None, {"l4_e2e": 1.0}),
    ]


async def append_all(journal: Any, events: list) -> None:  # type: ignore[type-arg]
    for event in events:
        await journal.append(event)


def test_events_survive_reopening_the_journal(journal_at: Callable[[], Any]) -> None:
    journal = journal_at()
    asyncio.run(append_all(journal, events_of("r-1")))
    journal.close()
    reopened = journal_at()
    assert reopened.read("r-1") == events_of("r-1")
    state = fold("r-1", reopened.read("r-1"))
    assert state.status is RunStatus.SUCCEEDED
    assert state.steps[1].status is StepStatus.SUCCEEDED
    assert state.steps[1].result == {"temp_c": 3.5}
    assert [(r.run_id, r.status) for r in reopened.runs()] == [("r-1", RunStatus.SUCCEEDED)]
    assert reopened.find_run("r-") == "r-1"
    asyncio.run(append_all(reopened, events_of("r-10")))
    assert reopened.find_run("r-1") == "r-1"  # a whole id, though r-10 starts with it too
    with pytest.raises(JournalError, match="ambiguous"):
        reopened.find_run("r-")
    with pytest.raises(RunNotFoundError, match="no run 'r-2'"):
        reopened.read("r-2")
    reopened.close()


def test_concurrent_appends_share_commits(journal_at: Callable[[], Any]) -> None:
    journal = journal_at()
    commits: list[int] = []  # the rows of each commit (a commit is heard once by a watcher)
    journal.watch(lambda recorded: commits.append(len({r.seq for r in recorded})))

    async def many() -> None:
        await asyncio.gather(*(append_all(journal, events_of(f"r-{i}")) for i in range(50)))

    asyncio.run(many())
    assert len(journal.runs(limit=100)) == 50
    assert sum(commits) == 250  # a row an event: each run appends one at a time
    if isinstance(journal, SQLiteJournal):
        assert len(commits) == 5  # one commit per event "wave" (5 events a run), not 250
    else:  # while one commit is in flight the next fills up: a few commits, not 250
        assert len(commits) <= 25
        assert max(commits) >= 40


def test_a_run_alone_commits_without_waiting_for_company(tmp_path: Path) -> None:
    """After a commit that held only its events, a lone run's append commits at once (no turn
    of the event loop); once another run appends, appends share the next flush again."""
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    reader = sqlite3.connect(path)
    one, two = events_of("r-1"), events_of("r-2")

    async def turned(append: Awaitable[None]) -> bool:
        """Whether the event loop ran other callbacks while `append` ran."""
        turns: list[int] = []
        asyncio.get_running_loop().call_soon(turns.append, 1)
        await append
        return bool(turns)

    async def scenario() -> list[bool]:
        seen = [await turned(journal.append(one[0]))]  # first commit: waits for the flush
        seen.append(await turned(journal.append(one[1])))  # r-1 alone: commits at once
        durable = reader.execute("SELECT count(*) FROM events").fetchone()[0]
        assert durable == 2  # committed, visible to another connection
        journal.append_soon(two[0])  # another run arrives
        seen.append(await turned(journal.append(one[2])))  # so r-1 shares the next flush
        seen.append(await turned(journal.append(one[3])))  # and the commit after it
        return seen

    assert asyncio.run(scenario()) == [True, False, True, True]
    assert journal.read("r-1") == one[:4]
    reader.close()
    journal.close()


def test_a_runs_events_in_one_commit_share_a_row_and_read_back_in_order(
    journal_at: Callable[[], Any],
) -> None:
    """One row a run a commit: a run that starts and ends in one commit lists as ended, and a
    commit of two runs holds one row for each."""
    journal = journal_at()
    commits: list[list[tuple[int, str]]] = []
    journal.watch(lambda recorded: commits.append([(r.seq, r.event.run_id) for r in recorded]))
    one, two, three = events_of("r-1"), events_of("r-2"), events_of("r-3")

    async def scenario() -> None:
        for event in one[:-1]:
            journal.append_soon(event)
        await journal.append(one[-1])  # r-1 from start to end: one commit
        for first, second in zip(two[:-1], three[:-1], strict=True):
            journal.append_soon(first)
            journal.append_soon(second)
        await asyncio.gather(journal.append(two[-1]), journal.append(three[-1]))

    asyncio.run(scenario())
    rows = query(journal, "SELECT seq, run_id, kind FROM events ORDER BY seq")
    assert rows[0][1:] == ("r-1", "run.started")  # r-1 whole, in one row
    for commit in commits:  # a row for each run of a commit, holding its events
        assert len({seq for seq, _ in commit}) == len({run for _, run in commit})
    if isinstance(journal, SQLiteJournal):
        assert [row[1:] for row in rows] == [  # r-2 and r-3 in two commits: starts, ends
            ("r-1", "run.started"),
            ("r-2", "run.started"),
            ("r-3", "run.started"),
            ("r-2", "run.done"),
            ("r-3", "run.done"),
        ]
    assert [journal.read(run) for run in ("r-1", "r-2", "r-3")] == [one, two, three]
    assert {(r.run_id, r.status) for r in journal.runs()} == {
        (run, RunStatus.SUCCEEDED) for run in ("r-1", "r-2", "r-3")
    }
    journal.close()


def test_a_run_is_listed_with_the_latest_change_of_its_state(
    journal_at: Callable[[], Any],
) -> None:
    """Resumed, then waiting, in one commit: listed as waiting; resumed again: running."""
    journal = journal_at()
    start = events_of("r-1")[:3]
    resumed, waiting = RunResumed("r-1", 2.0, "vm:1"), RunWaiting("r-1", 2.1, [1])
    in_doubt = StepInDoubt("r-1", 2.05, 1, "interrupted")

    async def scenario() -> list[RunStatus]:
        seen = []
        await append_all(journal, start)
        seen.append(journal.runs()[0].status)
        journal.append_soon(resumed)
        journal.append_soon(in_doubt)
        await journal.append(waiting)
        seen.append(journal.runs()[0].status)
        await journal.append(RunResumed("r-1", 3.0, "vm:1"))
        seen.append(journal.runs()[0].status)
        return seen

    assert asyncio.run(scenario()) == [RunStatus.RUNNING, RunStatus.WAITING, RunStatus.RUNNING]
    assert journal.read("r-1") == [
        *start,
        resumed,
        in_doubt,
        waiting,
        RunResumed("r-1", 3.0, "vm:1"),
    ]
    journal.close()


def test_checksum_mismatch_is_detected(journal_at: Callable[[], Any]) -> None:
    journal = journal_at()
    asyncio.run(append_all(journal, events_of("r-1")))
    execute(
        journal,
        "UPDATE events SET body=replace(body, '3.5', '9.5') WHERE kind='step.done'",
        "UPDATE events SET body=convert_to(replace(convert_from(body, 'UTF8'), '3.5', '9.5'), "
        "'UTF8') WHERE kind='step.done'",
    )
    journal.close()
    reopened = journal_at()
    with pytest.raises(CorruptRecordError, match="record 4 .* fails its checksum"):
        reopened.read("r-1")
    reopened.close()


def test_schema_is_migrated_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    SQLiteJournal(path).close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    db.close()
    with pytest.raises(JournalError, match="newer than this ember knows"):
        SQLiteJournal(path)


def test_a_journal_written_by_an_older_ember_is_migrated_with_its_runs(tmp_path: Path) -> None:
    """Schema 1 indexed events by run id; schema 2 gives each run a key. Runs written before
    the upgrade read, list and resume as they did, and new appends go on after them."""
    from ember.journal.events import encode_event

    path = tmp_path / "j.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")  # as ember left it
        db.executescript(f"BEGIN; {MIGRATIONS[0]}; PRAGMA user_version=1; COMMIT;")
        for run_id in ("r-old-1", "r-old-2"):
            for event in events_of(run_id)[:4]:  # no run.done yet: an interrupted run
                body = encode_event(event)
                db.execute(
                    "INSERT INTO events(run_id, kind, at, body, crc) VALUES (?,?,?,?,?)",
                    (run_id, type(event).__struct_config__.tag, event.at, body, zlib.crc32(body)),
                )
    db.close()
    journal = SQLiteJournal(path)
    assert journal.read("r-old-1") == events_of("r-old-1")[:4]
    assert journal.find_run("r-old-2") == "r-old-2"
    asyncio.run(journal.append(events_of("r-old-1")[4]))  # the interrupted run finishes
    asyncio.run(append_all(journal, events_of("r-new")))
    assert journal.read("r-old-1") == events_of("r-old-1")
    assert journal.read("r-new") == events_of("r-new")
    assert [(r.run_id, r.status) for r in journal.runs()] == [
        ("r-new", RunStatus.SUCCEEDED),
        ("r-old-2", RunStatus.RUNNING),
        ("r-old-1", RunStatus.SUCCEEDED),
    ]
    journal.close()


def test_processes_opening_an_older_journal_at_once_all_get_it_migrated(tmp_path: Path) -> None:
    """Whoever migrates second finds the work done, rather than failing on it."""
    import subprocess
    import sys

    path = tmp_path / "j.db"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")  # as ember left it
        db.executescript(f"BEGIN; {MIGRATIONS[0]}; PRAGMA user_version=1; COMMIT;")
    db.close()
    opener = (
        "import sys; from ember.journal import SQLiteJournal; "
        "j = SQLiteJournal(sys.argv[1]); print(len(j.runs())); j.close()"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", opener, str(path)], stdout=subprocess.PIPE)
        for _ in range(6)
    ]
    assert [child.communicate(timeout=60)[0].strip() for child in children] == [b"0"] * 6
    assert all(child.returncode == 0 for child in children)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    db.close()


def test_processes_writing_one_journal_at_once_lose_nothing(
    journal_at: Callable[[], Any], location: str | Path
) -> None:
    """Several processes appending new runs to one journal (a server, `ember resume`, `ember
    runs resolve`, workers): none fails, every run reads back whole."""
    import subprocess
    import sys

    journal_at().close()
    writer = (
        "import asyncio, sys\n"
        "from tests.test_journal import append_all, events_of\n"
        "from tests.backends import open_at\n"
        "j = open_at(sys.argv[1])\n"
        "async def main():\n"
        "    await asyncio.gather(*(append_all(j, events_of(f'r-{sys.argv[2]}-{i}')) "
        "for i in range(40)))\n"
        "asyncio.run(main()); j.close()\n"
    )
    children = [
        subprocess.Popen(
            [sys.executable, "-c", writer, str(location), str(n)], stderr=subprocess.PIPE
        )
        for n in range(4)
    ]
    errors = [child.communicate(timeout=60)[1].decode() for child in children]
    assert [child.returncode for child in children] == [0] * 4, errors
    journal = journal_at()
    assert len(journal.runs(limit=1000)) == 160
    assert all(
        journal.read(f"r-{n}-{i}") == events_of(f"r-{n}-{i}") for n in range(4) for i in range(40)
    )


def test_postgres_schema_is_migrated_once_by_processes_opening_it_at_once(
    postgres_db: str,
) -> None:
    import subprocess
    import sys

    import psycopg

    from ember.journal.pgschema import MIGRATIONS as PG_MIGRATIONS

    opener = (
        "import sys; from ember.journal.postgres import PostgresJournal; "
        "j = PostgresJournal(sys.argv[1]); print(len(j.runs())); j.close()"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", opener, postgres_db], stdout=subprocess.PIPE)
        for _ in range(4)
    ]
    assert [child.communicate(timeout=60)[0].strip() for child in children] == [b"0"] * 4
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM ember_schema").fetchall() == [
            (len(PG_MIGRATIONS),)
        ]
        conn.execute("UPDATE ember_schema SET version = version + 1")
    with pytest.raises(JournalError, match="newer than this ember knows"):
        open_at(postgres_db)


def test_an_unreachable_postgres_is_a_clear_error() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(JournalError, match="cannot open the journal at .*port=1") as caught:
        open_at("postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2")
    assert "secret" not in str(caught.value)  # the password is never said


def test_unwritable_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(JournalError, match="cannot open the journal"):
        SQLiteJournal(blocker / "j.db")


def test_idempotency_key_depends_on_the_action_only() -> None:
    a = idempotency_key("r-1", 3, "send_email", {"to": "a@b.co", "body": "x"})
    assert a == idempotency_key("r-1", 3, "send_email", {"body": "x", "to": "a@b.co"})
    assert a != idempotency_key("r-1", 3, "send_email", {"to": "a@b.co", "body": "y"})
    assert a != idempotency_key("r-1", 4, "send_email", {"to": "a@b.co", "body": "x"})
    assert a != idempotency_key("r-2", 3, "send_email", {"to": "a@b.co", "body": "x"})
