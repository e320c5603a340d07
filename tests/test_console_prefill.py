"""Prefill while typing, through the declared capability: a planner that can (`Prefills`)
reads the typed text; texts a newer one overtook while they waited are never read; a planner
that cannot is told apart (`Runtime.can_prefill`), and the API answers 409 for it."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("starlette", reason='ember serve needs the server extra: pip install ".[dev]"')

from ember import Runtime
from ember.errors import UserError
from ember.planner.base import PlanningTask, Prefills
from ember.server.runs import Prefiller
from ember.testing import MemoryJournal, ScriptedPlanner
from ember.tools.registry import ToolRegistry


class TypingPlanner(ScriptedPlanner):
    """A planner that reads typed text (slowly, as a model would)."""

    def __init__(self) -> None:
        super().__init__({})
        self.read: list[tuple[str, str]] = []

    def prefill(self, session_id: str, task: PlanningTask) -> int:
        time.sleep(0.05)
        self.read.append((session_id, task.request))
        return len(task.request)


def test_the_latest_text_of_a_session_wins(registry: ToolRegistry) -> None:
    planner = TypingPlanner()
    runtime = Runtime(registry, planner, MemoryJournal())
    assert isinstance(planner, Prefills)
    assert runtime.can_prefill
    prefiller = Prefiller(runtime)

    async def typing() -> list[int | None]:
        return await asyncio.gather(
            prefiller.prefill("tab-1", "Check"),
            prefiller.prefill("tab-1", "Check the"),  # overtaken while "Check" is read
            prefiller.prefill("tab-1", "Check the weather"),
            prefiller.prefill("tab-2", "Book"),
        )

    answers = asyncio.run(typing())
    assert answers == [5, None, 17, 4]
    assert planner.read == [("tab-1", "Check"), ("tab-1", "Check the weather"), ("tab-2", "Book")]


def test_a_planner_that_cannot_prefill_says_so(registry: ToolRegistry) -> None:
    runtime = Runtime(registry, ScriptedPlanner({}), MemoryJournal())
    assert not runtime.can_prefill
    with pytest.raises(UserError, match="scripted planner cannot read a request while"):
        asyncio.run(runtime.prefill("tab-1", "Check"))
