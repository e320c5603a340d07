"""The PostgreSQL journal: the SQLite journal's events, rows, checksums and fold, shared by
every worker of a cluster (psycopg 3).

Rows are the SQLite journal's (`ember.journal.rows`): a commit writes one row a run, that run's
events in it as one checksummed JSON array; a deciding or audited event gets its row with its
audit entry chained in. Reads go through a small pool of connections; appends through one
asynchronous connection a process (an event loop), where group commit happens:

Group commit: `append` queues its event and waits for the write lock; whoever gets the lock
takes everything queued (by any run of this process) and commits it in one transaction, so
while one commit is in flight the next one fills up. A run's append waits for at most two
commits; an append whose event someone else committed returns as soon as it gets the lock.

Fencing: a run claimed by a worker (`hold`) carries its lease epoch with every append; the
commit reads the run's epoch under a share lock (`SELECT ... FOR SHARE`: a claim, which updates
the row, waits for the commit or is seen by it) and refuses the run's events when the epoch
moved on: `FencedError` to the appenders, nothing of that run written, the other runs of the
commit written. So a worker that was frozen or cut off past its lease cannot write a step's
intent (or anything else) after another worker took the run over.

Decisions: an event decided under a control-plane version is committed only while that version
is current (the version is read under a share lock in the commit's transaction: a change waits
for it, or is seen by it), else `PolicyChangedError`, as in SQLite. Audit entries are numbered
and chained under a lock on `audit_head`, in commit order across writers.

Positions: a row's `seq` grows in commit order for one run (one writer holds a run at a time),
not across runs written by different processes at once: `read_after` is per run, as the
server's event stream uses it.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Sequence
from typing import Any

from ember.errors import CorruptRecordError, JournalError, RunNotFoundError
from ember.extras import require
from ember.journal.events import (
    START,
    CommitListener,
    Event,
    Recorded,
    RunStarted,
    RunStatus,
    RunSummary,
    decode_events,
    encode_event,
)
from ember.journal.pgschema import migrate, redacted
from ember.journal.pgwrite import FencedError, Writer, commit
from ember.journal.rows import Queued
from ember.journal.sqlite import status_of

__all__ = ["FencedError", "PostgresJournal", "is_postgres_url"]


def is_postgres_url(location: object) -> bool:
    """Whether a `--db` / `EMBER_DB` value names a PostgreSQL database."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


class PostgresJournal:
    """An append-only event journal in a PostgreSQL database, shared by processes."""

    def __init__(self, url: str, *, pool_size: int = 4) -> None:
        require("the PostgreSQL journal", "psycopg", "psycopg_pool")
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self.where = redacted(url)
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                migrate(conn, url)
            self._pool = ConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                kwargs={"autocommit": True},
                check=ConnectionPool.check_connection,
                open=True,
                name="ember-journal",
            )
        except psycopg.Error as exc:
            raise JournalError(f"cannot open the journal at {self.where}: {exc}") from None
        self._pending: list[Queued] = []
        self._writer: Writer | None = None
        self._keys: dict[str, int] = {}  # run id -> run key, for runs not done yet
        self._epochs: dict[str, int] = {}  # run id -> the lease epoch its appends carry
        self._listeners: list[CommitListener] = []
        self._kicks: set[asyncio.Task[None]] = set()
        # runs whose queued (`append_soon`) events a failed commit lost: their next append
        # says so (another run's appends are not failed for it)
        self._failed: dict[str, JournalError] = {}
        self._locked_on: asyncio.AbstractEventLoop | None = None
        self._write_lock = asyncio.Lock()

    # -- leases: which epoch a run's appends carry -------------------------------------------

    def hold(self, run_id: str, epoch: int) -> None:
        """From now on, `run_id`'s appends carry lease `epoch` (`ember.journal.leases`)."""
        self._epochs[run_id] = epoch

    def release(self, run_id: str) -> None:
        self._epochs.pop(run_id, None)

    # -- appends ------------------------------------------------------------------------------

    def watch(self, listener: CommitListener) -> None:
        """Call `listener` after each of this process's commits with its events and their
        positions (on the event loop that appended them: it must not block)."""
        self._listeners.append(listener)

    async def append(self, event: Event) -> None:
        """Append `event`; returns once it is durable (see the module docstring)."""
        self._raise_failure(event.run_id)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((event, encode_event(event), future))
        await self._drain(future)
        future.result()

    def append_soon(self, event: Event) -> None:
        """Queue `event`: durable with the next commit, which is never later than that of any
        event appended after it (a commit is started for it in the next turn of the loop)."""
        from ember.journal.audit import guard_of

        self._raise_failure(event.run_id)
        if guard_of(event) is not None:
            raise JournalError(
                f"{type(event).__name__} records a decision: `append` it, so that a "
                "PolicyChangedError reaches whoever decided"
            )
        self._pending.append((event, encode_event(event), None))
        if not self._kicks:
            task = asyncio.get_running_loop().create_task(self._drain(None))
            self._kicks.add(task)
            task.add_done_callback(self._kicks.discard)

    def _raise_failure(self, run_id: str) -> None:
        failure = self._failed.pop(run_id, None)
        if failure is not None:
            raise failure

    async def _drain(self, mine: asyncio.Future[None] | None) -> None:
        """Take the write lock; unless `mine` was committed meanwhile, commit all that is
        queued."""
        async with self._lock():
            if (mine is not None and mine.done()) or not self._pending:
                return
            try:
                writer = await self._current_writer()
            except JournalError as exc:
                self._fail_pending(exc)
                return
            batch, self._pending = self._pending, []
            written = await commit(writer, batch, self._keys, self._epochs, self.where)
            if written is None:  # the connection failed: the appenders were told
                writer.discard()
                self._writer = None
                error = JournalError(
                    f"cannot write to the journal at {self.where}: the connection failed"
                )
                self._failed |= {event.run_id: error for event, _, f in batch if f is None}
                return
        if self._listeners and written:
            for listener in self._listeners:
                listener(written)

    def _fail_pending(self, error: JournalError) -> None:
        batch, self._pending = self._pending, []
        for event, _, future in batch:
            if future is None:
                self._failed[event.run_id] = error
            elif not future.done():
                future.set_exception(error)

    def _lock(self) -> asyncio.Lock:
        """The write lock of the running event loop (a process may run several in turn)."""
        loop = asyncio.get_running_loop()
        if self._locked_on is not loop:
            self._locked_on, self._write_lock = loop, asyncio.Lock()
        return self._write_lock

    async def _current_writer(self) -> Writer:
        loop = asyncio.get_running_loop()
        writer = self._writer
        if writer is None or writer.loop is not loop or writer.conn.closed:
            if writer is not None:
                writer.discard()
            self._writer = None
            writer = self._writer = await Writer.open(self.url, loop, self.where)
        return writer

    # -- reads --------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, params).fetchall()
        except psycopg.Error as exc:
            raise JournalError(f"cannot read the journal at {self.where}: {exc}") from None

    def read_after(self, run_id: str, after: tuple[int, int] = START) -> list[Recorded]:
        """The events of run `run_id` after position `after`, with their positions;
        `RunNotFoundError` if it has none."""
        rows = self._query(
            "SELECT seq, body, crc FROM events WHERE run_key = "
            "(SELECT run_key FROM runs WHERE run_id = %s) AND seq >= %s ORDER BY seq",
            (run_id, after[0]),
        )
        if not rows and not self._query("SELECT 1 FROM events WHERE run_id = %s", (run_id,)):
            raise RunNotFoundError(run_id)
        return [
            Recorded(seq, index, event)
            for seq, body, crc in rows
            for index, event in enumerate(self._decode(seq, body, crc))
            if (seq, index) > after
        ]

    def read(self, run_id: str) -> list[Event]:
        """Every event of run `run_id`, in append order; `RunNotFoundError` if there are none."""
        rows = self._query(
            "SELECT seq, body, crc FROM events WHERE run_key = "
            "(SELECT run_key FROM runs WHERE run_id = %s) ORDER BY seq",
            (run_id,),
        )
        if not rows:
            raise RunNotFoundError(run_id)
        return [event for seq, body, crc in rows for event in self._decode(seq, body, crc)]

    def find_run(self, prefix: str) -> str:
        """The full id of the run whose id starts with `prefix`, or is `prefix`."""
        if self._query(
            "SELECT 1 FROM runs r WHERE run_id = %s AND EXISTS "
            "(SELECT 1 FROM events e WHERE e.run_key = r.run_key)",
            (prefix,),
        ):
            return prefix
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._query(
            "SELECT run_id FROM runs WHERE run_id LIKE %s AND EXISTS "
            "(SELECT 1 FROM events WHERE events.run_key = runs.run_key) LIMIT 2",
            (escaped,),
        )
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
        """The most recent runs, newest first; the filters as `Journal.runs` says."""
        summaries: list[RunSummary] = []
        cursor = before if before is not None else 2**63 - 1
        page = limit if status is None and principal is None else max(limit * 4, 64)
        while len(summaries) < limit:
            started = self._query(
                "SELECT seq, body, crc, run_key FROM events WHERE kind = 'run.started' "
                "AND seq < %s AND at >= %s ORDER BY seq DESC LIMIT %s",
                (cursor, since if since is not None else float("-inf"), page),
            )
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
        last = self._query(
            "SELECT seq, body, crc FROM events WHERE run_key = %s AND kind IN "
            "('run.started', 'run.resumed', 'run.waiting', 'run.done') "
            "ORDER BY seq DESC LIMIT 1",
            (run_key,),
        )[0]
        return status_of(self._decode(*last))

    def _decode(self, seq: int, body: bytes, crc: int) -> list[Event]:
        data = bytes(body)
        if zlib.crc32(data) != crc:
            raise CorruptRecordError(
                f"journal record {seq} in {self.where} fails its checksum: it was damaged"
            )
        return decode_events(data)

    def close(self) -> None:
        """Close the connections. Appends still queued are failed, never silently dropped."""
        for _, _, future in self._pending:
            if future is not None and not future.done():
                future.set_exception(JournalError("the journal was closed before this append"))
        self._pending = []
        for task in list(self._kicks):
            task.cancel()
        if self._writer is not None:
            self._writer.discard()
            self._writer = None
        self._pool.close()
