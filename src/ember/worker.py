"""`ember worker`: take runs from the shared PostgreSQL journal's queue and run them, holding a
lease on each; take over the runs of workers that died, froze or were cut off.

Every `poll_s`, at once when a run is queued (LISTEN/NOTIFY) and when a run of its own ends, a
worker claims as many runs as it has free slots (`ember.journal.leases`: queued runs, and runs
whose lease expired), and runs each: a run with no event yet is planned and executed
(`Runtime.run`), any other is resumed (`Runtime.resume`) under the exactly-once rules:
finished steps are reused, an interrupted idempotent call is made again with the same
idempotency key, any other is held in doubt.
Its appends carry the lease epoch (`PostgresJournal.hold`), so once another worker has
claimed the run, none of this worker's writes to it is committed (`FencedError`).

Leases are renewed every third of `lease_s`; a renewal that finds a run taken over cancels it
here (its last writes are refused by the journal). A run whose journal connection failed is
left to its lease, which lapses for the next claim, by any worker, to resume it.

Worst-case delays: a run in the queue starts at once (a notification), within `poll_s` if the
notification was missed (the listening connection was down); the runs of a worker that died
are resumed within `lease_s + poll_s` of its last renewal, and a durable wait (`sleep`,
`wait_until`) that comes due while its worker is gone, within the same bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import TypeVar

from ember.errors import JournalError, RunNotFoundError
from ember.executor import RunResult, Runtime
from ember.journal.leases import Claim, Leases
from ember.journal.postgres import FencedError, PostgresJournal

__all__ = ["Worker"]

_E = TypeVar("_E", bound=BaseException)


class Worker:
    """Runs claimed runs on `runtime`, whose journal is `journal`, `slots` at a time."""

    def __init__(
        self,
        runtime: Runtime,
        journal: PostgresJournal,
        leases: Leases,
        *,
        slots: int = 16,
        poll_s: float = 0.5,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.journal = journal
        self.leases = leases
        self.slots = slots
        self.poll_s = poll_s
        self.say = say or _say
        self.finished: list[RunResult] = []
        self._held: dict[str, int] = {}  # run id -> epoch
        self.left: dict[str, int] = {}  # the runs held when `serve` stopped
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._wake = asyncio.Event()

    async def serve(self, stop: asyncio.Event | None = None, *, once: bool = False) -> None:
        """Claim and run until `stop` is set (or, `once`, until the queue is empty and every
        claimed run has ended); runs still going are then given up for another worker."""
        stop = stop or asyncio.Event()
        async with asyncio.TaskGroup() as group:
            renewing = group.create_task(self._renew_forever())
            listening = group.create_task(self.leases.listen(self._wake.set))
            try:
                while not stop.is_set():
                    claimed = await self._claim(group)
                    if once and not claimed and not self._tasks:
                        break
                    await self._pause()
            finally:
                renewing.cancel()
                listening.cancel()
                self.left = dict(self._held)
                for task in self._tasks.values():
                    task.cancel()
                self.runtime.leave_interrupted()

    async def give_up(self) -> None:
        """Let another worker take the runs this one left when it stopped (`left`) at once,
        rather than when their leases end. Call it once no tool call of theirs can still be
        running here (the runtime is closed: its thread pool has finished)."""
        for run_id, epoch in self.left.items():
            with contextlib.suppress(JournalError):
                await self.leases.expire(run_id, epoch)
        self.left = {}

    async def _pause(self) -> None:
        """Until the next claim: `poll_s`, or less when a run of this worker ended."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.poll_s):
                await self._wake.wait()
        self._wake.clear()

    async def _claim(self, group: asyncio.TaskGroup) -> int:
        free = self.slots - len(self._tasks)
        if free <= 0:
            return 0
        try:
            claims = await self.leases.claim(free)
        except JournalError as exc:
            self.say(f"cannot claim runs: {exc}")
            return 0
        for claim in claims:
            self._held[claim.run_id] = claim.epoch
            self.journal.hold(claim.run_id, claim.epoch)
            self._tasks[claim.run_id] = group.create_task(self._run(claim))
        return len(claims)

    async def _run(self, claim: Claim) -> None:
        run_id = claim.run_id
        try:
            result = await self._execute(claim)
        except Exception as exc:  # a run's failure must not stop the worker
            await self._interrupted(claim, exc)
        else:
            self.finished.append(result)
            self.say(f"{run_id}: {result.status.value}")
        finally:
            self._held.pop(run_id, None)
            self._tasks.pop(run_id, None)
            self.journal.release(run_id)
            self._wake.set()

    async def _interrupted(self, claim: Claim, exc: Exception) -> None:
        """Fenced: the run is another worker's now. Otherwise (the journal's connection
        failed, or a bug) the run is left to its lease, which lapses within `lease_s` for any
        worker to resume it: a tool call of it still running in a thread here has that long
        to finish before another worker looks at what it did."""
        fenced = _found(exc, FencedError)
        if fenced is not None:
            self.say(f"{claim.run_id}: {fenced}")
            return
        cause = _found(exc, JournalError) or exc
        self.say(f"{claim.run_id}: interrupted ({cause!r}); its lease will lapse for a takeover")

    async def _execute(self, claim: Claim) -> RunResult:
        try:
            self.journal.read(claim.run_id)
        except RunNotFoundError:  # nothing durable yet: plan it (again)
            self.say(f"{claim.run_id}: starting (lease epoch {claim.epoch})")
            return await self.runtime.run(
                claim.task, run_id=claim.run_id, principal=claim.principal
            )
        self.say(f"{claim.run_id}: resuming (lease epoch {claim.epoch})")
        return await self.runtime.resume(claim.run_id)

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self.leases.lease_s / 3)
            try:
                lost = await self.leases.renew(dict(self._held))
            except JournalError as exc:
                self.say(f"cannot renew leases: {exc}")
                continue
            for run_id in lost:
                task = self._tasks.get(run_id)
                if task is not None and run_id in self._held:
                    self.say(f"{run_id}: lease lost to another worker; stopping it here")
                    task.cancel()


def _found(exc: BaseException, kind: type[_E]) -> _E | None:
    """`exc` if it is a `kind`, else the first `kind` inside it (an exception group)."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _found(inner, kind)
            if found is not None:
                return found
    return None


def _say(message: str) -> None:
    print(f"ember worker: {message}", file=sys.stderr, flush=True)
