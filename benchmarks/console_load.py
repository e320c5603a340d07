"""The console under load: a real `ember serve` on loopback (scripted planner, the travel plan,
the demo tools), N concurrent clients submitting runs, each run followed by an SSE stream.

    python -m benchmarks.console_load                    # 1,000 runs, 50 clients, with streams
    python -m benchmarks.console_load --mode wait        # POST ?wait=true, no streams (baseline)
    python -m benchmarks.console_load --mode legacy      # POST /runs (blocking), as before
    python -m benchmarks.console_load --runs 200 --json  # fewer runs; one JSON object

Each client submits its share of the runs one after another: POST /v1/runs (202), then
follows /v1/runs/ID/events until run.done (`stream`); or POST /v1/runs?wait=true (`wait`);
or POST /runs, which waits too and which ember served before the console (`legacy`: run it
with an older checkout's PYTHONPATH for the baseline).
Submit-to-done is from sending the POST to receiving run.done (or the answer). After the load,
every stream is compared with the run's journal (GET /v1/runs/ID): any event missing, extra,
repeated or out of order is counted. Prints throughput, p50/p99 submit-to-done, the server's
CPU time a run, and the counts. The server and the clients share this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

TASK = (
    "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and email "
    "the booking to alice@example.com"
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(folder: Path, clients: int) -> tuple[subprocess.Popen[str], str, str]:
    env = dict(os.environ, EMBER_DB=str(folder / "ember.db"), EMBER_DEMO_DIR=str(folder / "demo"))
    ember = [sys.executable, "-m", "ember.cli"]
    created = subprocess.run(
        [*ember, "tokens", "create", "load"], env=env, capture_output=True, text=True, check=True
    )
    config = folder / "ember.toml"
    try:
        from ember.config import ServerSettings  # noqa: F401 (only the console has limits)
    except ImportError:
        config.write_text("")
    else:
        config.write_text(
            "[server]\nrate_per_s = 100000.0\nrate_burst = 100000\n"
            f"max_concurrent_runs = {clients * 2}\n"
        )
    port = _free_port()
    server = subprocess.Popen(
        [*ember, "--config", str(config), "serve", "--planner", "scripted", "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    while "listening on" not in (line := server.stderr.readline()):
        if not line:
            raise SystemExit("ember serve stopped before listening")
    return server, f"http://127.0.0.1:{port}", created.stdout.strip()


async def _follow(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    events, fields = [], {}
    async with client.stream("GET", f"/v1/runs/{run_id}/events") as answer:
        answer.raise_for_status()
        async for line in answer.aiter_lines():
            if line:
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
                continue
            if "data" in fields:
                event = json.loads(fields["data"])
                event["_id"] = fields["id"]
                events.append(event)
                if event["kind"] == "run.done":
                    return events
            fields = {}
    return events


async def _client(
    base: str, token: str, count: int, mode: str, results: list[dict[str, Any]]
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=4)
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=120, limits=limits
    ) as client:
        for _ in range(count):
            sent = time.perf_counter()
            if mode in ("wait", "legacy"):
                path = "/v1/runs?wait=true" if mode == "wait" else "/runs"
                answer = await client.post(path, json={"task": TASK})
                answer.raise_for_status()
                body = answer.json()
                results.append(
                    {"run_id": body["run_id"], "ms": _ms(sent), "status": body["status"]}
                )
                continue
            answer = await client.post("/v1/runs", json={"task": TASK})
            answer.raise_for_status()
            run_id = answer.json()["run_id"]
            events = await _follow(client, run_id)
            status = events[-1].get("status") if events else None
            results.append({"run_id": run_id, "ms": _ms(sent), "status": status, "events": events})


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used (Linux: /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


async def _check(base: str, token: str, results: list[dict[str, Any]]) -> dict[str, int]:
    """Compare every stream with its run's journal."""
    counts = {"lost": 0, "extra": 0, "repeated": 0, "out_of_order": 0, "not_succeeded": 0}
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        for result in results:
            counts["not_succeeded"] += result["status"] != "succeeded"
            if "events" not in result:
                continue
            journal = (await client.get(f"/runs/{result['run_id']}")).json()["events"]
            ids = [tuple(map(int, e.pop("_id").split("."))) for e in result["events"]]
            seen = result["events"]
            counts["repeated"] += len(ids) - len(set(ids))
            counts["out_of_order"] += ids != sorted(ids)
            counts["lost"] += sum(1 for e in journal if e not in seen)
            counts["extra"] += sum(1 for e in seen if e not in journal)
    return counts


def measure(runs: int, clients: int, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        server, base, token = _start(Path(folder), clients)
        try:
            results: list[dict[str, Any]] = []
            shares = [runs // clients + (i < runs % clients) for i in range(clients)]

            async def load() -> float:
                started = time.perf_counter()
                await asyncio.gather(*(_client(base, token, n, mode, results) for n in shares))
                return time.perf_counter() - started

            before = _cpu_s(server.pid)
            wall = asyncio.run(load())
            server_cpu = _cpu_s(server.pid) - before
            counts = asyncio.run(_check(base, token, results))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    latencies = sorted(r["ms"] for r in results)
    return {
        "mode": mode,
        "runs": len(results),
        "clients": clients,
        "wall_s": round(wall, 3),
        "runs_per_s": round(len(results) / wall, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(latencies[int(0.99 * (len(latencies) - 1))], 1),
        "server_cpu_ms_per_run": round(server_cpu * 1000 / len(results), 2),
        "events_streamed": sum(len(r.get("events", [])) for r in results),
        **counts,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--mode", choices=["stream", "wait", "legacy"], default="stream")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = measure(args.runs, args.clients, args.mode)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:>16}  {value}")


if __name__ == "__main__":
    main()
