"""The transport seam: how the runtime reaches a tool. One method, `call`.

A transport returns the tool's result and the tool's own running time (`self_s`), so that the
runtime's orchestration overhead (L2) can be reported without the tool's time in it. Remote
transports (uds, http, mcp) report the self-time the tool host measured.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol, runtime_checkable

import msgspec

from ember.errors import ToolCallError
from ember.tools.context import current_executor

__all__ = ["InprocTransport", "JobTransport", "ToolResult", "Transport"]


class ToolResult(msgspec.Struct, frozen=True):
    """A tool's result value and the seconds the tool itself ran."""

    value: Any
    self_s: float


@runtime_checkable
class JobTransport(Protocol):
    """How the runtime reaches an `async` tool: submit a job, then wait for its result.

    The handle is journaled (`step.job`) as soon as `submit` returns, so a runtime restarted
    after a crash waits on the same job instead of submitting it again.
    """

    async def submit(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> str:
        """Start the job; return its handle at once."""
        ...

    async def wait(self, tool: str, handle: str) -> ToolResult:
        """The job's result, once it has one."""
        ...


class Transport(Protocol):
    """Carries one call to one tool and brings back its result."""

    async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> ToolResult:
        """Run `tool` with validated `args`; raise `ToolCallError` when the tool fails."""
        ...


class InprocTransport:
    """Calls a Python function in the runtime's own process, without serialisation.

    Coroutine functions are awaited on the event loop. Plain functions run in `executor`, by
    default the runtime's bounded thread pool (`ExecutionSettings.thread_pool_size`), unless
    `inline` is true, for functions that finish in microseconds.
    """

    def __init__(
        self, fn: Callable[..., Any], *, inline: bool = False, executor: Executor | None = None
    ) -> None:
        self._fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        self.inline = inline  # runs on the event loop: a timeout could never interrupt it
        self._executor = executor
        self._takes_key = "idempotency_key" in inspect.signature(fn).parameters

    async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> ToolResult:
        kwargs = dict(args, idempotency_key=idempotency_key) if self._takes_key else args
        try:
            if self._is_async:
                start = time.perf_counter()
                value = await self._fn(**kwargs)
                return ToolResult(value, time.perf_counter() - start)
            if self.inline:
                start = time.perf_counter()
                value = self._fn(**kwargs)
                return ToolResult(value, time.perf_counter() - start)
            loop = asyncio.get_running_loop()
            context = contextvars.copy_context()  # the step context reaches the thread too
            return await loop.run_in_executor(
                self._executor or current_executor(),
                functools.partial(context.run, _timed, self._fn, kwargs),
            )
        except ToolCallError:
            raise
        except Exception as exc:
            raise ToolCallError(tool, f"{type(exc).__name__}: {exc}") from exc


def _timed(fn: Callable[..., Any], kwargs: dict[str, Any]) -> ToolResult:
    start = time.perf_counter()
    value = fn(**kwargs)
    return ToolResult(value, time.perf_counter() - start)
