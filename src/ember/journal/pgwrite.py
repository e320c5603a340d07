"""One commit of the PostgreSQL journal: a batch of queued events, one transaction.

In order, in the commit's transaction: the run keys of runs new to this process (a row in
`runs` made for a run nobody enqueued); the lease epochs of the held runs, under a share lock
(fencing: a run whose epoch moved on is refused whole); for rows that decide or are audited, the
control-plane version under a share lock and the audit log's head under an update lock
(`ember.journal.rows` says what a row holds); the rows, in one INSERT; the runs' queue states
that the events change (done, waiting; a decision about a waiting run queues it again). Then
the appenders are told: done, `FencedError`, `PolicyChangedError`, or `JournalError`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ember.errors import JournalError, PolicyChangedError
from ember.journal.audit import audit_entry, chain, guard_of
from ember.journal.events import Recorded, RunDone, RunWaiting, StepResolved
from ember.journal.pgschema import ENDS_IDLE_TRANSACTIONS
from ember.journal.rows import Head, Queued, Row, by_run, decides, encoded, split

__all__ = ["FencedError", "Writer", "commit"]


class FencedError(JournalError):
    """A worker's lease on a run was taken over: its appends to that run are refused."""

    def __init__(self, run_id: str, epoch: int, current: int) -> None:
        self.run_id, self.epoch, self.current = run_id, epoch, current
        super().__init__(
            f"run {run_id} was taken over by another worker (lease epoch {current}; this "
            f"process holds epoch {epoch}): its appends are refused, nothing was written"
        )


_INSERT = (
    "INSERT INTO events(run_id, kind, at, body, crc, run_key, audit_seq, audit, chain) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::float8[], %s::bytea[], %s::int8[], "
    "%s::int8[], %s::int8[], %s::bytea[], %s::bytea[]) RETURNING seq"
)


_NEW_RUNS = "INSERT INTO runs(run_id) SELECT unnest(%s::text[]) ON CONFLICT (run_id) DO NOTHING"

# The queue states that events change: a run done, or waiting for a person; a decision about
# a waiting run puts it back in the queue.
_QUEUE_STATES: dict[type, str] = {RunDone: "done", RunWaiting: "waiting", StepResolved: "queued"}


@dataclass
class Writer:
    """The connection a process appends through, on one event loop."""

    conn: Any  # psycopg.AsyncConnection
    loop: asyncio.AbstractEventLoop

    @classmethod
    async def open(cls, url: str, loop: asyncio.AbstractEventLoop, where: str) -> Writer:
        import psycopg

        try:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
            # a process frozen mid-commit must not keep its locks on the runs' rows, or nobody
            # could take its runs over (and see `_transaction`)
            await conn.execute(ENDS_IDLE_TRANSACTIONS)
        except psycopg.Error as exc:
            raise JournalError(f"cannot write to the journal at {where}: {exc}") from None
        return cls(conn, loop)

    def discard(self) -> None:
        """Close the connection without a round trip (its loop may be gone)."""
        self.conn.pgconn.finish()


async def commit(
    writer: Writer,
    batch: list[Queued],
    keys: dict[str, int],
    epochs: dict[str, int],
    where: str,
) -> list[Recorded] | None:
    """Commit `batch`; tell its appenders. Returns what was written with its positions, or
    None if the connection failed (then every appender got a `JournalError`)."""
    import psycopg

    runs = by_run(batch)
    refused: dict[int, BaseException] = {}  # id(event) -> its error
    try:
        if _plain(runs, keys, epochs):  # one INSERT: its own transaction, one round trip
            rows = [row for run, queued in runs.items() for row in split(run, queued, keys[run])]
            values = _unaudited(rows)
            seqs = await _insert(writer.conn, values)
        else:
            values, seqs = await _transaction(
                writer.conn, batch, runs=runs, keys=keys, epochs=epochs, refused=refused
            )
    except psycopg.Error as exc:
        error = JournalError(f"cannot write to the journal at {where}: {exc}")
        keys.clear()
        for _, _, future in batch:
            if future is not None and not future.done():
                future.set_exception(error)
        return None
    for event, _, future in batch:
        if future is None or future.done():
            continue
        failure = refused.get(id(event))
        if failure is None:
            future.set_result(None)
        else:
            future.set_exception(failure)
    for event, _, _ in batch:
        if type(event) is RunDone:
            keys.pop(event.run_id, None)
    written = [[q for q in events if id(q[0]) not in refused] for _, events in values]
    return [
        Recorded(seq, index, event)
        for seq, events in zip(sorted(seqs), [w for w in written if w], strict=True)
        for index, (event, _, _) in enumerate(events)
    ]


def _plain(runs: dict[str, list[Queued]], keys: dict[str, int], epochs: dict[str, int]) -> bool:
    """Whether a commit is rows only: runs with keys already, held by no lease, no event that
    decides, is audited or changes a run's queue state (a chain step, mostly)."""
    return all(run in keys and run not in epochs for run in runs) and not any(
        decides(event) or type(event) in _QUEUE_STATES
        for queued in runs.values()
        for event, _, _ in queued
    )


async def _transaction(
    conn: Any,
    batch: list[Queued],
    *,
    runs: dict[str, list[Queued]],
    keys: dict[str, int],
    epochs: dict[str, int],
    refused: dict[int, BaseException],
) -> tuple[list[tuple[tuple[object, ...], list[Queued]]], list[int]]:
    """The commit as one transaction in two round trips: BEGIN and the reads (new runs' keys,
    the held runs' epochs under a share lock, the control version and the audit head), then
    the writes and COMMIT. The audit head stays locked for one round trip.

    Each round trip is one message (`_together`), so a process frozen anywhere in a commit
    (SIGSTOP, a paused VM) cannot keep the runs' row locks, which their takeover needs: a
    message the server holds whole it runs to its end without the client, and while it waits
    for one, or for the rest of one, the session is idle in a transaction, which the server
    ends after `idle_in_transaction_session_timeout`. (Pipeline mode sent each statement on
    its own, and a session stopped between two of them is "active" with no timeout: it held
    a run's lock until the process woke.)"""
    new = [run for run in runs if run not in keys]
    held = [run for run in runs if run in epochs]
    deciding = any(decides(event) for queued in runs.values() for event, _, _ in queued)
    reads: list[tuple[str, tuple[object, ...]]] = [("BEGIN", ())]
    if new:
        reads.append((_NEW_RUNS, (new,)))
    first_read = len(reads)
    wanted = [
        (new, "SELECT run_id, run_key FROM runs WHERE run_id = ANY(%s)", (new,)),
        (held, "SELECT run_id, epoch FROM runs WHERE run_id = ANY(%s) FOR SHARE", (held,)),
        (deciding, "SELECT version FROM control WHERE id = 0 FOR SHARE", ()),
        (deciding, "SELECT seq, chain FROM audit_head WHERE id = 0 FOR UPDATE", ()),
    ]
    reads += [(sql, params) for asked, sql, params in wanted if asked]
    results = iter((await _together(conn, reads))[first_read:])
    found, fence, version, head = [next(results) if asked else [] for asked, _, _ in wanted]
    keys.update(dict(found))
    _fenced(runs, epochs, dict(fence), refused)
    rows = [
        row
        for run, queued in runs.items()
        if id(queued[0][0]) not in refused
        for row in split(run, queued, keys[run])
    ]
    writes: list[tuple[str, tuple[object, ...]]] = []
    if deciding:
        seq, digest = head[0]
        chained = (int(seq), bytes(digest) if digest is not None else None)
        values, chained = _chained(rows, refused, int(version[0][0]), chained)
        writes.append(("UPDATE audit_head SET seq = %s, chain = %s WHERE id = 0", chained))
    else:
        values = _unaudited(rows)
    writes += _states(batch, keys, refused)
    if values:
        writes.append((_INSERT, tuple(_columns(values))))
    written = await _together(conn, [*writes, ("COMMIT", ())])
    seqs = [seq for (seq,) in written[-2]] if values else []  # the INSERT's, before COMMIT
    return values, seqs


async def _together(
    conn: Any, statements: list[tuple[str, tuple[object, ...]]]
) -> list[list[tuple[Any, ...]]]:
    """Run `statements` as one message (a simple query, its values bound here) and return each
    statement's rows ([] for one that returns none)."""
    import psycopg

    cursor = psycopg.AsyncClientCursor(conn)
    await cursor.execute(
        "; ".join(sql for sql, _ in statements), [v for _, params in statements for v in params]
    )
    results: list[list[tuple[Any, ...]]] = []
    while True:
        results.append(list(await cursor.fetchall()) if cursor.description else [])
        if not cursor.nextset():
            return results


def _fenced(
    runs: dict[str, list[Queued]],
    epochs: dict[str, int],
    current: dict[str, int],
    refused: dict[int, BaseException],
) -> None:
    """Refuse every event of a held run whose epoch moved on (another worker claimed it)."""
    for run_id, epoch in current.items():
        if epoch != epochs[run_id]:
            error = FencedError(run_id, epochs[run_id], epoch)
            for event, _, _ in runs[run_id]:
                refused[id(event)] = error


def _unaudited(rows: list[Row]) -> list[tuple[tuple[object, ...], list[Queued]]]:
    return [((*encoded(r.run_id, r.events, r.run_key), None, None, None), r.events) for r in rows]


def _chained(
    rows: list[Row], refused: dict[int, BaseException], version: int, head: Head
) -> tuple[list[tuple[tuple[object, ...], list[Queued]]], Head]:
    """Each row's column values with the events it holds: audit entries chained after
    `head`, and events decided under a version other than `version` left out (refused)."""
    values: list[tuple[tuple[object, ...], list[Queued]]] = []
    for row in rows:
        decider, events = row.decider, row.events
        guard = guard_of(decider) if decider is not None else None
        if guard is not None and guard != version:
            refused[id(decider)] = PolicyChangedError(guard)
            events = [queued for queued in events if queued[0] is not decider]
            decider = None
        if not events:
            continue
        base = encoded(row.run_id, events, row.run_key)
        entry = audit_entry(decider) if decider is not None else None
        if entry is None:
            values.append(((*base, None, None, None), events))
            continue
        head = (head[0] + 1, chain(head[1], entry))
        values.append(((*base, head[0], entry, head[1]), events))
    return values, head


def _columns(values: list[tuple[tuple[object, ...], list[Queued]]]) -> list[list[object]]:
    return [list(column) for column in zip(*[row for row, _ in values], strict=True)]


async def _insert(conn: Any, values: list[tuple[tuple[object, ...], list[Queued]]]) -> list[int]:
    if not values:
        return []
    cursor = await conn.execute(_INSERT, _columns(values))
    return [seq for (seq,) in await cursor.fetchall()]


def _states(
    batch: list[Queued], keys: dict[str, int], refused: dict[int, BaseException]
) -> list[tuple[str, tuple[object, ...]]]:
    """The updates of the queue states the committed events change: a run done, or waiting for
    a person; a decision about a waiting run puts it back in the queue for a worker to resume."""
    changes: dict[str, list[int]] = {}
    for event, _, _ in batch:
        if id(event) in refused:
            continue
        state = _QUEUE_STATES.get(type(event))
        if state is not None:
            changes.setdefault(state, []).append(keys[event.run_id])
    return [
        (
            "UPDATE runs SET state = %s, lease_until = NULL, owner = '' WHERE run_key = ANY(%s)"
            + (" AND state = 'waiting'" if state == "queued" else ""),
            (state, run_keys),
        )
        for state, run_keys in changes.items()
    ]
