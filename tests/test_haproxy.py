"""The recipe of docs/deploy.md: two `ember serve --db postgresql://... --worker` behind HAProxy
(examples/cluster/haproxy.cfg). Runs go in through the proxy, their events come out through it,
and when one server stops the proxy sends everything to the other. Needs the haproxy binary
(`apt-get install haproxy`; .ci/run installs it); skipped without it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .console.support import SCRIPT, TOOLS

RECIPE = Path(__file__).resolve().parents[1] / "examples" / "cluster" / "haproxy.cfg"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.1)


@pytest.fixture
def cluster(postgres_db: str, tmp_path: Path) -> Iterator[tuple[str, list[Any], list[Path]]]:
    """The proxy's URL, the two servers' processes and their logs."""
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        pytest.skip("haproxy is not installed (apt-get install haproxy)")
    from ember.policy.signing import AuditSigner

    AuditSigner(tmp_path / "audit-key")  # one key for both servers
    (tmp_path / "ember.toml").write_text(f'[[tools]]\nmodule = "{TOOLS}"\n', encoding="utf-8")
    front, ports = _port(), [_port(), _port()]
    config = RECIPE.read_text(encoding="utf-8")
    for old, new in zip(("8330", "8331", "8332"), (front, *ports), strict=True):
        config = config.replace(f"127.0.0.1:{old}", f"127.0.0.1:{new}")
    (tmp_path / "haproxy.cfg").write_text(config, encoding="utf-8")
    env = dict(
        os.environ,
        EMBER_DB=postgres_db,
        EMBER_AUDIT_KEY=str(tmp_path / "audit-key"),
        EMBER_DEMO_DIR=str(tmp_path / "demo"),
    )
    logs = [tmp_path / f"serve-{port}.log" for port in ports]
    command = [sys.executable, "-m", "ember.cli", "--config", str(tmp_path / "ember.toml")]
    command += ["serve", "--worker", "--no-auth", "--planner", "scripted", "--script", str(SCRIPT)]
    servers = []
    for port, log in zip(ports, logs, strict=True):
        with log.open("wb") as err:
            servers.append(
                subprocess.Popen(
                    [*command, "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=err
                )
            )
    proxy = subprocess.Popen([haproxy, "-db", "-f", str(tmp_path / "haproxy.cfg")], env=env)
    try:
        yield f"http://127.0.0.1:{front}", servers, logs
    finally:
        for process in [*servers, proxy]:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in [*servers, proxy]:
            process.wait(timeout=30)


def test_two_servers_behind_haproxy_take_runs_and_one_can_stop(
    cluster: tuple[str, list[Any], list[Path]],
) -> None:
    import httpx

    url, servers, logs = cluster
    client = httpx.Client(base_url=url, timeout=30)

    def healthy() -> bool:
        try:
            return client.get("/health").status_code == 200
        except httpx.TransportError:
            return False

    def finished(run_id: str) -> Callable[[], bool]:
        def check() -> bool:
            answer = client.get(f"/v1/runs/{run_id}")  # 404 until a worker made it durable
            return answer.status_code == 200 and answer.json()["run"]["status"] == "succeeded"

        return check

    _until(lambda: all(b"listening" in log.read_bytes() for log in logs), "both servers")
    streak = [0]

    def both_up() -> bool:  # round robin: consecutive answers come from both servers
        streak[0] = streak[0] + 1 if healthy() else 0
        return streak[0] >= 4

    _until(both_up, "the proxy to see both servers up")
    first = [client.post("/v1/runs", json={"task": "quick"}) for _ in range(6)]
    assert [answer.status_code for answer in first] == [202] * 6
    for answer in first:
        _until(finished(answer.json()["run_id"]), "a run through the proxy")
    events = client.get(f"/v1/runs/{first[0].json()['run_id']}/events")
    assert events.headers["content-type"].startswith("text/event-stream")
    assert "event: run.done" in events.text  # the whole stream, through the proxy
    servers[0].send_signal(signal.SIGTERM)  # one server goes away
    servers[0].wait(timeout=30)
    after = [client.post("/v1/runs", json={"task": "quick"}) for _ in range(4)]
    assert [answer.status_code for answer in after] == [202] * 4  # all to the other one
    for answer in after:
        _until(finished(answer.json()["run_id"]), "a run after one server stopped")
    client.close()
