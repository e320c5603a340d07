"""How a commit's events become rows of the journal's `events` table.

A commit writes one row a run: that run's events in it, as one checksummed JSON array (a chain
step's outcome with the next step's intent; a run's start with its plan). An event that decides
something (it carries the control-plane version it was decided under: a guard) or is audited
gets a row of its own with the events before it, and its audit entry goes in that row
(`audit_seq`, `audit`, `chain`: numbered and hash-chained after the log's head), so auditing a
call adds no row to the step.

The guard and the chain are checked by the statement that writes the row: `insert_one` writes
a lone row only if the control plane's version is still the guard and the log's head is still
the one the entry was chained to (one statement, its own transaction: another process's write
cannot come between the check and the row); otherwise, and for
several rows, `insert_checked` reads both inside the write transaction, leaves out the events
decided under an older version (returned: their appends fail with `PolicyChangedError`) and
chains the rest. Either way a decision is committed only under the version it was made under.
"""

from __future__ import annotations

import asyncio
import sqlite3
import zlib
from typing import NamedTuple

from ember.journal.audit import audit_entry, chain, guard_of
from ember.journal.events import Event, RunDone, RunResumed, RunStarted, RunWaiting

__all__ = [
    "Head",
    "Queued",
    "Row",
    "by_run",
    "decides",
    "encoded",
    "insert_checked",
    "insert_one",
    "read_head",
    "split",
]

# A queued event: the event, its encoded body and, for `append`, what is waiting on it.
Queued = tuple[Event, bytes, "asyncio.Future[None] | None"]
Head = tuple[int, "bytes | None"]  # the audit log's last entry: its number and hash

# A row's `kind` when it holds several events: `run.started` if it holds it (runs are listed by
# it), else the last of these it holds (a run's status is found by them), else its first event's.
_STATE_CHANGES: dict[type, str] = {
    RunResumed: "run.resumed",
    RunWaiting: "run.waiting",
    RunDone: "run.done",
}
_DECIDING = frozenset(
    {"run.started", "step.intent", "step.denied", "step.awaiting_approval", "step.resolved"}
)
_INSERT = (
    "INSERT INTO events(run_id, kind, at, body, crc, run_key, audit_seq, audit, chain) "
    "VALUES (?,?,?,?,?,?,?,?,?)"
)
# A lone row, checked by the statement that writes it: its CRC (NOT NULL) is given only while
# the guard and the head hold, so otherwise the row is refused and nothing is written. (An
# INSERT ... SELECT ... WHERE reading `events` would copy through a temporary table: ~5 us.)
_CHECKED = (
    "INSERT INTO events(run_id, kind, at, body, crc, run_key, audit_seq, audit, chain) "
    "VALUES (?, ?, ?, ?, CASE WHEN (? IS NULL OR (SELECT version FROM control WHERE id = 0) = ?)"
    " AND (SELECT chain FROM events WHERE audit_seq IS NOT NULL ORDER BY seq DESC LIMIT 1) IS ?"
    " THEN ? END, ?, ?, ?, ?)"
)
_REFUSED = "NOT NULL constraint failed: events.crc"


class Row(NamedTuple):
    """One row to write: a run's events, and the one among them that decides or is audited."""

    run_id: str
    run_key: int
    events: list[Queued]
    decider: Event | None


def decides(event: Event) -> bool:
    """Whether `event` carries a guard or an audit entry (most events do neither)."""
    if type(event).__struct_config__.tag not in _DECIDING:
        return False
    if type(event) is RunStarted:
        return bool(event.principal)
    return guard_of(event) is not None


def split(run_id: str, events: list[Queued], run_key: int) -> list[Row]:
    """The rows of one run's events in one commit: one, unless several of them decide (parallel
    steps deciding in the same loop turn): at most one deciding event a row."""
    rows, start, decider = [], 0, None
    for index, (event, _, _) in enumerate(events):
        if not decides(event):
            continue
        if decider is not None:  # this row has one already: close it
            rows.append(Row(run_id, run_key, events[start:index], decider))
            start = index
        decider = event
    rows.append(Row(run_id, run_key, events[start:], decider))
    return rows


def by_run(batch: list[Queued]) -> dict[str, list[Queued]]:
    runs: dict[str, list[Queued]] = {}
    for queued in batch:
        runs.setdefault(queued[0].run_id, []).append(queued)
    return runs


def encoded(run_id: str, events: list[Queued], run_key: int) -> tuple[object, ...]:
    """The `events` row of one run's events in one commit (`_STATE_CHANGES`: its kind)."""
    first = events[0][0]
    kind = type(first).__struct_config__.tag
    if len(events) == 1:
        body = events[0][1]
    else:
        body = b"[" + b",".join([body for _, body, _ in events]) + b"]"
        if kind != "run.started":
            for event, _, _ in reversed(events):
                change = _STATE_CHANGES.get(type(event))
                if change is not None:
                    kind = change
                    break
    return (run_id, kind, first.at, body, zlib.crc32(body), run_key)


def read_head(db: sqlite3.Connection) -> Head:
    row = db.execute(
        "SELECT audit_seq, chain FROM events WHERE audit_seq IS NOT NULL ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    return (int(row[0]), bytes(row[1])) if row else (0, None)


def _audited(row: Row, head: Head) -> tuple[tuple[object, ...], Head]:
    """The row's values with its audit entry chained after `head`, and the new head."""
    values = encoded(row.run_id, row.events, row.run_key)
    entry = audit_entry(row.decider) if row.decider is not None else None
    if entry is None:
        return (*values, None, None, None), head
    seq, digest = head[0] + 1, chain(head[1], entry)
    return (*values, seq, entry, digest), (seq, digest)


def insert_one(db: sqlite3.Connection, row: Row, head: Head) -> Head | None:
    """Write one row in one statement if its guard and `head` still hold; the new head, or
    None if either moved (nothing was written: use `insert_checked`)."""
    values, after = _audited(row, head)
    guard = guard_of(row.decider) if row.decider is not None else None
    run_id, kind, at, body, crc, run_key, seq, entry, digest = values
    try:
        db.execute(
            _CHECKED,
            (run_id, kind, at, body, guard, guard, head[1], crc, run_key, seq, entry, digest),
        )
    except sqlite3.IntegrityError as exc:
        if _REFUSED not in str(exc):
            raise
        return None
    return after


def insert_checked(db: sqlite3.Connection, rows: list[Row]) -> tuple[list[Queued], Head]:
    """Write `rows` in one transaction, reading the version and the head inside it; the events
    decided under another version are left out. Returns those, and the new head."""
    if not db.in_transaction:
        db.execute("BEGIN IMMEDIATE")
    version = db.execute("SELECT version FROM control WHERE id = 0").fetchone()[0]
    head, stale, values = read_head(db), [], []
    for row in rows:
        decider = row.decider
        guard = guard_of(decider) if decider is not None else None
        if guard is not None and guard != version:
            stale += [queued for queued in row.events if queued[0] is decider]
            rest = [queued for queued in row.events if queued[0] is not decider]
            if rest:
                values.append((*encoded(row.run_id, rest, row.run_key), None, None, None))
            continue
        audited, head = _audited(row, head)
        values.append(audited)
    db.executemany(_INSERT, values)
    return stale, head
