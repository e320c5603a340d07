"""Both journal backends for one test suite: SQLite (a file in the test's directory) and
PostgreSQL (a database of its own, created for the test and dropped after it).

PostgreSQL comes from `EMBER_TEST_POSTGRES_URL` (`.ci/run` sets it); without it, the
PostgreSQL half of a parametrized test is skipped and says why."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ember.journal import (
    Event,
    PlanDone,
    PlanStep,
    RunStarted,
    SQLiteJournal,
    StepDone,
    StepIntent,
    idempotency_key,
)
from ember.plan import Step, resolve

BACKENDS = ["sqlite", "postgres"]


def admin_url() -> str:
    url = os.environ.get("EMBER_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("set EMBER_TEST_POSTGRES_URL (e.g. postgresql://postgres@127.0.0.1/postgres)")
    return url


@pytest.fixture
def postgres_db() -> Iterator[str]:
    """The URL of a new, empty database, dropped (with its connections) after the test."""
    psycopg = pytest.importorskip("psycopg")
    admin = admin_url()
    name = f"ember_test_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL answers at EMBER_TEST_POSTGRES_URL: {exc}")
    yield admin.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def open_at(location: str | Path) -> Any:
    """The journal at `location`: a path (SQLite) or a postgresql:// URL."""
    if isinstance(location, str) and location.startswith("postgresql://"):
        from ember.journal.postgres import PostgresJournal

        return PostgresJournal(location)
    return SQLiteJournal(location)


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where a test's journal lives, on each backend."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_db"))
    return tmp_path / "j.db"


@pytest.fixture
def journal_at(location: str | Path) -> Iterator[Callable[[], Any]]:
    """Opens the test's journal (again: the same data), each closed after the test."""
    opened: list[Any] = []

    def open_journal() -> Any:
        journal = open_at(location)
        opened.append(journal)
        return journal

    yield open_journal
    for journal in opened:
        journal.close()


def query(journal: Any, sql: str) -> list[tuple[Any, ...]]:
    """Rows of `sql` (the same text on both backends) read from `journal`'s database."""
    if isinstance(journal, SQLiteJournal):
        return [tuple(row) for row in journal._db.execute(sql).fetchall()]
    with journal._pool.connection() as conn:
        return [tuple(row) for row in conn.execute(sql).fetchall()]


def execute(journal: Any, sqlite: str, postgres: str) -> None:
    """Change `journal`'s database behind its back (a statement for each backend)."""
    if isinstance(journal, SQLiteJournal):
        journal._db.execute(sqlite)
        return
    with journal._pool.connection() as conn:
        conn.execute(postgres)


def crashed_journal(
    path: Path | str,
    plan: list[Step],
    done: dict[int, Any],
    interrupted: list[int],
    *,
    plan_done: bool = True,
    at: float = 100.0,
) -> Any:
    """The journal a crash leaves: steps in `done` finished, those in `interrupted` have an
    intent and no outcome; every record written at wall time `at`."""
    journal = open_at(path)
    events: list[Event] = [RunStarted("r-1", at, "task", "scripted", "2026-03-02", "gone:1")]
    events += [PlanStep("r-1", at, step) for step in plan]
    if plan_done:
        events.append(PlanDone("r-1", at, len(plan)))
    for step in plan:
        if step.id in done or step.id in interrupted:
            args = resolve(step.args, done)
            key = idempotency_key("r-1", step.id, step.tool, args)
            events.append(StepIntent("r-1", at, step.id, step.tool, args, key))
        if step.id in done:
            events.append(StepDone("r-1", at, step.id, done[step.id], 1.0, 0.5))

    async def write() -> None:
        for event in events:
            await journal.append(event)

    asyncio.run(write())
    return journal
