"""Telemetry: spans and the four latency layers (L1-L4) of every run."""

from ember.telemetry.latency import LATENCY_KEYS, LatencyRecorder, Span

__all__ = ["LATENCY_KEYS", "LatencyRecorder", "Span"]
