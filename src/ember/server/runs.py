"""What the server owns while it runs: the runs it executes (each a task in its task group, so
one can be cancelled by id, and at most `max_concurrent_runs` go at once) and the planner's
typing sessions (prefill: the latest text wins)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

from ember.errors import EmberError
from ember.executor import RunResult, Runtime
from ember.server.errors import ApiError

__all__ = ["Prefiller", "RunTasks"]


class RunTasks:
    """The runs this server is executing, by run id, each a task of one task group (`open`).

    `start` refuses a run past `limit` with 429 and Retry-After; `adopt` takes one regardless
    (a run resumed at start-up, or after a decision). `cancel` cancels a run's task: the runtime
    records each step's final state and the run as cancelled."""

    def __init__(self, limit: int, retry_after_s: int) -> None:
        self.limit = limit
        self.retry_after_s = retry_after_s
        self._tasks: dict[str, asyncio.Task[RunResult | None]] = {}
        self._owners: dict[str, str] = {}
        self._group: asyncio.TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[RunTasks]:
        """The task group the runs live in; on exit each run still going is cancelled."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                yield self
            finally:
                self._group = None
                for task in self._tasks.values():
                    task.cancel()

    def __len__(self) -> int:
        return len(self._tasks)

    def owner(self, run_id: str) -> str | None:
        """The principal of a run this server is executing, else None."""
        return self._owners.get(run_id) if run_id in self._tasks else None

    def start(
        self, run_id: str, principal: str, run: Callable[[], Awaitable[RunResult]]
    ) -> asyncio.Task[RunResult | None]:
        """Execute `run()` as the server's task for `run_id`, if there is room."""
        if len(self._tasks) >= self.limit:
            raise ApiError(
                429,
                f"the server is running {len(self._tasks)} runs, its limit",
                f"try again in {self.retry_after_s} s; the limit is max_concurrent_runs in "
                "the [server] table of ember.toml",
                headers={"Retry-After": str(self.retry_after_s)},
            )
        return self.adopt(run_id, principal, run)

    def adopt(
        self, run_id: str, principal: str, run: Callable[[], Awaitable[RunResult]]
    ) -> asyncio.Task[RunResult | None]:
        """Execute `run()` for `run_id` whatever the limit; after the run's current task, if
        it has one (a decision that arrives while other steps still run)."""
        group = self._group
        if group is None:
            raise ApiError(503, "the server is stopping", "try again once it has restarted")
        before = self._tasks.get(run_id)
        task = group.create_task(self._guarded(run_id, before, run))
        self._tasks[run_id], self._owners[run_id] = task, principal
        task.add_done_callback(lambda done: self._forget(run_id, done))
        return task

    async def _guarded(
        self,
        run_id: str,
        before: asyncio.Task[RunResult | None] | None,
        run: Callable[[], Awaitable[RunResult]],
    ) -> RunResult | None:
        if before is not None:
            await asyncio.wait([before])
        try:
            return await run()
        except EmberError as exc:  # said, not raised: one run's failure must not end the group
            _say(f"run {run_id}: {exc}")
        except Exception as exc:
            _say(f"run {run_id}: internal error: {type(exc).__name__}: {exc}")
        return None

    def _forget(self, run_id: str, done: asyncio.Task[RunResult | None]) -> None:
        if self._tasks.get(run_id) is done:
            del self._tasks[run_id]
            self._owners.pop(run_id, None)

    async def cancel(self, run_id: str) -> bool:
        """Cancel the run's task and wait until its cancellation is recorded; False if this
        server is not executing it."""
        task = self._tasks.get(run_id)
        if task is None:
            return False
        task.cancel()
        await asyncio.wait([task])
        return True


class Prefiller:
    """Hands the planner the request being typed, one prefill at a time (the model has one
    context): a text that a newer one of the same session overtook while it waited is not read
    at all (the latest text wins)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._latest: dict[str, str] = {}
        self._lock = asyncio.Lock()

    async def prefill(self, session: str, text: str) -> int | None:
        """Tokens read, or None when a newer text of `session` came first."""
        self._latest[session] = text
        async with self._lock:
            if self._latest.get(session) != text:
                return None
            try:
                return await self.runtime.prefill(session, text)
            finally:
                if self._latest.get(session) == text:
                    del self._latest[session]


def _say(message: str) -> None:
    print(f"ember serve: {message}", file=sys.stderr, flush=True)
