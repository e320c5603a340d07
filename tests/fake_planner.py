"""A planner made of ember's real decoder and answer writer over `WishfulModel` fakes (see
`tests/test_decoding.py`): each request maps to what the model would like to write, the
decoder and the grounding rules decide what it may."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Mapping

from ember.plan import Step
from ember.planner.answering import STOP, build_answer_prompt, write_answer
from ember.planner.base import AnswerTask, FirstToken, PlanEvent, PlanningTask
from ember.planner.compact import render_step
from ember.planner.decoding import MAX_STEPS, PlanDecoder
from ember.planner.observe import render_observations
from ember.planner.vocabulary import Cursor

from .test_decoding import PLAN, WishfulModel


class FakeModelPlanner:
    """`plans`: request -> the plan text the model wishes; `rounds`: request -> the plan it
    wishes once it has seen results (the steps so far, then more, then `done`); `answers`:
    request -> the answer it wishes to write. `calls` counts what was asked of the model."""

    name = "fake-model"

    def __init__(
        self,
        plans: Mapping[str, str],
        *,
        rounds: Mapping[str, str] | None = None,
        answers: Mapping[str, str] | None = None,
    ) -> None:
        self.plans = plans
        self.rounds = rounds or {}
        self.answers = answers or {}
        self.calls: Counter[str] = Counter()
        self.prompts: list[str] = []

    def warm(self, task: PlanningTask) -> None:
        """Nothing to load."""

    def _decode(self, task: PlanningTask, wish: str, prompt: str) -> list[Step]:
        model = WishfulModel(wish)
        decoder = PlanDecoder(
            Cursor(model, model.vocab), task.catalogue, today=task.today, request=task.request
        )
        self.prompts.append(prompt)
        return decoder.decode(
            prompt,
            on_step=lambda _: None,
            earlier=task.earlier,
            failed=task.failed,
            max_steps=task.max_steps or MAX_STEPS,
        )

    async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        self.calls["plan"] += 1
        steps = self._decode(task, self.plans[task.request], f"Request: {task.request}{PLAN}")
        yield FirstToken()
        for step in steps:
            yield step

    async def plan_on(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        self.calls["plan_on"] += 1
        wish = self.rounds.get(task.request, "".join(render_step(s) + "\n" for s in task.earlier))
        so_far = "".join(f"{render_step(step)}\n" for step in task.earlier)
        results = render_observations(task.observations)
        prompt = f"Request: {task.request}\n{results}{PLAN}{so_far}"
        steps = self._decode(task, wish if "done" in wish else wish + "done", prompt)
        yield FirstToken()
        for step in steps:
            yield step

    async def answer(self, task: AnswerTask) -> AsyncIterator[str]:
        self.calls["answer"] += 1
        model = WishfulModel(self.answers[task.request] + STOP)
        prompt = build_answer_prompt(task) + PLAN
        self.prompts.append(prompt)
        chunks: list[str] = []
        write_answer(
            model, model.vocab, model.tokenize(prompt.encode(), special=True), chunks.append
        )
        for chunk in chunks:
            yield chunk
