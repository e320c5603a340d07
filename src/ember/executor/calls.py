"""One tool call of a run: under the run's concurrency limits, the tool's timeout and the retry
policy; an `async` tool through its job handle, journaled as soon as the job is accepted."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Awaitable, Callable
from typing import Any

from ember.executor.resilience import ExecutionSettings, call_with_retries
from ember.journal import Journal, StepJob, StepRetrying
from ember.telemetry.latency import LatencyRecorder
from ember.tools.context import StepContext, _current
from ember.tools.descriptor import ExecutionMode
from ember.tools.registry import RegisteredTool
from ember.tools.transport import JobTransport, ToolResult

__all__ = ["Dispatcher"]


class Dispatcher:
    """Calls the tools of one run (see the module docstring)."""

    def __init__(
        self,
        run_id: str,
        journal: Journal,
        recorder: LatencyRecorder,
        settings: ExecutionSettings,
        *,
        wall: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        rng: random.Random,
    ) -> None:
        self.run_id = run_id
        self.journal = journal
        self.recorder = recorder
        self.settings = settings
        self.wall = wall
        self.sleep = sleep
        self.rng = rng
        self._limit = asyncio.Semaphore(settings.max_concurrency)
        self._tool_limits = {tool: asyncio.Semaphore(n) for tool, n in settings.tool_limits.items()}

    async def call(
        self,
        registered: RegisteredTool,
        args: dict[str, Any],
        context: StepContext,
        job: str | None = None,
    ) -> tuple[ToolResult, float]:
        """Call the tool within its step context; returns the result and the seconds spent
        waiting for the journal (an async tool's job handle). `job`: the handle a crashed
        process recorded, to wait on instead of submitting the job again."""
        token = _current.set(context)
        persist = 0.0
        tool = registered.descriptor.tool_name
        try:
            transport = registered.transport
            op: Callable[[], Awaitable[ToolResult]]
            if registered.descriptor.execution_mode == ExecutionMode.ASYNC and isinstance(
                transport, JobTransport
            ):
                if job is None:
                    job = await transport.submit(
                        tool, args, idempotency_key=context.idempotency_key
                    )
                    mark = self.recorder.clock()
                    await self.journal.append(
                        StepJob(self.run_id, self.wall(), context.step_id, job, context.item)
                    )
                    persist = self.recorder.persisted(mark)
                op = functools.partial(transport.wait, tool, job)
            else:
                op = functools.partial(
                    transport.call, tool, args, idempotency_key=context.idempotency_key
                )
            limit = self._tool_limits.get(tool)
            async with self._limit:
                if limit is None:
                    return await self._attempts(context.step_id, registered, op), persist
                async with limit:
                    return await self._attempts(context.step_id, registered, op), persist
        finally:
            _current.reset(token)

    async def _attempts(
        self, step_id: int, registered: RegisteredTool, op: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        descriptor = registered.descriptor
        # An inline function blocks the loop until it returns: no timer could interrupt it.
        timeout_s = (
            None if registered.inline else descriptor.timeout_s or self.settings.default_timeout_s
        )

        def retrying(attempt: int, error: str, delay: float) -> None:
            self.journal.append_soon(
                StepRetrying(self.run_id, self.wall(), step_id, attempt, error, delay)
            )

        return await call_with_retries(
            op,
            tool=descriptor.tool_name,
            timeout_s=timeout_s,
            retry=self.settings.retry,
            retry_timeouts=descriptor.idempotent,
            sleep=self.sleep,
            rng=self.rng,
            on_retry=retrying,
        )
