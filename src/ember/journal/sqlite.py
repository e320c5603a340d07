"""The SQLite journal (WAL): append-only events, checksummed, with group commit.

Group commit: `append` queues the event, and a queue that was empty schedules one flush for
the next iteration of the event loop (unless one is scheduled already), so every event appended
in between (by any run in this process) shares one transaction and one commit. `append`
returns when its event is durable. A commit writes one row a run: that run's events in it, as
one checksummed JSON array (a chain step's outcome and the next step's intent; a run's start
and its plan).

A run alone (at `normal`): when the last commit held one run's events only and everything
queued is that run's, no other run is there to share a commit, and `append` commits at once
instead of waiting a turn of the event loop for company (a 20-step chain: ~20% less time a step,
docs/benchmarks.md). As soon as a commit holds two runs, appends wait for the shared flush again.

Durability levels:
- `normal` (default): WAL with synchronous=NORMAL. A committed event survives the process
  crashing or being killed; a power cut or OS crash can lose the last commits (never corrupt).
- `full`: synchronous=FULL, an fsync per commit: survives power loss too, at ~0.4 ms a commit.

Decisions and the audit log (`ember.journal.rows`): an event that records a policy decision is
written only while the control plane's version is still the one it was decided under, checked by
the statement (or transaction) that writes it; else its append raises `PolicyChangedError` and
the other events of the commit are written. Its audit entry is chained into its own row by the
same write. So a revocation committed by any process comes either before the call's intent
(which is then refused) or after it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from ember.errors import CorruptRecordError, JournalError, PolicyChangedError, RunNotFoundError
from ember.journal.audit import guard_of
from ember.journal.events import (
    START,
    CommitListener,
    Event,
    Recorded,
    RunDone,
    RunResumed,
    RunStarted,
    RunStatus,
    RunSummary,
    RunWaiting,
    decode_events,
    encode_event,
)
from ember.journal.rows import (
    Head,
    Queued,
    Row,
    by_run,
    encoded,
    insert_checked,
    insert_one,
    split,
)

__all__ = ["Durability", "SQLiteJournal", "open_database", "status_of"]

Durability = Literal["normal", "full"]

# Ordered: migration i brings the schema from user_version i to i + 1. Never edit one that shipped.
MIGRATIONS: Sequence[str] = (
    """
    CREATE TABLE events(
        seq INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        at REAL NOT NULL,
        body BLOB NOT NULL,
        crc INTEGER NOT NULL
    );
    CREATE INDEX events_by_run ON events(run_id, seq);
    -- partial: only run.started rows enter it, so other appends write no page of it
    CREATE INDEX runs_by_start ON events(seq) WHERE kind = 'run.started';
    """,
    # Each run gets a small integer key, in the order of its first event, and the run index is
    # by that key: the events of runs that run at the same time sit side by side in the index,
    # so a commit shared by 100 runs writes a few index pages, not one page per run (random run
    # ids scattered them; docs/benchmarks.md, "The durable step").
    """
    CREATE TABLE runs(run_key INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE);
    INSERT INTO runs(run_id) SELECT run_id FROM events GROUP BY run_id ORDER BY min(seq);
    ALTER TABLE events ADD COLUMN run_key INTEGER;
    UPDATE events SET run_key = (SELECT run_key FROM runs WHERE runs.run_id = events.run_id);
    CREATE INDEX events_by_run_key ON events(run_key, seq);
    DROP INDEX events_by_run;
    """,
    # A row may hold several events of one run, committed together, as a JSON array (a chain
    # step's outcome and the next intent; a run's start with its plan): half the rows and index
    # entries a step. No table changes; the version tells an older ember it cannot read them.
    "SELECT 1",
    # The control plane (ember.policy): its version counter, bumped by every change to policies,
    # tokens or roles; the policies by version; tokens by the principal they name (only a hash
    # of each); the audit log's signed checkpoints. The audit log itself is in `events`: an
    # entry (`audit`), its number (`audit_seq`) and its chained hash (`chain`) in the row of the
    # event it records, NULL in other rows; a control-plane change is a row of its own (run id
    # '', kind 'control'). See `ember.journal.rows`.
    """
    CREATE TABLE control(id INTEGER PRIMARY KEY CHECK (id = 0), version INTEGER NOT NULL);
    INSERT INTO control VALUES (0, 0);
    CREATE TABLE policies(
        version INTEGER PRIMARY KEY, text TEXT NOT NULL, at REAL NOT NULL, by TEXT NOT NULL
    );
    CREATE TABLE tokens(
        name TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        roles TEXT NOT NULL,
        created_at REAL NOT NULL,
        revoked_at REAL
    );
    CREATE TABLE audit_checkpoints(
        seq INTEGER PRIMARY KEY, head BLOB NOT NULL, at REAL NOT NULL,
        key_id TEXT NOT NULL, signature BLOB NOT NULL
    );
    ALTER TABLE events ADD COLUMN audit_seq INTEGER;
    ALTER TABLE events ADD COLUMN audit BLOB;
    ALTER TABLE events ADD COLUMN chain BLOB;
    """,
)


_INSERT = "INSERT INTO events(run_id, kind, at, body, crc, run_key) VALUES (?,?,?,?,?,?)"
# Commits of up to this many rows (runs) are one multi-row INSERT in autocommit mode, without
# the BEGIN and COMMIT statements around `executemany` (~4 us less a commit).
_ONE_STATEMENT = 8
_INSERTS = {n: _INSERT + ",(?,?,?,?,?,?)" * (n - 1) for n in range(1, _ONE_STATEMENT + 1)}


def open_database(path: Path, durability: Durability = "normal") -> sqlite3.Connection:
    """A connection to the journal database at `path` (WAL, migrated to the current schema).
    `JournalError` if it cannot."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout=10000")  # first: the next one may wait too
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        _migrate(db, path)
    except (sqlite3.Error, OSError) as exc:
        raise JournalError(f"cannot open the journal at {path}: {exc}") from None
    return db


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise JournalError(
            f"the journal at {path} has schema version {version}, newer than this ember "
            f"knows ({len(MIGRATIONS)}): upgrade ember"
        )
    for index in range(version, len(MIGRATIONS)):
        db.execute("BEGIN IMMEDIATE")
        try:  # another process opening the journal at once may have migrated it meanwhile
            if db.execute("PRAGMA user_version").fetchone()[0] <= index:
                for statement in _statements(MIGRATIONS[index]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version={index + 1}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


def status_of(events: list[Event]) -> RunStatus:
    """A run's status from the events of the latest row that holds a change of it."""
    for latest in reversed(events):
        if isinstance(latest, RunDone):
            return latest.status
        if isinstance(latest, RunWaiting):
            return RunStatus.WAITING
        if isinstance(latest, RunResumed):
            break
    return RunStatus.RUNNING


def _written(rows: list[Row], stale: list[Queued]) -> list[list[Queued]]:
    """The events of each row `insert_checked` wrote: a row less the events it left out, and
    no row where nothing was left (as it writes them)."""
    refused = {id(event) for event, _, _ in stale}
    kept = [[q for q in row.events if id(q[0]) not in refused] for row in rows]
    return [events for events in kept if events]


def _statements(script: str) -> list[str]:
    """The statements of a migration script (a trigger's body keeps its semicolons)."""
    statements, current = [], ""
    for part in script.split(";"):
        current += part + ";"
        if sqlite3.complete_statement(current):
            if current.strip(" \n;"):
                statements.append(current.strip())
            current = ""
    return statements


class SQLiteJournal:
    """An append-only event journal in one SQLite file."""

    def __init__(self, path: Path | str, *, durability: Durability = "normal") -> None:
        self.path = Path(path)
        self.durability = durability
        self._db = open_database(self.path, durability)
        self._pending: list[Queued] = []
        self._failure: JournalError | None = None
        # The run whose events alone filled the last commit and fill the queue (else None).
        self._solo: str | None = None
        self._pending_run: str | None = None
        self._keys: dict[str, int] = {}  # run id -> run key, for runs not done yet
        self._head: Head | None = None  # the audit log's head as this process last wrote it
        # The event loop on which a flush is scheduled (a chain whose steps run back to back
        # queues each outcome before a flush has run: one scheduled flush serves them all).
        self._flush_on: asyncio.AbstractEventLoop | None = None
        self._listeners: list[CommitListener] = []

    def watch(self, listener: CommitListener) -> None:
        """Call `listener` after each commit with its events and their positions (it runs in
        the commit's turn of the event loop: it must not block)."""
        self._listeners.append(listener)

    async def append(self, event: Event) -> None:
        """Append `event`; returns once it is durable (see the module docstring)."""
        self._raise_failure()
        if self._solo == event.run_id and (not self._pending or self._pending_run == self._solo):
            guarded = guard_of(event) is not None
            mine = asyncio.get_running_loop().create_future() if guarded else None
            self._pending.append((event, encode_event(event), mine))
            self._pending_run = event.run_id
            self._flush()  # its own commit, which another run's event could not have joined
            self._raise_failure()
            if mine is not None:
                mine.result()  # PolicyChangedError if the control plane changed
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue(event, future)
        await future

    def append_soon(self, event: Event) -> None:
        """Queue `event` without waiting: it is durable with the next commit, which is never
        later than that of any event appended after it. A write error is raised by the next
        `append`. For records whose durability nothing waits on (a step's outcome: its intent
        is already durable, and a crash before the commit reads as a crash during the call)."""
        self._raise_failure()
        if guard_of(event) is not None:
            raise JournalError(
                f"{type(event).__name__} records a decision: `append` it, so that a "
                "PolicyChangedError reaches whoever decided"
            )
        self._queue(event, None)

    def _queue(self, event: Event, future: asyncio.Future[None] | None) -> None:
        if not self._pending:
            loop = asyncio.get_running_loop()
            if self._flush_on is not loop:  # else the flush it has scheduled takes this too
                self._flush_on = loop
                loop.call_soon(self._scheduled_flush)
            self._pending_run = event.run_id
        elif self._pending_run != event.run_id:
            self._pending_run = None
        self._pending.append((event, encode_event(event), future))

    def _scheduled_flush(self) -> None:
        self._flush_on = None
        self._flush()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def _flush(self) -> None:
        if not self._pending:
            return  # an append alone committed it already
        batch, self._pending = self._pending, []
        if self.durability == "normal":
            self._solo = self._pending_run  # one run filled this commit: None if several
        try:
            stale, written, last = self._commit(batch, self._pending_run)
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._keys.clear()  # keys given out in the rolled-back transaction are void
            self._head = None
            error = JournalError(f"cannot write to the journal at {self.path}: {exc}")
            waited = [future for _, _, future in batch if future is not None]
            if len(waited) < len(batch):
                self._failure = error  # an append_soon event was lost: say so at the next append
            for future in waited:
                if not future.done():
                    future.set_exception(error)
            return
        for event, _, refused in stale:  # decided under a version that is no longer current
            if refused is not None and not refused.done():
                refused.set_exception(PolicyChangedError(guard_of(event) or 0))
        for _, _, maybe in batch:
            if maybe is not None and not maybe.done():
                maybe.set_result(None)
        if self._listeners and written:
            self._report(written, last)

    def _report(self, written: list[list[Queued]], last: int) -> None:
        """Tell the listeners what a commit wrote: its rows took consecutive sequence numbers
        ending at `last` (one statement or one write transaction: no other writer between)."""
        first = last - len(written) + 1
        recorded = [
            Recorded(first + row, index, event)
            for row, events in enumerate(written)
            for index, (event, _, _) in enumerate(events)
        ]
        for listener in self._listeners:
            listener(recorded)

    def _commit(
        self, batch: list[Queued], run_id: str | None
    ) -> tuple[list[Queued], list[list[Queued]], int]:
        """One transaction: a row for each run in `batch` with that run's events (`run_id`:
        the one run whose events fill `batch`, else None). Returns the events it left out
        because they were decided under a control-plane version that is no longer current,
        the events of each row written, and the last row's sequence number (0 when nobody
        watches: it is not asked for)."""
        keys, stale = self._keys, []
        if run_id is not None:  # one run's events (a chain step: the common case, kept short)
            key = keys.get(run_id)
            if key is None:
                self._db.execute("BEGIN IMMEDIATE")
                key = keys[run_id] = self._run_key(run_id)
            rows = split(run_id, batch, key)
        else:
            runs = by_run(batch)
            new_runs = [run for run in runs if run not in keys]
            if new_runs or len(runs) > _ONE_STATEMENT:
                self._db.execute("BEGIN IMMEDIATE")
            for run in new_runs:
                keys[run] = self._run_key(run)
            rows = [row for run, queued in runs.items() for row in split(run, queued, keys[run])]
        if all(row.decider is None for row in rows):
            self._insert([encoded(row.run_id, row.events, row.run_key) for row in rows])
            written = [row.events for row in rows]
        else:
            stale = self._insert_decisions(rows)
            written = _written(rows, stale)
        last = self._last_seq() if self._listeners else 0
        if self._db.in_transaction:
            self._db.execute("COMMIT")
        for event, _, _ in batch:
            if type(event) is RunDone:
                keys.pop(event.run_id, None)
        return stale, written, last

    def _last_seq(self) -> int:
        return int(self._db.execute("SELECT last_insert_rowid()").fetchone()[0])

    def _insert(self, rows: list[tuple[object, ...]]) -> None:
        if len(rows) <= _ONE_STATEMENT:  # one statement: its own transaction, or the caller's
            self._db.execute(_INSERTS[len(rows)], [value for row in rows for value in row])
        else:
            if not self._db.in_transaction:
                self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(_INSERT, rows)

    def _insert_decisions(self, rows: list[Row]) -> list[Queued]:
        """Rows of which some decide or are audited (`ember.journal.rows`): a lone row in one
        checked statement when the head is known, else a checked transaction."""
        if len(rows) == 1 and self._head is not None and not self._db.in_transaction:
            head = insert_one(self._db, rows[0], self._head)
            if head is not None:
                self._head = head
                return []
        stale, self._head = insert_checked(self._db, rows)
        return stale

    def _run_key(self, run_id: str) -> int:
        """The key of run `run_id`, given now if it has none (inside the write transaction)."""
        row = self._db.execute("SELECT run_key FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is not None:
            return int(row[0])
        cursor = self._db.execute("INSERT INTO runs(run_id) VALUES (?)", (run_id,))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def read_after(self, run_id: str, after: tuple[int, int] = START) -> list[Recorded]:
        """The events of run `run_id` after position `after`, with their positions;
        `RunNotFoundError` if it has none."""
        key = self._db.execute("SELECT run_key FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if key is None:
            raise RunNotFoundError(run_id)
        rows = self._db.execute(
            "SELECT seq, body, crc FROM events WHERE run_key=? AND seq>=? ORDER BY seq",
            (key[0], after[0]),
        ).fetchall()
        return [
            Recorded(seq, index, event)
            for seq, body, crc in rows
            for index, event in enumerate(self._decode(seq, body, crc))
            if (seq, index) > after
        ]

    def read(self, run_id: str) -> list[Event]:
        """Every event of run `run_id`, in append order; `RunNotFoundError` if there are none."""
        rows = self._db.execute(
            "SELECT seq, body, crc FROM events "
            "WHERE run_key=(SELECT run_key FROM runs WHERE run_id=?) ORDER BY seq",
            (run_id,),
        ).fetchall()
        if not rows:
            raise RunNotFoundError(run_id)
        return [event for seq, body, crc in rows for event in self._decode(seq, body, crc)]

    def find_run(self, prefix: str) -> str:
        """The full id of the run whose id starts with `prefix` (ids are long to type), or is
        `prefix` (a whole id is never ambiguous)."""
        if self._db.execute("SELECT 1 FROM runs WHERE run_id=?", (prefix,)).fetchone():
            return prefix
        rows = self._db.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 2",
            (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        ).fetchall()
        if len(rows) != 1:
            if rows:
                raise JournalError(f"run id prefix {prefix!r} is ambiguous: give more characters")
            raise RunNotFoundError(prefix)
        return str(rows[0][0])

    def runs(
        self,
        limit: int = 20,
        *,
        before: int | None = None,
        status: RunStatus | None = None,
        principal: str | None = None,
        since: float | None = None,
    ) -> list[RunSummary]:
        """The most recent runs, newest first; the filters as `Journal.runs` says. A start's
        row carries its time (`at`), so `since` and `before` are decided by the index; the
        principal and the status by reading the rows, a page at a time."""
        summaries: list[RunSummary] = []
        cursor = before if before is not None else 2**63 - 1
        page = limit if status is None and principal is None else max(limit * 4, 64)
        while len(summaries) < limit:
            started = self._db.execute(
                "SELECT seq, body, crc, run_key FROM events WHERE kind='run.started' "
                "AND seq<? AND at>=? ORDER BY seq DESC LIMIT ?",
                (cursor, since if since is not None else float("-inf"), page),
            ).fetchall()
            for seq, body, crc, run_key in started:
                event = self._decode(seq, body, crc)[0]
                assert isinstance(event, RunStarted)
                if principal is not None and event.principal != principal:
                    continue
                current = self._status(run_key)
                if status is not None and current is not status:
                    continue
                summaries.append(
                    RunSummary(event.run_id, event.task, event.at, current, event.principal, seq)
                )
                if len(summaries) == limit:
                    break
            if len(started) < page:
                break
            cursor = started[-1][0]
        return summaries

    def _status(self, run_key: int) -> RunStatus:
        """A run's status, from the latest row that holds a change of it."""
        last = self._db.execute(
            "SELECT seq, body, crc FROM events WHERE run_key=? AND kind IN "
            "('run.started', 'run.resumed', 'run.waiting', 'run.done') "
            "ORDER BY seq DESC LIMIT 1",
            (run_key,),
        ).fetchone()
        return status_of(self._decode(*last))

    def _decode(self, seq: int, body: bytes | str, crc: int) -> list[Event]:
        data = body if isinstance(body, bytes) else body.encode()  # edited outside ember
        if zlib.crc32(data) != crc:
            raise CorruptRecordError(
                f"journal record {seq} in {self.path} fails its checksum: the file was damaged"
            )
        return decode_events(data)

    def close(self) -> None:
        """Close the database. Appends still queued are failed, never silently dropped."""
        for _, _, future in self._pending:
            if future is not None and not future.done():
                future.set_exception(JournalError("the journal was closed before this append"))
        self._pending = []
        self._db.close()
