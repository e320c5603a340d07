"""`ember serve --db postgresql://...`: a cluster's console queues runs for the workers and
streams their events from the shared journal (`--worker`: a worker in the server too)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec

from ember.journal.leases import Leases

from .console.support import client_of, console_settings


def _settings(tmp_path: Path, url: str):  # type: ignore[no-untyped-def]
    settings = console_settings(tmp_path)
    return msgspec.structs.replace(settings, journal_url=url, audit_key=tmp_path / "key")


def test_a_run_goes_to_the_queue_and_its_events_come_from_the_worker(
    postgres_db: str, tmp_path: Path
) -> None:
    from ember.server import create_app

    settings = _settings(tmp_path, postgres_db)

    async def scenario() -> tuple[int, str, str, dict]:  # type: ignore[type-arg]
        import httpx

        app = create_app(settings, auth=False, worker=True)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://e") as client:
                started = await client.post("/v1/runs", json={"task": "plan a slow trip"})
                run_id = started.json()["run_id"]
                events = await client.get(f"/v1/runs/{run_id}/events")  # ends at run.done
                run = await client.get(f"/v1/runs/{run_id}")
                return started.status_code, run_id, events.text, run.json()

    status, run_id, events, run = asyncio.run(scenario())
    assert status == 202
    assert "event: run.started" in events
    assert events.count("event: step.done") == 4
    assert "event: run.done" in events
    assert run["run"]["status"] == "succeeded"
    leases = Leases(postgres_db, "test")
    assert asyncio.run(leases.state(run_id))[0] == "done"  # type: ignore[index]
    asyncio.run(leases.close())


def test_a_server_without_a_worker_queues_and_streams_what_a_worker_elsewhere_writes(
    postgres_db: str, tmp_path: Path
) -> None:
    """The server plans nothing and runs nothing: a worker with its own runtime and journal
    connection (another process's worth) runs the run, and the server's stream reads it from
    the journal."""
    from ember.app import open_runtime
    from ember.journal.postgres import PostgresJournal
    from ember.worker import Worker

    settings = _settings(tmp_path, postgres_db)

    async def work() -> None:
        async with open_runtime(settings) as runtime:
            assert isinstance(runtime.journal, PostgresJournal)
            leases = Leases(postgres_db, "elsewhere:1")
            await Worker(runtime, runtime.journal, leases, poll_s=0.05).serve(once=True)
            await leases.close()

    async def scenario() -> tuple[int, int, str, str]:
        async with client_of(settings, auth=False) as client:
            waited = await client.post("/v1/runs?wait=true", json={"task": "quick"})
            queued = await client.post("/v1/runs", json={"task": "plan a slow trip"})
            run_id = queued.json()["run_id"]
            following = asyncio.create_task(client.get(f"/v1/runs/{run_id}/events"))
            await asyncio.sleep(0.3)  # the stream is open before the worker starts
            await work()
            events = await following
            return waited.status_code, queued.status_code, run_id, events.text

    waited, queued, run_id, events = asyncio.run(scenario())
    assert waited == 422  # it cannot wait: a worker runs it
    assert queued == 202
    assert events.count("event: step.done") == 4
    assert "event: run.done" in events
    assert f'"run_id":"{run_id}"' in events
    ids = [line for line in events.splitlines() if line.startswith("id: ")]
    assert len(ids) == len(set(ids))  # polled and replayed: each event once
