"""The work queue and leases of the PostgreSQL journal: which worker holds which run, until when.

A run is `queued` (enqueued by `ember serve`, or put back by a decision about a run that was
waiting), `running` (held by the worker named in `owner` until `lease_until`), `waiting` (for a
person) or `done`. A worker claims queued runs and runs whose lease expired (its holder was
killed, frozen or cut off) with `SELECT ... FOR UPDATE SKIP LOCKED`, so workers claiming at once
never wait for each other and never claim the same run; every claim bumps the run's `epoch`,
which the journal's appends carry and check (`ember.journal.postgres`: fencing). The holder
renews its leases well before they end; a renewal that finds the epoch moved on tells it the run
was taken over. Queueing a run NOTIFYs `ember_queue`, so listening workers claim it at once
rather than at their next poll.

Times are epoch seconds from the database's clock (one clock for every worker), or from an
injected `clock` (tests of expiry use a fake one). A run started outside the queue (`ember run`
on this journal) has no lease (`lease_until` NULL) and is never claimed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec

from ember.errors import JournalError

__all__ = ["CHANNEL", "Claim", "Leases"]

CHANNEL = "ember_queue"  # NOTIFY'd with the run id when a run is queued

_NOW = "COALESCE(%(now)s::float8, extract(epoch FROM clock_timestamp()))"
_CLAIM = f"""
UPDATE runs SET state = 'running', owner = %(owner)s, epoch = epoch + 1,
    lease_until = {_NOW} + %(lease)s
WHERE run_key IN (
    SELECT run_key FROM runs
    WHERE state = 'queued' OR (state = 'running' AND lease_until < {_NOW})
    ORDER BY run_key LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING run_id, epoch, task, principal
"""
_RENEW = f"""
UPDATE runs SET lease_until = {_NOW} + %(lease)s
FROM unnest(%(runs)s::text[], %(epochs)s::int8[]) AS held(run_id, epoch)
WHERE runs.run_id = held.run_id AND runs.epoch = held.epoch AND runs.state = 'running'
RETURNING runs.run_id
"""


class Claim(msgspec.Struct, frozen=True):
    """A run a worker now holds: its id, the lease epoch its appends carry, and what to plan
    if it has not started (`task`, on behalf of `principal`)."""

    run_id: str
    epoch: int
    task: str
    principal: str


class Leases:
    """The queue and leases of the journal at `url`, for the worker `owner` (its own
    connection, made again if the server drops it)."""

    def __init__(
        self,
        url: str,
        owner: str,
        *,
        lease_s: float = 10.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        from ember.journal.pgschema import redacted

        self.url, self.where = url, redacted(url)
        self.owner = owner
        self.lease_s = lease_s
        self.clock = clock
        self._conn: Any = None

    async def _execute(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Run one statement (its own transaction); once more on a fresh connection if the
        connection broke (a restarted server, a terminated backend)."""
        import psycopg

        for attempt in (1, 2):
            try:
                if self._conn is None or self._conn.closed or self._conn.broken:
                    self._conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
                cursor = await self._conn.execute(sql, params)
                return list(await cursor.fetchall()) if cursor.description else []
            except psycopg.OperationalError as exc:
                if attempt == 2 or (self._conn is not None and not self._conn.broken):
                    raise JournalError(f"cannot reach the journal at {self.where}: {exc}") from None
        raise AssertionError("unreachable")

    def _now(self) -> float | None:
        return self.clock() if self.clock is not None else None

    async def enqueue(self, run_id: str, task: str, principal: str = "") -> None:
        """Put a new run in the queue for a worker to plan and run, and wake the workers that
        listen (`listen`)."""
        await self._execute(
            "WITH queued AS (INSERT INTO runs(run_id, state, task, principal, queued_at) "
            f"VALUES (%(run)s, 'queued', %(task)s, %(principal)s, {_NOW}) RETURNING run_id) "
            f"SELECT pg_notify('{CHANNEL}', run_id) FROM queued",
            {"run": run_id, "task": task, "principal": principal, "now": self._now()},
        )

    async def listen(self, heard: Callable[[], None]) -> None:
        """Call `heard` whenever a run is queued (LISTEN/NOTIFY), until cancelled; on its own
        connection, made again (after a pause) if it breaks. A notification can be missed
        while that connection is down: claims also poll."""
        import psycopg

        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    heard()  # whatever was queued while nobody listened
                    async for _ in conn.notifies():
                        heard()
            except psycopg.OperationalError:
                await asyncio.sleep(1.0)

    async def claim(self, limit: int = 1) -> list[Claim]:
        """Up to `limit` runs that are queued or whose lease expired, now held by this worker
        for `lease_s`, each under a new epoch."""
        rows = await self._execute(
            _CLAIM,
            {"owner": self.owner, "lease": self.lease_s, "limit": limit, "now": self._now()},
        )
        return [Claim(*row) for row in rows]

    async def renew(self, held: dict[str, int]) -> list[str]:
        """Extend the leases of `held` (run id -> epoch); returns the runs among them that
        were taken over (or finished), whose leases this worker no longer holds."""
        if not held:
            return []
        rows = await self._execute(
            _RENEW,
            {
                "runs": list(held),
                "epochs": list(held.values()),
                "lease": self.lease_s,
                "now": self._now(),
            },
        )
        kept = {run_id for (run_id,) in rows}
        return [run_id for run_id in held if run_id not in kept]

    async def expire(self, run_id: str, epoch: int) -> None:
        """Give up a held run at once (this worker stops, or lost its connection mid-run): the
        next claim by any worker takes it over."""
        await self._execute(
            "UPDATE runs SET lease_until = 0, owner = '' "
            "WHERE run_id = %(run)s AND epoch = %(epoch)s AND state = 'running'",
            {"run": run_id, "epoch": epoch},
        )

    async def state(self, run_id: str) -> tuple[str, int, str] | None:
        """The run's queue state, epoch and owner (None if the journal has no such run)."""
        rows = await self._execute(
            "SELECT state, epoch, owner FROM runs WHERE run_id = %(run)s", {"run": run_id}
        )
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
