"""Export the four latency layers of finished runs: Prometheus metrics and OpenTelemetry spans.

Both read a run's `run.done` record (its layer figures and spans), so they see every run the
process finishes, resumed ones included; `RunExporters.observe` is a journal observer
(`ObservedJournal`). Optional dependencies: `pip install -e ".[server]"` for Prometheus and
`".[otel]"` for OTLP.

Spans keep ember's W3C ids: the trace id is the run's (`ember.telemetry.trace`) and each
step's span id is its step id, the `traceparent` the step's tool received, so a tool host that
traces its side joins the same trace.
"""

from __future__ import annotations

from typing import Any

from ember.extras import require
from ember.journal import Recorded, RunDone
from ember.telemetry.trace import trace_id

__all__ = ["LAYER_BUCKETS_S", "LayerMetrics", "RunExporters", "SpanExport"]

# Seconds: from a 50 us journal append to a 30 s plan on a slow machine.
LAYER_BUCKETS_S = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.18,
    0.25,
    0.5,
    0.65,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class LayerMetrics:
    """Prometheus histograms of L1-L4 per finished run, steps by tool, runs by status."""

    def __init__(self) -> None:
        require("Prometheus metrics", "prometheus_client")
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        self.layers = Histogram(
            "ember_layer_seconds",
            "Latency of each layer of a finished run: l1_ttft, l1_plan (planning), l2_overhead "
            "(orchestration, summed over steps), l3_persist (journal waits), l4_e2e",
            ["layer"],
            buckets=LAYER_BUCKETS_S,
            registry=self.registry,
        )
        self.steps = Histogram(
            "ember_step_seconds",
            "Wall time of each step (tool call plus its orchestration and journal time)",
            ["tool"],
            buckets=LAYER_BUCKETS_S,
            registry=self.registry,
        )
        self.runs = Counter(
            "ember_runs", "Finished runs by final status", ["status"], registry=self.registry
        )

    def record(self, done: RunDone) -> None:
        for layer, ms in done.latency_ms.items():
            self.layers.labels(layer).observe(ms / 1000)
        for span in done.spans:
            if span.get("layer") == "L2":
                self.steps.labels(span["attrs"]["tool"]).observe(span["ms"] / 1000)
        self.runs.labels(done.status.value).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The text format for a scrape, and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class SpanExport:
    """Sends each finished run as an OTLP/HTTP trace: the run (L4) is the root span, with the
    plan (L1) and each step (L2, with its L3 journal time as an attribute) beneath it."""

    def __init__(self, endpoint: str, *, service_name: str = "ember") -> None:
        require("OTLP spans", "opentelemetry")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

        class RunIds(IdGenerator):
            """ember's ids where it has them (set before each span), random otherwise."""

            def __init__(self) -> None:
                self.trace: int | None = None
                self.span: int | None = None
                self._random = RandomIdGenerator()

            def generate_trace_id(self) -> int:
                return self.trace or self._random.generate_trace_id()

            def generate_span_id(self) -> int:
                span, self.span = self.span, None
                return span or self._random.generate_span_id()

        url = endpoint.rstrip("/")
        self.url = url if url.endswith("/v1/traces") else f"{url}/v1/traces"
        self._ids = RunIds()
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}), id_generator=self._ids
        )
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(self.url)))
        self._tracer = self._provider.get_tracer("ember")

    def record(self, done: RunDone) -> None:
        from opentelemetry import trace

        spans = done.spans
        total_ms = done.latency_ms.get("l4_e2e", 0.0)
        start_ns = int((done.at - total_ms / 1000) * 1e9)

        def at(ms: float) -> int:
            return start_ns + int(ms * 1e6)

        self._ids.trace = int(trace_id(done.run_id), 16)
        root = self._tracer.start_span(
            "ember.run",
            start_time=start_ns,
            attributes={
                "ember.run_id": done.run_id,
                "ember.layer": "L4",
                "ember.status": done.status.value,
                **{f"ember.{key}_ms": value for key, value in done.latency_ms.items()},
            },
        )
        self._ids.trace = None
        parent = trace.set_span_in_context(root)
        for span in spans:
            if span["layer"] == "L4":
                continue
            attributes: dict[str, Any] = {"ember.layer": span["layer"]}
            if span["layer"] == "L2":
                attrs = span["attrs"]
                self._ids.span = attrs["step_id"]
                attributes |= {
                    "ember.step_id": attrs["step_id"],
                    "ember.tool": attrs["tool"],
                    "ember.tool_ms": attrs["tool_ms"],
                    "ember.l3_persist_ms": attrs["persist_ms"],
                }
            child = self._tracer.start_span(
                span["name"],
                context=parent,
                start_time=at(span["start_ms"]),
                attributes=attributes,
            )
            child.end(end_time=at(span["start_ms"] + span["ms"]))
        root.end(end_time=at(total_ms))

    def close(self) -> None:
        """Send what is queued, then stop."""
        self._provider.shutdown()


class RunExporters:
    """Feeds every finished run to the Prometheus `metrics` and, when set, the OTLP `spans`:
    pass `observe` to an `ObservedJournal`."""

    def __init__(self, metrics: LayerMetrics, spans: SpanExport | None = None) -> None:
        self.metrics = metrics
        self.spans = spans

    def observe(self, recorded: Recorded) -> None:
        event = recorded.event
        if isinstance(event, RunDone):
            self.metrics.record(event)
            if self.spans is not None:
                self.spans.record(event)

    def close(self) -> None:
        """Send the spans still queued."""
        if self.spans is not None:
            self.spans.close()
