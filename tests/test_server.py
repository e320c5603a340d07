"""`ember serve` for real: a child process on loopback, a real OTLP/HTTP collector (a loopback
HTTP server decoding the protobuf it receives), Prometheus text parsed by prometheus-client."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ember.telemetry.trace import trace_id

pytest.importorskip("starlette", reason='ember serve needs the server extra: pip install ".[dev]"')
pytest.importorskip("opentelemetry.sdk", reason='OTLP export needs the otel extra: ".[dev]"')

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from prometheus_client.parser import text_string_to_metric_families

EMBER = (sys.executable, "-m", "ember.cli")
TASK = (
    "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and "
    "email the booking to alice@example.com"
)


class _Collector(ThreadingHTTPServer):
    """Keeps every OTLP trace export POSTed to /v1/traces."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.path == "/v1/traces":
                    collector.requests.append(ExportTraceServiceRequest.FromString(body))
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def spans(self) -> list[Any]:
        return [
            span
            for request in self.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]


@pytest.fixture
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def token(ember_env: dict[str, str]) -> str:
    """A token for principal `tester`, made by `ember tokens create` (no policy is set, so it
    may do everything)."""
    from .conftest import ember

    created = ember(ember_env, "tokens", "create", "tester")
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def _call(url: str, body: dict[str, Any] | None = None, token: str = "") -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_serve_runs_tasks_and_exports_the_layers(
    ember_env: dict[str, str], collector: _Collector, token: str
) -> None:
    port = _free_port()
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    env = dict(ember_env, OTEL_BSP_SCHEDULE_DELAY="50")
    command = [*EMBER, "serve", "--planner", "scripted", "--port", str(port)]
    with subprocess.Popen(
        [*command, "--otlp-endpoint", endpoint], env=env, stderr=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stderr is not None
            assert "listening on" in server.stderr.readline()
            run = _exercise(f"http://127.0.0.1:{port}", token)
            deadline = time.monotonic() + 20
            while len(collector.spans()) < 2 + len(run["steps"]) and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            server.send_signal(signal.SIGTERM)  # graceful: queued spans are sent, then it exits
            assert server.wait(timeout=30) == -signal.SIGTERM  # as a service manager expects

    spans = {span.name: span for span in collector.spans()}
    root = spans["ember.run"]
    assert root.trace_id == bytes.fromhex(trace_id(run["run_id"]))
    attributes = {a.key: a.value for a in root.attributes}
    assert attributes["ember.run_id"].string_value == run["run_id"]
    assert attributes["ember.l4_e2e_ms"].double_value == run["latency_ms"]["l4_e2e"]
    assert (root.end_time_unix_nano - root.start_time_unix_nano) / 1e6 == pytest.approx(
        run["latency_ms"]["l4_e2e"], abs=0.01
    )
    assert spans["plan"].parent_span_id == root.span_id
    for step in run["steps"]:
        span = spans[f"step {step['id']} {step['tool']}"]
        # the span id is the step id: the traceparent the step's tool received
        assert span.span_id == step["id"].to_bytes(8, "big")
        assert span.trace_id == root.trace_id
        assert span.parent_span_id == root.span_id
        assert {"ember.tool_ms", "ember.l3_persist_ms"}.issubset(a.key for a in span.attributes)


def _exercise(base: str, token: str) -> dict[str, Any]:
    """One run over HTTP, the API's errors, and the metrics it left; returns the run."""
    status, body = _call(f"{base}/runs", {"task": TASK, "today": "2026-03-02"}, token)
    assert status == 200, body
    run: dict[str, Any] = json.loads(body)
    assert run["status"] == "succeeded"
    tools = [step["tool"] for step in run["steps"]]
    assert tools == ["get_weather", "search_hotels", "book_hotel", "send_email"]

    assert run["run_id"] in _call(f"{base}/runs", token=token)[1]
    assert _call(f"{base}/runs", {"task": " "}, token)[0] == 422  # the field's value
    status, body = _call(f"{base}/runs", {"task": TASK, "today": "tomorrow"}, token)
    assert (status, json.loads(body)["field"]) == (422, "today")
    assert _call(f"{base}/runs/r-nope", token=token)[0] == 404
    status, body = _call(f"{base}/runs/{run['run_id'][:8]}", token=token)
    assert status == 200
    assert json.loads(body)["run"]["principal"] == "tester"
    assert json.loads(body)["events"][-1]["kind"] == "run.done"

    status, text = _call(f"{base}/metrics", token=token)
    assert status == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    for layer in ("l1_ttft", "l1_plan", "l2_overhead", "l3_persist", "l4_e2e"):
        assert samples[("ember_layer_seconds_count", (("layer", layer),))] == 1
    l4 = samples[("ember_layer_seconds_sum", (("layer", "l4_e2e"),))]
    assert l4 == pytest.approx(run["latency_ms"]["l4_e2e"] / 1000)
    assert samples[("ember_runs_total", (("status", "succeeded"),))] == 1
    assert samples[("ember_step_seconds_count", (("tool", "get_weather"),))] == 1
    return run


def test_serve_resumes_the_runs_it_finds_interrupted(ember_env: dict[str, str]) -> None:
    """A run whose process died (here: one that a crash left with step 2's intent and no
    outcome) is resumed when the server starts, without repeating step 1. It was the OS
    user's (journaled before principals), so only a token of that name may read it."""
    from pathlib import Path

    from ember import Step
    from ember.policy.control import local_user

    from .conftest import ember

    token = ember(ember_env, "tokens", "create", local_user()).stdout.strip()

    from .test_recovery import crashed_journal

    weather = {"city": "Oslo", "date": "2026-03-03", "forecast": "sunny", "temp_c": 1.0}
    plan = [
        Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-03"}),
        Step(2, "send_email", {"to": "a@example.com", "subject": "Oslo", "body": "{$1.forecast}"}),
    ]
    crashed_journal(Path(ember_env["EMBER_DB"]), plan, {1: weather}, [2]).close()
    port = _free_port()
    command = [*EMBER, "serve", "--planner", "scripted", "--port", str(port)]
    with subprocess.Popen(command, env=ember_env, stderr=subprocess.PIPE, text=True) as server:
        try:
            assert server.stderr is not None
            assert "resuming 1 interrupted run(s): r-1" in server.stderr.readline()
            assert "listening on" in server.stderr.readline()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                status, body = _call(f"http://127.0.0.1:{port}/runs/r-1", token=token)
                run = json.loads(body)["run"]
                if run["status"] != "running":
                    break
                time.sleep(0.05)
        finally:
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=30) == -signal.SIGTERM
            rest = server.stderr.read() if server.stderr else ""
    assert status == 200
    assert run["status"] == "succeeded"
    assert run["steps"]["1"]["result"] == weather  # reused from the journal, not called again
    assert run["steps"]["2"]["intent_args"]["body"] == "sunny"
    assert "resumed r-1: succeeded" in rest
