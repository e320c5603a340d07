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
from ember.journal import PlanStep, Recorded, RunStarted
from ember.server.events import EventHub, stream
from ember.testing import MemoryJournal

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


def test_an_event_committed_between_subscribing_and_replaying_is_sent_once() -> None:
    memory = MemoryJournal()
    hub = EventHub()
    memory.watch(lambda batch: [hub.observe(r) for r in batch])
    memory.append_soon(RunStarted("r-1", 1.0, "t", "scripted", "2026-03-02"))

    class Racing:
        """The journal, with a commit landing after the stream subscribed, before it reads."""

        def read_after(self, run_id: str, after: tuple[int, int]) -> list[Recorded]:
            memory.append_soon(PlanStep("r-1", 1.1, Step(1, "get_weather", {})))
            return memory.read_after(run_id, after)

    async def main() -> list[bytes]:
        body = stream(hub, Racing(), "r-1", (0, -1), keepalive_s=0.05)  # type: ignore[arg-type]
        frames = [await anext(body), await anext(body)]
        await body.aclose()
        return frames

    frames = asyncio.run(main())
    kinds = [line for f in frames for line in f.split(b"\n") if line.startswith(b"event: ")]
    assert kinds == [b"event: run.started", b"event: plan.step"]  # once each, though both
    assert frames[-1] == b": keep-alive\n\n"  # the hub's copy was dropped as already sent
