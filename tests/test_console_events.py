"""A run's events as Server-Sent Events: a client that disconnects mid-run and reconnects
with Last-Event-ID sees exactly the journal's events, none lost, none twice; and an event
committed between a stream's subscription and its replay is sent once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason='ember serve needs the server extra: pip install ".[dev]"')

import httpx

from ember import Step
from ember.journal import PlanStep, RunStarted, SQLiteJournal
from ember.server.events import EventHub, stream

from .console.support import SseMessage, bearer, serve_child, sse_messages


def test_a_stream_cut_mid_run_and_resumed_with_last_event_id_equals_the_journal(
    tmp_path: Path, ember_env: dict[str, str]
) -> None:
    from .conftest import ember

    token = ember(ember_env, "tokens", "create", "ann").stdout.strip()
    auth = bearer(token)

    async def follow(
        client: httpx.AsyncClient, url: str, last: str | None, stop_after: int | None
    ) -> list[SseMessage]:
        headers = dict(auth, **({"Last-Event-ID": last} if last else {}))
        seen: list[SseMessage] = []
        async with client.stream("GET", url, headers=headers) as answer:
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/event-stream")
            async for message in sse_messages(answer.aiter_lines()):
                seen.append(message)
                if stop_after is not None and len(seen) == stop_after:
                    break  # the connection is closed mid-run
        return seen

    async def main(base: str) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            answer = await client.post("/v1/runs", json={"task": "plan a slow trip"}, headers=auth)
            run_id = answer.json()["run_id"]
            url = f"/v1/runs/{run_id}/events"
            first = await follow(client, url, None, stop_after=8)
            assert "run.done" not in [m.event for m in first]
            await asyncio.sleep(0.5)  # events go on while nobody listens
            rest = await follow(client, url, first[-1].id, stop_after=None)
            assert rest[-1].event == "run.done"  # the stream ends with the run
            assert rest[0].id != first[-1].id
            seen = first + rest
            journal = (await client.get(f"/v1/runs/{run_id}", headers=auth)).json()["events"]
            assert [m.data for m in seen] == journal
            assert [m.event for m in seen] == [e["kind"] for e in journal]
            ids = [tuple(map(int, m.id.split("."))) for m in seen]
            assert ids == sorted(set(ids))  # increasing: none twice
            # a finished run: the whole journal again, then the end
            again = await follow(client, url, None, stop_after=None)
            assert [m.data for m in again] == journal
            after_all = await follow(client, url, seen[-1].id, stop_after=None)
            assert after_all == []

    with serve_child(tmp_path, ember_env) as base:
        asyncio.run(main(base))


def test_an_event_committed_between_subscribing_and_replaying_is_sent_once(
    tmp_path: Path,
) -> None:
    journal = SQLiteJournal(tmp_path / "j.db")
    hub = EventHub()
    journal.watch(lambda batch: [hub.observe(r) for r in batch])

    async def main() -> list[bytes]:
        await journal.append(RunStarted("r-1", 1.0, "t", "scripted", "2026-03-02"))
        body = stream(hub, journal, "r-1", (0, -1), keepalive_s=0.05)
        frames = [await anext(body)]  # subscribed ("retry:"), not yet replayed
        await journal.append(PlanStep("r-1", 1.1, Step(1, "get_weather", {})))  # both ways
        for _ in range(3):
            frames.append(await anext(body))
        await body.aclose()
        return frames

    frames = asyncio.run(main())
    journal.close()
    kinds = [f.split(b"\nevent: ")[1].split(b"\n")[0] for f in frames if b"event: " in f]
    assert kinds == [b"run.started", b"plan.step"]  # once each; then only keep-alives
    assert frames[-1] == b": keep-alive\n\n"
