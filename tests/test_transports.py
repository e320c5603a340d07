"""Tools in another process: a real `ember tools serve` on a Unix socket and on HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember import Plan, Runtime, ScriptedPlanner, Step, ToolRegistry
from ember.errors import ToolCallError
from ember.journal import RunStatus, StepStatus
from ember.testing import MemoryJournal
from ember.tools.host import ToolHost, load_tools
from ember.tools.remote import HttpTransport, UdsTransport, register_remote

TOOLS = Path(__file__).parent / "data" / "host_tools.py"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Host:
    def __init__(self, tmp: Path) -> None:
        self.uds = str(tmp / "tools.sock")
        self.port = _port()
        self.calls = tmp / "calls.log"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ember.cli",
                "tools",
                "serve",
                str(TOOLS),
                "--uds",
                self.uds,
                "--http",
                f"127.0.0.1:{self.port}",
            ],
            env=dict(os.environ, EMBER_TEST_CALLS=str(self.calls)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while not (os.path.exists(self.uds) and self._http_up()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(self.process.communicate()[1].decode())
            time.sleep(0.05)

    def _http_up(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        _, err = self.process.communicate(timeout=30)
        return err.decode()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    started = Host(tmp_path)
    yield started
    started.stop()


def _transports(host: Host) -> list[Any]:
    return [UdsTransport(host.uds), HttpTransport(host.url)]


def test_list_and_call_over_uds_and_http(host: Host) -> None:
    async def main() -> None:
        for transport in _transports(host):
            tools = {d.tool_name: d for d in await transport.list_tools()}
            assert list(tools) == ["add", "echo", "nap", "broken", "noop", "render", "trace"]
            assert tools["add"].idempotent
            assert tools["add"].parameters["properties"]["a"]["description"] == "The first."
            result = await transport.call("add", {"a": 2, "b": 3}, idempotency_key="k")
            assert result.value == {"sum": 5}
            assert result.self_s >= 0
            assert (
                await transport.call("echo", {"text": "hi"}, idempotency_key="k-1")
            ).value == "hi"
            with pytest.raises(ToolCallError, match="upstream 503 for 4") as caught:
                await transport.call("broken", {"x": 4}, idempotency_key="k")
            assert caught.value.retryable
            with pytest.raises(ToolCallError, match=r"error -32602: .*'b' = None breaks"):
                await transport.call("add", {"a": 1}, idempotency_key="k")
            with pytest.raises(ToolCallError, match="error -32602: no tool named 'nope'"):
                await transport.call("nope", {}, idempotency_key="k")
            await transport.aclose()

    asyncio.run(main())
    assert host.calls.read_text().split() == ["k-1", "k-1"]  # the key reached the tool


def test_a_plan_runs_on_remote_tools(host: Host) -> None:
    async def main() -> Any:
        registry = ToolRegistry()
        transport = UdsTransport(host.uds)
        assert await register_remote(registry, transport) == 7
        plan = Plan(
            [
                Step(1, "add", {"a": 1, "b": 2}),
                Step(2, "add", {"a": "$1.sum", "b": 10}),
                Step(3, "echo", {"text": "total {$2.sum}"}),
            ]
        )
        result = await Runtime(registry, ScriptedPlanner({"go": plan}), MemoryJournal()).run("go")
        await transport.aclose()
        return result

    result = asyncio.run(main())
    assert result.status is RunStatus.SUCCEEDED
    assert [s.result for s in result.steps] == [{"sum": 3}, {"sum": 13}, "total 13"]


def test_a_host_killed_mid_call_fails_the_step_clearly(host: Host) -> None:
    async def main() -> Any:
        registry = ToolRegistry()
        transport = UdsTransport(host.uds)
        await register_remote(registry, transport)
        plan = Plan([Step(1, "nap", {"seconds": 30}), Step(2, "add", {"a": 1, "b": 1})])
        run = asyncio.create_task(
            Runtime(registry, ScriptedPlanner({"go": plan}), MemoryJournal()).run("go")
        )
        await asyncio.sleep(0.5)
        host.process.send_signal(signal.SIGKILL)
        result = await asyncio.wait_for(run, 20)
        await transport.aclose()
        return result

    result = asyncio.run(main())
    assert result.steps[0].status is StepStatus.FAILED
    assert "the tool host at unix:" in (result.steps[0].error or "")
    assert "it may have died" in (result.steps[0].error or "")


def test_health_and_bad_http(host: Host) -> None:
    import httpx

    assert httpx.get(f"http://127.0.0.1:{host.port}/health").json()["tools"] == 7
    assert httpx.get(f"http://127.0.0.1:{host.port}/nope").status_code == 404
    reply = httpx.post(host.url, content=b"{not json").json()
    assert reply["error"]["code"] == -32700


def test_graceful_shutdown(tmp_path: Path) -> None:
    started = Host(tmp_path)
    started.process.send_signal(signal.SIGTERM)
    started.stop()
    assert started.process.returncode == 0


HOST = ToolHost(load_tools(str(TOOLS)))


def _answer(raw: bytes) -> dict[str, Any]:
    reply = asyncio.run(HOST.handle(raw))
    assert reply is not None
    decoded: dict[str, Any] = json.loads(reply)
    return decoded


def test_protocol_errors() -> None:
    assert _answer(b"[1, 2")["error"]["code"] == -32700
    assert _answer(b'{"id": 1, "method": "tools/list"}')["error"]["code"] == -32600
    assert (
        _answer(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/delete"}')["error"]["code"] == -32601
    )
    bad = _answer(
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
        b'{"name": "echo", "arguments": {"text": "' + b"x" * 200 + b'"}}}'
    )
    assert bad["id"] == 7
    assert bad["error"]["code"] == -32602
    assert "breaks rule 'maxLength'" in bad["error"]["message"]
    assert asyncio.run(HOST.handle(b'{"jsonrpc": "2.0", "method": "ping"}')) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.fixed_dictionaries(
            {
                "jsonrpc": st.just("2.0"),
                "id": st.integers(),
                "method": st.sampled_from(["tools/call", "tools/list", "x"]),
                "params": json_values,
            }
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_fuzzed_messages_always_get_a_well_formed_answer(raw: bytes) -> None:
    reply = asyncio.run(HOST.handle(raw))
    if reply is None:
        return
    answer = json.loads(reply)
    assert answer["jsonrpc"] == "2.0"
    assert ("result" in answer) != ("error" in answer)


def test_async_tools_run_as_jobs_and_reattach_after_a_runtime_restart(host: Host) -> None:
    from ember.journal import StepJob, fold, idempotency_key
    from ember.telemetry.trace import trace_id, traceparent

    journal = MemoryJournal()

    async def main() -> Any:
        registry = ToolRegistry()
        transport = UdsTransport(host.uds)
        await register_remote(registry, transport)
        plan = Plan([Step(1, "render", {"title": "q1"}), Step(2, "trace", {})])
        first = await Runtime(registry, ScriptedPlanner({"go": plan}), journal).run(
            "go", run_id="r-j"
        )
        # a crash after submitting: a new runtime finds the handle in the journal and waits on it
        key = idempotency_key("r-x", 1, "render", {"title": "q2"})
        handle = await transport.submit("render", {"title": "q2"}, idempotency_key=key)
        again = await transport.submit("render", {"title": "q2"}, idempotency_key=key)
        waited = await transport.wait("render", handle)
        await transport.aclose()
        return first, handle, again, waited

    first, handle, again, waited = asyncio.run(main())
    assert first.status is RunStatus.SUCCEEDED
    assert first.steps[0].result == {"path": "/reports/q1.md"}
    assert first.steps[1].result == {"traceparent": traceparent(trace_id("r-j"), 2)}
    done = next(e for e in journal.events if type(e).__struct_config__.tag == "run.done")
    spans = {s["name"]: s["attrs"] for s in done.spans if s["layer"] == "L2"}  # type: ignore[attr-defined]
    assert spans["step 2 trace"]["traceparent"] == traceparent(trace_id("r-j"), 2)  # the same trace
    assert [e.handle for e in journal.events if isinstance(e, StepJob)] == [
        fold("r-j", journal.events).steps[1].job
    ]
    assert again == handle  # the same key: the same job, not a second one
    assert waited.value == {"path": "/reports/q2.md"}
    assert host.calls.read_text().splitlines().count("render q2") == 1
