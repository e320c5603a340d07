"""Each durable event's position (row sequence, index in the row): what `watch` reports at
commit is exactly what `read_after` reads back, in journal order, decisions included."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ember import Step
from ember.journal import (
    START,
    PlanStep,
    Recorded,
    RunDone,
    RunStarted,
    RunStatus,
    StepDone,
    StepIntent,
)
from ember.testing import MemoryJournal


def _events(run_id: str) -> list[object]:
    step = Step(1, "get_weather", {"city": "Oslo"})
    return [
        RunStarted(run_id, 1.0, "task", "scripted", "2026-03-02", "h:1", "ann"),
        PlanStep(run_id, 1.1, step),
        StepIntent(run_id, 1.2, 1, "get_weather", {"city": "Oslo"}, f"{run_id}:1:k"),
        StepDone(run_id, 1.3, 1, {"ok": True}, 1.0, 0.5),
        RunDone(run_id, 1.4, RunStatus.SUCCEEDED, "done"),
    ]


async def _write(journal: Any, runs: list[str]) -> None:
    async def one(run_id: str) -> None:
        events = _events(run_id)
        journal.append_soon(events[0])  # type: ignore[arg-type]
        journal.append_soon(events[1])  # type: ignore[arg-type]
        for event in events[2:]:
            await journal.append(event)  # type: ignore[arg-type]

    await asyncio.gather(*(one(run_id) for run_id in runs))


def test_watched_positions_are_the_ones_read_back(journal_at: Callable[[], Any]) -> None:
    for journal in (journal_at(), MemoryJournal()):
        seen: list[Recorded] = []
        journal.watch(seen.extend)
        runs = [f"r-{i}" for i in range(12)]  # more runs than one statement writes
        asyncio.run(_write(journal, runs))
        assert [r.position for r in seen] == sorted(r.position for r in seen)
        for run_id in runs:
            mine = [r for r in seen if r.event.run_id == run_id]
            assert journal.read_after(run_id) == mine
            assert [r.event for r in mine] == _events(run_id)
            # from any position on: exactly what followed it
            for cut in range(len(mine)):
                assert journal.read_after(run_id, mine[cut].position) == mine[cut + 1 :]
        assert journal.read_after("r-0", START)[0].event == _events("r-0")[0]


def test_runs_are_filtered_and_paged(journal_at: Callable[[], Any]) -> None:
    journal = journal_at()
    asyncio.run(_write(journal, [f"r-{i}" for i in range(30)]))

    async def started(run_id: str, principal: str) -> None:
        start = RunStarted(run_id, 5.0, "t", "scripted", "2026-03-02", "h:1", principal)
        journal.append_soon(start)
        await journal.append(PlanStep(run_id, 5.1, Step(1, "get_weather", {})))

    asyncio.run(started("r-bob", "bob"))
    first = journal.runs(10)
    assert (first[0].run_id, first[0].status) == ("r-bob", RunStatus.RUNNING)
    older = journal.runs(100, before=first[-1].seq)
    assert len(first) + len(older) == 31
    assert not {r.run_id for r in first} & {r.run_id for r in older}
    assert [r.run_id for r in journal.runs(5, principal="bob")] == ["r-bob"]
    assert len(journal.runs(100, status=RunStatus.SUCCEEDED, principal="ann")) == 30
    assert journal.runs(100, status=RunStatus.RUNNING, principal="ann") == []
    assert [r.run_id for r in journal.runs(100, since=4.0)] == ["r-bob"]
    journal.close()
