"""Execution settings, and a tool call with a timeout and retries (exponential backoff, jitter).

Time comes from the injected `sleep`, so tests drive timeouts and backoff with a fake clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable

import msgspec

from ember.errors import ToolCallError
from ember.tools.transport import ToolResult

__all__ = ["ExecutionSettings", "RetryPolicy", "call_with_retries"]


class RetryPolicy(msgspec.Struct, frozen=True):
    """Retries for errors a tool marks retryable: attempt n waits
    min(max_delay_s, base_delay_s x factor^(n-1)) x (1 +/- jitter)."""

    max_attempts: int = 3
    base_delay_s: float = 0.1
    factor: float = 2.0
    max_delay_s: float = 10.0
    jitter: float = 0.2

    def delay(self, attempt: int, rng: random.Random) -> float:
        raw = min(self.max_delay_s, self.base_delay_s * self.factor ** (attempt - 1))
        return raw * (1 + self.jitter * (2 * rng.random() - 1))


class ExecutionSettings(msgspec.Struct, frozen=True):
    """How the executor runs steps.

    - `default_timeout_s`: per call, for tools without their own `timeout_s` (None: no limit).
    - `max_concurrency`: tool calls in flight at once across a run; `tool_limits`: per tool.
    - `thread_pool_size`: threads for plain (blocking) Python tools, sized here rather than by
      Python's default (which gives 6 threads on 2 cores).
    - `max_replans`: how many times a failed run may ask the planner for a new plan.
    - `max_rounds`: how many times a run may ask a planner that can (`PlansOn`) to add steps
      after results came in (observe, then plan on).
    """

    default_timeout_s: float | None = 300.0
    retry: RetryPolicy = RetryPolicy()
    max_concurrency: int = 64
    tool_limits: dict[str, int] = {}
    thread_pool_size: int = 32
    max_replans: int = 0
    max_rounds: int = 2


async def call_with_retries(
    call: Callable[[], Awaitable[ToolResult]],
    *,
    tool: str,
    timeout_s: float | None,
    retry: RetryPolicy,
    retry_timeouts: bool,
    sleep: Callable[[float], Awaitable[None]],
    rng: random.Random,
    on_retry: Callable[[int, str, float], None],
) -> ToolResult:
    """`call()` under a timeout, retried on retryable errors. A timeout counts as retryable
    only when `retry_timeouts` (an idempotent tool): otherwise the call may have had its effect."""
    attempt = 1
    while True:
        try:
            if timeout_s is None:
                return await call()
            return await _with_timeout(call(), tool, timeout_s, sleep, retry_timeouts)
        except ToolCallError as exc:
            if not exc.retryable or attempt >= retry.max_attempts:
                raise
            delay = retry.delay(attempt, rng)
            on_retry(attempt, str(exc), delay)
            await sleep(delay)
            attempt += 1


async def _with_timeout(
    call: Awaitable[ToolResult],
    tool: str,
    timeout_s: float,
    sleep: Callable[[float], Awaitable[None]],
    retryable: bool,
) -> ToolResult:
    expired = ToolCallError(tool, f"timed out after {timeout_s:g} s", retryable=retryable)
    if sleep is asyncio.sleep:  # the real clock: asyncio's own timeout costs no extra task
        try:
            async with asyncio.timeout(timeout_s):
                return await call
        except TimeoutError:
            raise expired from None
    calling = asyncio.ensure_future(call)
    timer = asyncio.ensure_future(sleep(timeout_s))
    try:
        done, _ = await asyncio.wait({calling, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (calling, timer):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if calling in done:
        return calling.result()
    raise expired
