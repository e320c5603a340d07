"""Benchmark contenders: each function returns per-operation samples, in seconds.

Floors (what the machine can do at best) sit next to ember's figures for the same operation,
measured in the same run: a bare function call and an asyncio task per step for L2, a raw
SQLite INSERT+COMMIT in WAL mode for L3.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Samples = list[float]


def _repeat(op: Callable[[], object], n: int) -> Samples:
    samples = []
    clock = time.perf_counter
    for _ in range(n):
        start = clock()
        op()
        samples.append(clock() - start)
    return samples


# -- L2: one tool step ---------------------------------------------------------------------------


def floor_bare_call(n: int) -> Samples:
    """A plain Python call of a trivial tool function."""

    def tool(x: int) -> dict[str, int]:
        return {"y": x + 1}

    return _repeat(lambda: tool(1), n)


def floor_asyncio_task(n: int) -> Samples:
    """An asyncio task per step, created and awaited (the executor's unavoidable minimum)."""

    async def tool(x: int) -> dict[str, int]:
        return {"y": x + 1}

    async def main() -> Samples:
        samples = []
        clock = time.perf_counter
        for _ in range(n):
            start = clock()
            await asyncio.create_task(tool(1))
            samples.append(clock() - start)
        return samples

    return asyncio.run(main())


def _chain_registry() -> Any:
    from ember import ToolRegistry, tool

    @tool(inline=True)
    def inc(x: int) -> dict[str, int]:
        """Adds one."""
        return {"y": x + 1}

    registry = ToolRegistry()
    registry.register(inc)
    return registry


def _chain_plan(steps: int) -> Any:
    from ember import Plan, Step

    first = Step(1, "inc", {"x": 0})
    rest = [Step(i, "inc", {"x": f"${i - 1}.y"}) for i in range(2, steps + 1)]
    return Plan([first, *rest])


def ember_l2_step(n: int) -> Samples:
    """ember's orchestration overhead per step (L2: resolve references, validate, dispatch,
    record), tool and journal time excluded, from the step spans of 20-step sequential chains."""
    samples: Samples = []
    for done in _chain_runs(n // 20 + 1):
        for span in done.spans:
            if span["layer"] == "L2":
                attrs = span["attrs"]
                samples.append((span["ms"] - attrs["tool_ms"] - attrs["persist_ms"]) / 1000)
    return samples[:n]


def ember_chain_step(
    n: int, *, journal: str = "memory", steps: int = 20, policy: str | None = None
) -> Samples:
    """A whole `steps`-step sequential chain, end to end, divided by its steps: the per-step
    cost including scheduling between steps, the scripted planner and (`journal="sqlite"`)
    durability. `policy` (sqlite only): under the control plane, with the Cedar policy of that
    name in `CHAIN_POLICIES`: every call decided, journaled with its version, audited."""
    return [
        done.latency_ms["l4_e2e"] / 1000 / steps
        for done in _chain_runs(max(1, n // steps), journal=journal, steps=steps, policy=policy)
    ]


# Policies for the chain under the control plane: a rule that does not read the call (decided
# once per version and principal, by Cedar's partial evaluation), and one with a condition on the
# arguments and the time of day (every call evaluated in full).
CHAIN_POLICIES = {
    "allow": '@id("inc") permit(principal, action == Action::"call", resource == Tool::"inc");',
    "conditions": '@id("inc") permit(principal in Role::"ops", action == Action::"call", '
    'resource == Tool::"inc") when { context.args.x < 1000000 && context.hour >= 0 };',
}


def _chain_runs(
    runs: int, *, journal: str = "memory", steps: int = 20, policy: str | None = None
) -> list[Any]:
    from ember import Runtime, ScriptedPlanner, SQLiteJournal
    from ember.journal import RunDone
    from ember.testing import MemoryJournal

    async def main(sink: Any, control: Any = None) -> list[Any]:
        planner = ScriptedPlanner({"chain": _chain_plan(steps)})
        runtime = Runtime(_chain_registry(), planner, sink, control=control)
        principal = "bench" if control is not None else ""
        results = [await runtime.run("chain", principal=principal) for _ in range(runs)]
        assert all(result.status == "succeeded" for result in results), results[0].error
        # read once the runs are over, so that decoding them is not garbage for the runs to collect
        finished = [sink.read(result.run_id)[-1] for result in results]
        assert all(isinstance(done, RunDone) for done in finished)
        return finished

    if journal == "memory":
        return asyncio.run(main(MemoryJournal()))
    with tempfile.TemporaryDirectory() as tmp:
        sink = SQLiteJournal(Path(tmp) / "bench.db")
        try:
            if policy is None:
                return asyncio.run(main(sink))
            with _control(Path(tmp) / "bench.db", CHAIN_POLICIES[policy]) as control:
                return asyncio.run(main(sink, control))
        finally:
            sink.close()


def ember_chain_alternating(
    n: int, *, policy: str = "allow", steps: int = 20
) -> dict[str, Samples]:
    """The durable chain step without and with the control plane (`policy`), one run of each in
    turn on one journal in one process, so that a shared machine's drift hits both alike: the
    fairest ratio of the two (per-step samples as `ember_chain_step`'s)."""
    from ember import Runtime, ScriptedPlanner, SQLiteJournal

    async def main(sink: Any, control: Any) -> dict[str, Samples]:
        planner = ScriptedPlanner({"chain": _chain_plan(steps)})
        plain = Runtime(_chain_registry(), planner, sink)
        ruled = Runtime(_chain_registry(), planner, sink, control=control)
        samples: dict[str, Samples] = {"without_control": [], "policy_audit": []}
        for _ in range(max(1, n // steps)):
            for name, runtime, principal in (
                ("without_control", plain, ""),
                ("policy_audit", ruled, "bench"),
            ):
                result = await runtime.run("chain", principal=principal)
                assert result.status == "succeeded", result.error
                samples[name].append(result.latency_ms["l4_e2e"] / 1000 / steps)
        return samples

    with tempfile.TemporaryDirectory() as tmp:
        sink = SQLiteJournal(Path(tmp) / "bench.db")
        try:
            with _control(Path(tmp) / "bench.db", CHAIN_POLICIES[policy]) as control:
                return asyncio.run(main(sink, control))
        finally:
            sink.close()


@contextlib.contextmanager
def _control(db: Path, policy: str) -> Iterator[Any]:
    """The control plane of `db` with `policy` in force and principal `bench` (role ops)."""
    from ember.journal.control import ControlStore
    from ember.policy.control import ControlPlane

    store = ControlStore(db)
    try:
        store.add_token("bench", ("ops",), "0" * 64, "bench")
        store.set_policy(policy, "bench")
        yield ControlPlane(store, local="bench")
    finally:
        store.close()


# -- policy: one decision ------------------------------------------------------------------------


def policy_cedar_raw(n: int) -> Samples:
    """The engine alone: `cedarpy.is_authorized` on a pre-parsed policy set and entities, with
    the request built already (the floor of a decision that reads the call's arguments)."""
    import json

    import cedarpy

    policies = cedarpy.PolicySet.from_str(CHAIN_POLICIES["conditions"])
    user = {"type": "User", "id": "bench"}
    entities = cedarpy.Entities.from_json_str(
        json.dumps([{"uid": user, "attrs": {}, "parents": [{"type": "Role", "id": "ops"}]}])
    )
    request = {
        "principal": user,
        "action": {"type": "Action", "id": "call"},
        "resource": {"type": "Tool", "id": "inc"},
        "context": json.dumps({"args": {"x": 7}, "hour": 12, "minute": 0, "risk": "low"}),
    }
    assert cedarpy.is_authorized(request, policies, entities).allowed
    return _repeat(lambda: cedarpy.is_authorized(request, policies, entities), n)


def policy_decide(n: int, *, policy: str = "allow") -> Samples:
    """`ember.policy.decide` on one call of the chain's tool, as the executor asks it: the
    context built from the arguments and the time, the policy evaluated (or its decision known
    for every call of that tool, when no rule reads the context)."""
    from ember import Step
    from ember.policy import CallContext, Principal, Verdict, compile_policy, decide

    registry = _chain_registry()
    descriptor = registry.get("inc").descriptor
    compiled = compile_policy(CHAIN_POLICIES[policy], 1)
    principal = Principal("bench", ("ops",))
    step, args = Step(3, "inc", {"x": "$2.y"}), {"x": 7}
    context = CallContext("r-bench", policy=compiled, principal=principal, at=time.time())
    assert decide(step, descriptor, args, context).verdict is Verdict.RUN
    return _repeat(lambda: decide(step, descriptor, args, context), n)


def ember_concurrent_runs(n: int, *, runs: int = 100) -> Samples:
    """`runs` 20-step chains at once on one durable SQLite journal (group commit): the wall
    time of each batch divided by its steps, i.e. the inverse of durable steps per second."""
    from ember import Runtime, ScriptedPlanner, SQLiteJournal

    async def batch(runtime: Any) -> float:
        start = time.perf_counter()
        results = await asyncio.gather(*(runtime.run("chain") for _ in range(runs)))
        assert all(r.status == "succeeded" for r in results)
        return (time.perf_counter() - start) / (runs * 20)

    samples: Samples = []
    with tempfile.TemporaryDirectory() as tmp:
        sink = SQLiteJournal(Path(tmp) / "bench.db")
        runtime = Runtime(_chain_registry(), ScriptedPlanner({"chain": _chain_plan(20)}), sink)
        try:
            for _ in range(max(1, n // (runs * 20))):
                samples.append(asyncio.run(batch(runtime)))
        finally:
            sink.close()
    return samples


def ember_recover_10k(n: int) -> Samples:
    """Read, checksum, decode and fold a run of 10,000 events from a real SQLite file."""
    from ember import SQLiteJournal, Step
    from ember.journal import PlanStep, StepDone, StepIntent, fold

    async def fill(journal: SQLiteJournal) -> None:
        for i in range(1, 3334):
            step = Step(i, "inc", {"x": i})
            journal.append_soon(PlanStep("r-big", 0.0, step))
            journal.append_soon(StepIntent("r-big", 0.0, i, "inc", {"x": i}, f"k{i}"))
            await journal.append(StepDone("r-big", 0.0, i, {"y": i + 1}, 0.1, 0.01))

    with tempfile.TemporaryDirectory() as tmp:
        journal = SQLiteJournal(Path(tmp) / "bench.db")
        asyncio.run(fill(journal))
        assert len(journal.read("r-big")) == 9999
        samples = _repeat(lambda: fold("r-big", journal.read("r-big")), n)
        journal.close()
    return samples


# -- L3: one durable journal record --------------------------------------------------------------


def _wal_db(path: Path, synchronous: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    return db


def floor_sqlite_commit(n: int, *, synchronous: str = "NORMAL") -> Samples:
    """A raw INSERT + COMMIT of a ~200-byte row in a WAL database."""
    with tempfile.TemporaryDirectory() as tmp:
        db = _wal_db(Path(tmp) / "floor.db", synchronous)
        db.execute("CREATE TABLE t(seq INTEGER PRIMARY KEY, run_id TEXT, body BLOB)")
        body = b"x" * 200

        def commit() -> None:
            db.execute("BEGIN")
            db.execute("INSERT INTO t(run_id, body) VALUES (?, ?)", ("r-1", body))
            db.execute("COMMIT")

        samples = _repeat(commit, n)
        db.close()
    return samples


def floor_sqlite_step_records(n: int) -> Samples:
    """What a durable chain step must commit at least, in the journal's own schema (its run
    index included): the step's outcome and the next step's intent, one ~350-byte row, one
    transaction (WAL, synchronous=NORMAL)."""
    from ember.journal.sqlite import MIGRATIONS

    with tempfile.TemporaryDirectory() as tmp:
        db = _wal_db(Path(tmp) / "floor.db", "NORMAL")
        db.executescript(";\n".join(MIGRATIONS))
        row = ("r-1", "step.done", 1.0, b"x" * 350, 7, 1)

        def commit() -> None:
            db.execute(
                "INSERT INTO events(run_id, kind, at, body, crc, run_key) VALUES (?,?,?,?,?,?)",
                row,
            )

        samples = _repeat(commit, n)
        db.close()
    return samples


def floor_fsync_append(n: int) -> Samples:
    """A 200-byte `write` appended to a file, then `fdatasync`: what power-loss durability
    costs at least, without a database."""
    import os

    with tempfile.TemporaryDirectory() as tmp:
        fd = os.open(Path(tmp) / "floor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        record = b"x" * 200

        def append() -> None:
            os.write(fd, record)
            os.fdatasync(fd)

        samples = _repeat(append, n)
        os.close(fd)
    return samples


def ember_l3_append(n: int, *, durability: str = "normal") -> Samples:
    """`SQLiteJournal.append` of a step.done event, awaited until durable, one at a time."""
    from ember import SQLiteJournal
    from ember.journal import StepDone

    async def main(journal: SQLiteJournal) -> Samples:
        samples = []
        clock = time.perf_counter
        for i in range(n):
            event = StepDone("r-bench", time.time(), i, {"temp_c": 9.8, "city": "Paris"}, 1.0, 0.5)
            start = clock()
            await journal.append(event)
            samples.append(clock() - start)
        return samples

    with tempfile.TemporaryDirectory() as tmp:
        journal = SQLiteJournal(Path(tmp) / "bench.db", durability=durability)  # type: ignore[arg-type]
        try:
            return asyncio.run(main(journal))
        finally:
            journal.close()


# -- argument validation (how the validator library was chosen) ----------------------------------

_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1},
        "check_in": {"type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "nights": {"type": "integer", "minimum": 1},
    },
    "required": ["city", "check_in", "nights"],
    "additionalProperties": False,
}
_ARGS = {"city": "Paris", "check_in": "2026-03-03", "nights": 2}


def validate_jsonschema_rs(n: int) -> Samples:
    """ember's validator: jsonschema-rs, compiled once (search_hotels' arguments)."""
    from ember.tools.validation import compile_validator

    validate = compile_validator("search_hotels", _SCHEMA)
    return _batched(lambda: validate(_ARGS), n)


def validate_fastjsonschema(n: int) -> Samples:
    """The alternative: fastjsonschema, compiled once (needs the bench extra)."""
    import fastjsonschema

    validate = fastjsonschema.compile(_SCHEMA)
    return _batched(lambda: validate(_ARGS), n)


def _batched(op: Callable[[], object], n: int, batch: int = 100) -> Samples:
    """Sub-microsecond operations: time batches and report the per-operation mean of each."""
    samples = []
    clock = time.perf_counter
    for _ in range(max(1, n // batch)):
        start = clock()
        for _ in range(batch):
            op()
        samples.append((clock() - start) / batch)
    return samples


# -- the executor: parallel fan-out and streamed planning -----------------------------------------


def floor_gather_fanout(n: int, *, width: int = 10, seconds: float = 0.05) -> Samples:
    """asyncio.gather of `width` 50 ms sleeps: the floor of a parallel fan-out."""

    async def once() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(asyncio.sleep(seconds) for _ in range(width)))
        return time.perf_counter() - start

    return [asyncio.run(once()) for _ in range(max(1, n))]


def ember_fanout(n: int, *, width: int = 10, seconds: float = 0.05) -> Samples:
    """ember running a plan of `width` independent 50 ms tools, end to end (L4)."""
    from ember import Plan, Runtime, ScriptedPlanner, Step, ToolRegistry, tool
    from ember.testing import MemoryJournal

    @tool
    async def fetch(i: int) -> dict[str, int]:
        """Waits 50 ms, like a remote API."""
        await asyncio.sleep(seconds)
        return {"i": i}

    registry = ToolRegistry()
    registry.register(fetch)
    plan = Plan([Step(i, "fetch", {"i": i}) for i in range(1, width + 1)])
    runtime = Runtime(registry, ScriptedPlanner({"fan": plan}), MemoryJournal())
    samples = []
    for _ in range(max(1, n)):
        result = asyncio.run(runtime.run("fan"))
        samples.append(result.latency_ms["l4_e2e"] / 1000)
    runtime.close()
    return samples


def ember_streamed_plan(
    n: int, *, streamed: bool = True, tokens_per_s: float = 35.0, tool_s: float = 0.15
) -> Samples:
    """The 4-step travel plan from a planner writing 35 tokens/s, with 150 ms tools: end to end,
    steps starting as they stream in (`streamed`) or only once the whole plan is written."""
    from datetime import date

    from ember import Runtime, ScriptedPlanner, ToolRegistry
    from ember.planner.scripted import DEMO_SCRIPT
    from ember.testing import MemoryJournal
    from ember.tools.demo import demo_catalog

    registry = ToolRegistry()
    for descriptor in demo_catalog():

        async def slow(**args: Any) -> dict[str, Any]:
            await asyncio.sleep(tool_s)
            return {
                "hotels": [{"hotel_id": "H-1"}],
                "booking_id": "BK-1",
                "hotel_name": "H",
                "city": "Paris",
                "nights": 2,
                "check_in": "2026-03-03",
                "total_price": 1.0,
                "currency": "EUR",
                "forecast": "sun",
                "temp_c": 1.0,
                "message_id": "m",
            }

        registry.register(descriptor, transport=_Slow(slow))
    planner: Any = ScriptedPlanner(DEMO_SCRIPT, tokens_per_s=tokens_per_s)
    if not streamed:
        planner = _WholePlan(planner)
    runtime = Runtime(registry, planner, MemoryJournal())
    task = next(iter(DEMO_SCRIPT))
    samples = []
    for _ in range(max(1, n)):
        result = asyncio.run(runtime.run(task, today=date(2026, 3, 2)))
        assert result.status == "succeeded", result.error
        samples.append(result.latency_ms["l4_e2e"] / 1000)
    return samples


class _Slow:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> Any:
        from ember.tools.transport import ToolResult

        start = time.perf_counter()
        value = await self.fn(**args)
        return ToolResult(value, time.perf_counter() - start)


class _WholePlan:
    """Wraps a planner: yields nothing until the whole plan is written (no streaming)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    async def plan(self, task: Any) -> Any:
        items = [item async for item in self.inner.plan(task)]
        for item in items:
            yield item


# -- transports: one no-op tool call ---------------------------------------------------------------


def _wait_for(check: Callable[[], bool], process: Any) -> None:
    deadline = time.monotonic() + 30
    while not check():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.02)


def _port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> Callable[[], bool]:
    import socket

    def check() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False

    return check


@contextlib.contextmanager
def _serving(args: list[str], check: Callable[[], bool]) -> Iterator[None]:
    """A server child process (`python -m ARGS`), ready once `check()`, stopped on exit."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-m", *args])
    try:
        _wait_for(check, process)
        yield
    finally:
        process.terminate()
        process.wait()


def transport_inproc(n: int) -> Samples:
    """The registry's in-process call of the no-op tool (validation included)."""
    from benchmarks.bench_tools import noop
    from ember import ToolRegistry

    registry = ToolRegistry()
    registry.register(noop)

    async def main() -> Samples:
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            await registry.call("noop", {}, idempotency_key="k")
            samples.append(time.perf_counter() - start)
        return samples

    return asyncio.run(main())


def _remote_calls(transport: Any, n: int) -> Samples:
    async def main() -> Samples:
        await transport.list_tools()
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            await transport.call("noop", {}, idempotency_key="k")
            samples.append(time.perf_counter() - start)
        await transport.aclose()
        return samples

    return asyncio.run(main())


def transport_uds(n: int) -> Samples:
    """`tools/call` to `ember tools serve` on a Unix socket (a persistent connection)."""
    from ember.tools.remote import UdsTransport

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "t.sock")
        host = ["ember.cli", "tools", "serve", "benchmarks/bench_tools.py", "--uds", path]
        with _serving(host, lambda: Path(path).exists()):
            return _remote_calls(UdsTransport(path), n)


def transport_http(n: int) -> Samples:
    """`tools/call` to `ember tools serve` over HTTP/1.1 keep-alive (httpx)."""
    from ember.tools.remote import HttpTransport

    port = _port()
    host = [
        "ember.cli",
        "tools",
        "serve",
        "benchmarks/bench_tools.py",
        "--http",
        f"127.0.0.1:{port}",
    ]
    with _serving(host, _listening(port)):
        return _remote_calls(HttpTransport(f"http://127.0.0.1:{port}/mcp"), n)


def floor_uds_echo(n: int) -> Samples:
    """A raw newline echo over a Unix socket, asyncio on both sides."""
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "f.sock")

        async def main() -> Samples:
            reader, writer = await asyncio.open_unix_connection(path)
            message = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"noop"}}\n'
            samples = []
            for _ in range(n):
                start = time.perf_counter()
                writer.write(message)
                await writer.drain()
                await reader.readline()
                samples.append(time.perf_counter() - start)
            writer.close()
            return samples

        with _serving(["benchmarks.floors", "uds", path], lambda: Path(path).exists()):
            return asyncio.run(main())


def floor_http_keepalive(n: int) -> Samples:
    """A raw keep-alive POST with httpx to a minimal asyncio HTTP server."""
    import httpx

    port = _port()

    async def main() -> Samples:
        samples = []
        async with httpx.AsyncClient() as client:
            for _ in range(n):
                start = time.perf_counter()
                response = await client.post(f"http://127.0.0.1:{port}/", content=b"{}")
                response.json()
                samples.append(time.perf_counter() - start)
        return samples

    with _serving(["benchmarks.floors", "http", str(port)], _listening(port)):
        return asyncio.run(main())


def transport_mcp_stdio(n: int) -> Samples:
    """`tools/call` to an MCP server written with the official SDK, over stdio."""
    import sys

    from ember.tools.mcp import McpStdioTransport

    async def main() -> Samples:
        async with McpStdioTransport(sys.executable, ["benchmarks/mcp_noop_server.py"]) as mcp:
            await mcp.list_tools()
            samples = []
            for _ in range(n):
                start = time.perf_counter()
                await mcp.call("noop", {}, idempotency_key="k")
                samples.append(time.perf_counter() - start)
            return samples

    return asyncio.run(main())


# -- a whole run: the four latency layers of the travel example -----------------------------------


# Variants of the travel example (same shape, other cities and addresses), so that no run starts
# with its own request already in the model's cache from the run before.
TRAVEL_VARIANTS = [
    ("Paris", "alice@example.com"),
    ("Lisbon", "bruno@example.org"),
    ("Vienna", "chen@example.net"),
    ("Oslo", "dana@example.com"),
    ("Madrid", "emil@example.org"),
]


def travel_request(city: str, email: str) -> str:
    return (
        f"Check the weather in {city} tomorrow, book the cheapest hotel there for 2 nights and "
        f"email the booking to {email}"
    )


def run_layers(
    n: int,
    *,
    planner: str = "scripted",
    model: str | None = None,
    typed: bool = False,
    shapes: bool = False,
) -> dict[str, Samples]:
    """The travel example end to end on the demo tools and a real SQLite journal, in one
    process (for `llama`: the embedded model, its prompt prefix warm): each run's L1-L4.
    With `typed`, the request is first typed into the planner's prefill one character at a
    time, as a typist's keystrokes arrive (each keystroke's prefill time is a series too: at
    5 characters a second, each must take under 200 ms to keep up)."""
    from datetime import date

    from ember import Runtime, SQLiteJournal
    from ember.planner.base import PlanningTask
    from ember.planner.scripted import DEMO_SCRIPT, ScriptedPlanner
    from ember.tools.demo import DemoWorld, demo_registry

    requests = [next(iter(DEMO_SCRIPT))]
    chosen: Any = ScriptedPlanner(DEMO_SCRIPT)
    if planner == "llama":
        from ember.planner.llama import LlamaPlanner

        # each variant has the travel example's shape: with `shapes`, the warm-up plan serves
        # them all (no model pass); without, every run is planned by the model
        chosen = LlamaPlanner(model, shapes=shapes)
        requests = [travel_request(city, email) for city, email in TRAVEL_VARIANTS]
    series: dict[str, Samples] = {
        k: [] for k in ("l1_ttft", "first_call", "l1_plan", "l2_overhead", "l3_persist", "l4_e2e")
    }
    if typed:
        series["keystroke_prefill"] = []
    today = date(2026, 3, 2)
    with tempfile.TemporaryDirectory() as tmp:
        journal = SQLiteJournal(Path(tmp) / "bench.db")
        registry = demo_registry(DemoWorld(Path(tmp) / "demo"))
        runtime = Runtime(registry, chosen, journal)
        catalogue = tuple(registry.descriptors())

        def type_in(request: str) -> None:
            for end in range(1, len(request) + 1):
                start = time.perf_counter()
                chosen.prefill("bench", PlanningTask(request[:end], today, catalogue))
                series["keystroke_prefill"].append(time.perf_counter() - start)

        async def main() -> None:
            await runtime.run(requests[-1], today=today)  # warm: model, prefix, caches
            for index in range(max(1, n)):
                request = requests[index % len(requests)]
                if typed:
                    type_in(request)
                submitted = time.time()
                result = await runtime.run(request, today=today)
                for key in ("l1_ttft", "l1_plan", "l2_overhead", "l3_persist", "l4_e2e"):
                    series[key].append(result.latency_ms[key] / 1000)
                # the first tool call dispatched, from submit: what streaming the plan buys
                series["first_call"].append((result.first_dispatch or time.time()) - submitted)

        try:
            asyncio.run(main())
        finally:
            journal.close()
            runtime.close()
    return series
