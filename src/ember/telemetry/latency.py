"""The four latency layers of a run (DESIGN.md "The four latency layers").

- L1 planning: request in -> first plan token (`l1_ttft`), and -> plan complete (`l1_plan`).
- L2 orchestration: the runtime's own time around each tool call (resolve references,
  validate, dispatch, receive), summed over the run's steps (`l2_overhead`). The tool's own
  running time and the journal's time are excluded: they are reported on their own.
- L3 persistence: time spent waiting for journal records to be durable, summed (`l3_persist`).
- L4 end to end: request received -> final result returned (`l4_e2e`).
- A written answer (a request that asks a question): its first token (`l1_answer_ttft`) and
  its whole writing (`l1_answer`), from when it was asked for; part of L4, reported only when
  the model wrote one.

All figures are milliseconds. Time comes from an injected monotonic clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgspec

from ember.telemetry.trace import trace_id, traceparent

__all__ = ["LATENCY_KEYS", "LatencyRecorder", "Span"]

LATENCY_KEYS = ("l1_ttft", "l1_plan", "l2_overhead", "l3_persist", "l4_e2e")


class Span(msgspec.Struct, frozen=True):
    """A timed interval of a run, in milliseconds from the run's start."""

    name: str
    layer: str
    start_ms: float
    ms: float
    attrs: dict[str, Any] = {}


class LatencyRecorder:
    """Collects one run's spans and layer totals."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter, run_id: str = "") -> None:
        self.clock = clock
        self.trace = trace_id(run_id) if run_id else ""  # step spans carry the run's trace
        self.start = clock()
        self.spans: list[Span] = []
        self._ttft: float | None = None
        self._plan: float | None = None
        self._l2 = 0.0
        self._l3 = 0.0
        self._end: float | None = None
        self._answer: list[float] = []  # asked for, first token, written

    def _ms(self, t: float) -> float:
        return (t - self.start) * 1000

    def first_token(self) -> None:
        if self._ttft is None:
            self._ttft = self.clock()
            self.spans.append(Span("plan.ttft", "L1", 0.0, self._ms(self._ttft)))

    def plan_done(self) -> None:
        self._plan = self.clock()
        self.spans.append(Span("plan", "L1", 0.0, self._ms(self._plan)))

    def answer_mark(self) -> None:
        """The answer was asked for, its first token came, it was written (call in order)."""
        self._answer.append(self.clock())
        if len(self._answer) == 3:
            asked, _, done = self._answer
            self.spans.append(Span("answer", "L1", self._ms(asked), (done - asked) * 1000))

    def persisted(self, started: float) -> float:
        """Record a journal wait that began at `started`; returns its seconds."""
        waited = self.clock() - started
        self._l3 += waited
        return waited

    def step(
        self, step_id: int, tool: str, started: float, self_s: float, persist_s: float
    ) -> None:
        """Record a finished step: its wall time minus tool and journal time is L2 overhead."""
        wall = self.clock() - started
        self._l2 += max(0.0, wall - self_s - persist_s)
        self.spans.append(
            Span(
                f"step {step_id} {tool}",
                "L2",
                self._ms(started),
                wall * 1000,
                {
                    "step_id": step_id,
                    "tool": tool,
                    "tool_ms": self_s * 1000,
                    "persist_ms": persist_s * 1000,
                    "traceparent": traceparent(self.trace, step_id) if self.trace else "",
                },
            )
        )

    def finish(self) -> None:
        self._end = self.clock()
        self.spans.append(Span("run", "L4", 0.0, self._ms(self._end)))

    def report(self) -> dict[str, float]:
        """The five figures, in milliseconds (0.0 for a phase that never happened)."""
        end = self._end if self._end is not None else self.clock()
        figures = {
            "l1_ttft": round(self._ms(self._ttft), 3) if self._ttft is not None else 0.0,
            "l1_plan": round(self._ms(self._plan), 3) if self._plan is not None else 0.0,
            "l2_overhead": round(self._l2 * 1000, 3),
            "l3_persist": round(self._l3 * 1000, 3),
            "l4_e2e": round(self._ms(end), 3),
        }
        if len(self._answer) == 3:
            asked, first, done = self._answer
            figures["l1_answer_ttft"] = round((first - asked) * 1000, 3)
            figures["l1_answer"] = round((done - asked) * 1000, 3)
        return figures
