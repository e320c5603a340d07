"""W3C trace context of a run: the run is the trace, each step a span in it (pure).

Built here once: the executor hands a step's `traceparent` to its tool, the latency recorder puts
it on the step's span, and the OTLP exporter uses the same trace id, so a tool host that traces
its side joins the run's trace.
"""

from __future__ import annotations

import hashlib

__all__ = ["trace_id", "traceparent"]


def trace_id(run_id: str) -> str:
    """The W3C trace id of a run (32 hex digits, derived from the run id)."""
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def traceparent(trace: str, step_id: int) -> str:
    """The W3C `traceparent` of a step of the run whose `trace_id` is `trace`: the run is the
    trace, the step id the span id."""
    return f"00-{trace}-{step_id:016x}-01"
