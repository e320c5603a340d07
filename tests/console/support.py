"""The console under test: settings over a fresh journal, the scripted planner with the
console's script, the slow tools; tokens made in its control store; an in-process client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from ember.config import PlannerSettings, ServerSettings, Settings, ToolSource

HERE = Path(__file__).parent
TOOLS = HERE / "tools.py"
SCRIPT = HERE / "script.json"


def console_settings(tmp_path: Path, **limits: Any) -> Settings:
    return Settings(
        db=tmp_path / "ember.db",
        demo_dir=tmp_path / "demo",
        tools=(ToolSource(module=str(TOOLS)),),
        planner=PlannerSettings(backend="scripted", script=str(SCRIPT)),
        server=ServerSettings(**limits),
    )


def make_token(settings: Settings, name: str) -> str:
    from ember.journal.control import ControlStore
    from ember.policy.tokens import new_token, token_digest

    token = new_token()
    store = ControlStore(settings.db)
    try:
        store.add_token(name, (), token_digest(token), "test")
    finally:
        store.close()
    return token


def set_policy(settings: Settings, text: str) -> None:
    from ember.journal.control import ControlStore

    store = ControlStore(settings.db)
    try:
        store.set_policy(text, "test")
    finally:
        store.close()


@contextlib.asynccontextmanager
async def client_of(settings: Settings, *, auth: bool = True) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client speaking to the app in process, its lifespan open."""
    from ember.server import create_app

    app = create_app(settings, auth=auth)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://ember") as client:
            yield client


async def wait_for_status(
    client: httpx.AsyncClient, run_id: str, wanted: set[str], headers: dict[str, str]
) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        answer = await client.get(f"/v1/runs/{run_id}", headers=headers)
        if answer.status_code == 200 and answer.json()["run"]["status"] in wanted:
            return dict(answer.json())
        assert time.monotonic() < deadline, answer.text
        await asyncio.sleep(0.02)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def problem(answer: httpx.Response) -> dict[str, Any]:
    """The error body, checked to be a Problem that says what to do and has no trace."""
    body = answer.json()
    assert set(body) <= {"error", "what_to_do", "field"}, body
    assert body["error"]
    assert body["what_to_do"]
    assert "Traceback" not in json.dumps(body)
    return dict(body)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def serve_child(
    tmp_path: Path, env: dict[str, str], *, auth: bool = True, server_toml: str = ""
) -> Iterator[str]:
    """A real `ember serve` child on loopback with the console's tools and script; yields its
    base URL, stops it with SIGTERM."""
    import signal
    import subprocess
    import sys

    config = tmp_path / "ember.toml"
    config.write_text(f'[[tools]]\nmodule = "{TOOLS}"\n\n[server]\n{server_toml}\n')
    port = free_port()
    command = [
        sys.executable, "-m", "ember.cli", "--config", str(config), "serve",
        "--planner", "scripted", "--script", str(SCRIPT), "--port", str(port),
    ]  # fmt: skip
    if not auth:
        command.append("--no-auth")
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as server:
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            while "listening on" not in line:
                assert line, "ember serve stopped before listening"
                line = server.stderr.readline()
            yield f"http://127.0.0.1:{port}"
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


class SseMessage(NamedTuple):
    id: str
    event: str
    data: dict[str, Any]


async def sse_messages(lines: AsyncIterator[str]) -> AsyncIterator[SseMessage]:
    """Server-Sent Events from a response's lines (comments and `retry` skipped)."""
    fields: dict[str, str] = {}
    async for line in lines:
        if not line:
            if "data" in fields:
                data = json.loads(fields["data"])
                yield SseMessage(fields.get("id", ""), fields.get("event", "message"), data)
            fields = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        fields[name] = value.removeprefix(" ")
