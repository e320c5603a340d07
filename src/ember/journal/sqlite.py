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

Decisions and the audit log: an event that records a policy decision (`ember.journal.audit`)
goes in through the `ruled_events` view, whose trigger, in the same statement, refuses it if the
control plane's version is no longer the one it was decided under (the append raises
`PolicyChangedError`; the other events of the commit are written) and appends its audit entry to
the hash chain. The check and the write are one statement of one transaction, so a revocation
committed by any process is either before the call's intent (which is then refused) or after it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from ember.errors import CorruptRecordError, JournalError, PolicyChangedError, RunNotFoundError
from ember.journal.audit import audit_entry, chain, guard_of
from ember.journal.events import (
    Event,
    RunDone,
    RunResumed,
    RunStarted,
    RunStatus,
    RunSummary,
    RunWaiting,
    decode_events,
    encode_event,
)

__all__ = ["Durability", "SQLiteJournal", "open_database"]

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
    # '', kind 'control'). Decision-bearing events are written through `ruled_events` (see the
    # module docstring), which numbers and chains the entry in the same statement.
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
    CREATE VIEW ruled_events AS
        SELECT run_id, kind, at, body, crc, run_key, NULL AS guard, audit FROM events WHERE 0;
    CREATE TRIGGER ruled_insert INSTEAD OF INSERT ON ruled_events BEGIN
        SELECT RAISE(ABORT, 'ember: the control plane changed')
            WHERE NEW.guard IS NOT NULL
            AND NEW.guard IS NOT (SELECT version FROM control WHERE id = 0);
        INSERT INTO events(run_id, kind, at, body, crc, run_key, audit_seq, audit, chain)
            SELECT NEW.run_id, NEW.kind, NEW.at, NEW.body, NEW.crc, NEW.run_key,
                coalesce(head.audit_seq, 0) + 1, NEW.audit, ember_chain(head.chain, NEW.audit)
            FROM (SELECT 1) LEFT JOIN (
                SELECT audit_seq, chain FROM events WHERE audit_seq IS NOT NULL
                ORDER BY seq DESC LIMIT 1
            ) AS head ON 1
            WHERE NEW.audit IS NOT NULL;
        INSERT INTO events(run_id, kind, at, body, crc, run_key)
            SELECT NEW.run_id, NEW.kind, NEW.at, NEW.body, NEW.crc, NEW.run_key
            WHERE NEW.audit IS NULL;
    END;
    """,
)

_STALE = "ember: the control plane changed"  # the trigger's message when a guard fails


_INSERT = "INSERT INTO events(run_id, kind, at, body, crc, run_key) VALUES (?,?,?,?,?,?)"
_RULED = (
    "INSERT INTO ruled_events(run_id, kind, at, body, crc, run_key, guard, audit) "
    "VALUES (?,?,?,?,?,?,?,?)"
)
# Commits of up to this many rows (runs) are one multi-row INSERT in autocommit mode, without
# the BEGIN and COMMIT statements around `executemany` (~4 us less a commit).
_ONE_STATEMENT = 8
_INSERTS = {n: _INSERT + ",(?,?,?,?,?,?)" * (n - 1) for n in range(1, _ONE_STATEMENT + 1)}
_RULED_INSERTS = {n: _RULED + ",(?,?,?,?,?,?,?,?)" * (n - 1) for n in range(1, _ONE_STATEMENT + 1)}
# A row's `kind` when it holds several events: `run.started` if it holds it (runs are listed by
# it), else the last of these it holds (a run's status is found by them), else its first event's.
_STATE_CHANGES: dict[type, str] = {
    RunResumed: "run.resumed",
    RunWaiting: "run.waiting",
    RunDone: "run.done",
}


# A queued event: the event, its encoded body and, for `append`, what is waiting on it.
_Queued = tuple[Event, bytes, "asyncio.Future[None] | None"]
# Events whose type may carry an audit entry or a guard (`ember.journal.audit`).
_RULED_TYPES = frozenset(
    {"run.started", "step.intent", "step.denied", "step.awaiting_approval", "step.resolved"}
)


def open_database(path: Path, durability: Durability = "normal") -> sqlite3.Connection:
    """A connection to the journal database at `path` (WAL, migrated to the current schema,
    with the `ember_chain` SQL function the audit trigger calls). `JournalError` if it cannot."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout=10000")  # first: the next one may wait too
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
        db.create_function("ember_chain", 2, chain, deterministic=True)
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
        self._pending: list[_Queued] = []
        self._failure: JournalError | None = None
        # The run whose events alone filled the last commit and fill the queue (else None).
        self._solo: str | None = None
        self._pending_run: str | None = None
        self._keys: dict[str, int] = {}  # run id -> run key, for runs not done yet
        # The event loop on which a flush is scheduled (a chain whose steps run back to back
        # queues each outcome before a flush has run: one scheduled flush serves them all).
        self._flush_on: asyncio.AbstractEventLoop | None = None

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
            batch = self._commit_ruled(batch, self._pending_run)
        except sqlite3.Error as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._keys.clear()  # keys given out in the rolled-back transaction are void
            error = JournalError(f"cannot write to the journal at {self.path}: {exc}")
            waited = [future for _, _, future in batch if future is not None]
            if len(waited) < len(batch):
                self._failure = error  # an append_soon event was lost: say so at the next append
            for future in waited:
                if not future.done():
                    future.set_exception(error)
            return
        for _, _, maybe in batch:
            if maybe is not None and not maybe.done():
                maybe.set_result(None)

    def _commit_ruled(self, batch: list[_Queued], run_id: str | None) -> list[_Queued]:
        """Commit `batch`; if the control plane changed since some of its decisions were made,
        commit the rest and fail those decisions' appends. Returns what was committed."""
        try:
            self._commit(batch, run_id)
        except sqlite3.IntegrityError as exc:
            if _STALE not in str(exc):
                raise
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._keys.clear()  # keys given out in the rolled-back transaction are void
            stale = [queued for queued in batch if guard_of(queued[0]) is not None]
            batch = [queued for queued in batch if guard_of(queued[0]) is None]
            if batch:
                self._commit(batch, None)
            for event, _, future in stale:
                if future is not None and not future.done():
                    future.set_exception(PolicyChangedError(guard_of(event) or 0))
        return batch

    def _commit(self, batch: list[_Queued], run_id: str | None) -> None:
        """One transaction: a row for each run in `batch` with that run's events (`run_id`:
        the one run whose events fill `batch`, else None)."""
        keys = self._keys
        if run_id is not None:  # one run's events (a chain step: the common case, kept short)
            key = keys.get(run_id)
            if key is None:
                self._db.execute("BEGIN IMMEDIATE")
                key = keys[run_id] = self._run_key(run_id)
            rows = _rows(run_id, batch, key)
            if len(rows) == 1 and len(rows[0]) != _RULED_ROW:
                self._db.execute(_INSERT, rows[0])
            else:
                self._insert(rows)
        else:
            runs = _by_run(batch)
            new_runs = [run for run in runs if run not in keys]
            if new_runs or len(runs) > _ONE_STATEMENT:
                self._db.execute("BEGIN IMMEDIATE")
            for run in new_runs:
                keys[run] = self._run_key(run)
            self._insert(
                [row for run, queued in runs.items() for row in _rows(run, queued, keys[run])]
            )
        if self._db.in_transaction:
            self._db.execute("COMMIT")
        for event, _, _ in batch:
            if type(event) is RunDone:
                keys.pop(event.run_id, None)

    def _insert(self, rows: list[tuple[object, ...]]) -> None:
        """Insert `rows`: through `ruled_events` if one of them decides or audits something."""
        ruled = any(len(row) == _RULED_ROW for row in rows)
        if ruled:
            rows = [row if len(row) == _RULED_ROW else (*row, None, None) for row in rows]
        if len(rows) > _ONE_STATEMENT and not self._db.in_transaction:
            self._db.execute("BEGIN IMMEDIATE")
        if len(rows) <= _ONE_STATEMENT:  # one statement: its own transaction, or the above
            inserts = _RULED_INSERTS if ruled else _INSERTS
            self._db.execute(inserts[len(rows)], [value for row in rows for value in row])
        else:
            self._db.executemany(_RULED if ruled else _INSERT, rows)

    def _run_key(self, run_id: str) -> int:
        """The key of run `run_id`, given now if it has none (inside the write transaction)."""
        row = self._db.execute("SELECT run_key FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is not None:
            return int(row[0])
        cursor = self._db.execute("INSERT INTO runs(run_id) VALUES (?)", (run_id,))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

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
        """The full id of the run whose id starts with `prefix` (ids are long to type)."""
        rows = self._db.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' LIMIT 2",
            (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        ).fetchall()
        if len(rows) != 1:
            if rows:
                raise JournalError(f"run id prefix {prefix!r} is ambiguous: give more characters")
            raise RunNotFoundError(prefix)
        return str(rows[0][0])

    def runs(self, limit: int = 20) -> list[RunSummary]:
        """The most recent runs, newest first."""
        started = self._db.execute(
            "SELECT seq, body, crc, run_key FROM events WHERE kind='run.started' "
            "ORDER BY seq DESC LIMIT ?",
            (limit,),
        ).fetchall()
        summaries = []
        for seq, body, crc, run_key in started:
            event = self._decode(seq, body, crc)[0]
            assert isinstance(event, RunStarted)
            last = self._db.execute(  # the latest row holding a change of the run's state
                "SELECT seq, body, crc FROM events WHERE run_key=? AND kind IN "
                "('run.started', 'run.resumed', 'run.waiting', 'run.done') "
                "ORDER BY seq DESC LIMIT 1",
                (run_key,),
            ).fetchone()
            status = RunStatus.RUNNING
            for latest in reversed(self._decode(*last)):
                if isinstance(latest, RunDone):
                    status = latest.status
                    break
                if isinstance(latest, RunWaiting):
                    status = RunStatus.WAITING
                    break
                if isinstance(latest, RunResumed):
                    break
            summaries.append(
                RunSummary(event.run_id, event.task, event.at, status, event.principal)
            )
        return summaries

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


def _by_run(batch: list[_Queued]) -> dict[str, list[_Queued]]:
    runs: dict[str, list[_Queued]] = {}
    for queued in batch:
        runs.setdefault(queued[0].run_id, []).append(queued)
    return runs


def _rows(run_id: str, events: list[_Queued], run_key: int) -> list[tuple[object, ...]]:
    """The rows of one run's events in one commit: one row, unless several of them decide or
    carry an audit entry (parallel steps deciding in the same loop turn): one such event a row.
    A row that decides or audits has two more values (guard, audit entry)."""
    rows: list[tuple[object, ...]] = []
    start, ruled = 0, False
    audit: bytes | None = None
    guard: int | None = None
    for index, (event, _, _) in enumerate(events):
        if not _decides(event):
            continue
        if ruled:  # this row has one already: close it
            rows.append((*_row(run_id, events[start:index], run_key), guard, audit))
            start = index
        ruled, audit, guard = True, audit_entry(event), guard_of(event)
    last = _row(run_id, events[start:], run_key)
    rows.append((*last, guard, audit) if ruled else last)
    return rows


def _decides(event: Event) -> bool:
    """Whether `event` has an audit entry or a guard (a cheap test first: most events have
    neither)."""
    if type(event).__struct_config__.tag not in _RULED_TYPES:
        return False
    if type(event) is RunStarted:
        return bool(event.principal)
    return guard_of(event) is not None


_RULED_ROW = 8  # values in a row that goes through `ruled_events`


def _row(run_id: str, events: list[_Queued], run_key: int) -> tuple[object, ...]:
    """The `events` row of one run's events in one commit (`_STATE_CHANGES`: its kind)."""
    first = events[0][0]
    kind = type(first).__struct_config__.tag
    if len(events) == 1:
        body = events[0][1]
    else:
        body = b"[" + b",".join([encoded for _, encoded, _ in events]) + b"]"
        if kind != "run.started":
            for event, _, _ in reversed(events):
                change = _STATE_CHANGES.get(type(event))
                if change is not None:
                    kind = change
                    break
    return (run_id, kind, first.at, body, zlib.crc32(body), run_key)
