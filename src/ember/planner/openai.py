"""A planner on any OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, Ollama): how a
GPU cluster plugs in. Two ways (`response_format`):

- `driven`: the embedded planner's decoder (`ember.planner.decoding`), every rule of it, steers
  the server one choice at a time (`ember.planner.remote`): each choice and value is one
  `/v1/completions` request under a GBNF grammar. Needs a server that takes `grammar` (llama.cpp's
  servers) and a model that reads ChatML (the shipped Qwen models).
- `json_schema`, `json_object`, `none`: one streamed chat completion, each step yielded as its
  JSON closes; the output constrained with a JSON Schema of plans over the catalogue (or not),
  then each step held to the decoder's grounding rules (`Grounds.repair`)."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from ember.errors import PlanError, PlannerError
from ember.plan import Plan, Step
from ember.planner.base import FirstToken, PlanEvent, PlanningTask, stream_from_thread
from ember.planner.decoding import MAX_STEPS, PlanDecoder, check_rules
from ember.planner.grounding import Grounds
from ember.planner.models import shipped_model
from ember.planner.prompt import (
    build_dated,
    build_prefix,
    build_request,
    plan_schema,
    system_text,
    user_text,
)
from ember.planner.remote import ServerCursor, post_json

__all__ = ["OpenAIPlanner", "StepStreamParser"]


# How the plan is constrained: by the driven decoder (`driven`), or with its JSON Schema sent as
# OpenAI's `json_schema` (vLLM, SGLang, llama.cpp's own server, OpenAI), as `json_object` with a
# `schema` (llama-cpp-python's server), or not at all.
_FORMATS = ("json_schema", "json_object", "none", "driven")


class StepStreamParser:
    """Feeds on plan text as it streams and returns each step object as soon as it closes."""

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._step_start: int | None = None
        self._text = ""

    def feed(self, chunk: str) -> list[Step]:
        steps = []
        for char in chunk:
            self._text += char
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string = False
                continue
            if char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
                if self._depth == 3 and char == "{":  # {"steps":[ {step} ]}
                    self._step_start = len(self._text) - 1
            elif char in "}]":
                if self._depth == 3 and char == "}" and self._step_start is not None:
                    raw = self._text[self._step_start :]
                    steps.append(Plan.from_json(f'{{"steps":[{raw}]}}').steps[0])
                    self._step_start = None
                self._depth -= 1
        return steps

    @property
    def text(self) -> str:
        return self._text


class OpenAIPlanner:
    """`base_url` is the server's API root, e.g. http://127.0.0.1:8000/v1. The API key comes
    from `api_key` or `OPENAI_API_KEY` (many local servers need none). `abstain_band`: the
    driven decoder's no-tool band (`PlanDecoder`); by default the shipped model's that `model`
    names (the server's alias for it), else none. `rules_off`: the driven decoder's rules
    switched off, to measure them (`ember.planner.decoding.RULES`)."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_tokens: int = 512,
        response_format: str = "json_schema",
        abstain_band: tuple[float, float] | None = None,
        rules_off: frozenset[str] = frozenset(),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY")
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        if response_format not in _FORMATS:
            raise PlannerError(
                f"response_format {response_format!r} is not one of {', '.join(_FORMATS)}"
            )
        self.response_format = response_format
        shipped = shipped_model(model)
        self.abstain_band = abstain_band or (shipped.abstain_band if shipped else None)
        check_rules(rules_off)
        if rules_off and response_format != "driven":
            raise PlannerError("rules can be switched off only with response_format 'driven'")
        self.rules_off = rules_off
        self._client: Any = None
        self._sync_client: Any = None  # driven: used from worker threads, one at a time
        self._driving = threading.Lock()
        self.last_passes: int | None = None  # driven: the last plan's completions' tokens
        self.last_margin: float | None = None
        self.last_end_margins: list[float] = []

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=self.timeout_s)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._sync_client is not None:
            await asyncio.to_thread(self._close_driving)

    def _close_driving(self) -> None:
        with self._driving:  # not while a plan is using it
            if self._sync_client is not None:
                self._sync_client.close()
                self._sync_client = None

    def _drive(
        self, task: PlanningTask, cancelled: threading.Event, emit: Callable[[PlanEvent], None]
    ) -> None:
        """Decode the plan with the driven decoder over the server (in a worker thread), one
        plan at a time (a llama.cpp server keeps one context: plans side by side would read
        their prompts again and again); `cancelled` stops it before its next request."""
        with self._driving:
            self._drive_one(task, cancelled, emit)

    def _drive_one(
        self, task: PlanningTask, cancelled: threading.Event, emit: Callable[[PlanEvent], None]
    ) -> None:
        import httpx

        if self._sync_client is None:
            self._sync_client = httpx.Client(timeout=self.timeout_s, headers=self._headers())
        cursor = ServerCursor(
            post_json(self._sync_client),
            f"{self.base_url}/completions",
            self.model,
            cancelled=cancelled,
        )
        decoder = PlanDecoder(
            cursor,
            task.catalogue,
            today=task.today,
            request=task.request,
            abstain=self.abstain_band,
            off=self.rules_off,
        )
        prompt = (
            build_prefix(task.catalogue)
            + build_dated(task.today)
            + build_request(task.request, task.today, numbers="numbers" not in self.rules_off)
        )
        try:
            decoder.decode(
                prompt,
                on_step=emit,
                on_first_token=lambda: emit(FirstToken()),
                max_steps=task.max_steps or MAX_STEPS,
            )
        finally:
            self.last_passes = decoder.passes
            self.last_margin = decoder.first_margin
            self.last_end_margins = decoder.end_margins

    def _body(self, task: PlanningTask) -> dict[str, Any]:
        user = user_text(task.request, task.today)
        if task.feedback:
            user += f"\n{task.feedback}\nWrite a new plan."
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system_text(task.catalogue)},
                {"role": "user", "content": user},
            ],
            "stream": True,
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        schema = plan_schema(task.catalogue)
        if self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "plan", "schema": schema},
            }
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    def warm(self, task: PlanningTask) -> None:
        """Nothing to get ready here: the model is loaded by its server."""

    async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        if self.response_format == "driven":
            cancelled = threading.Event()
            try:
                drive = functools.partial(self._drive, task, cancelled)
                async for event in stream_from_thread(drive):
                    yield event
            finally:
                cancelled.set()  # a plan abandoned midway sends no more requests
            return
        import httpx

        url = f"{self.base_url}/chat/completions"
        headers = self._headers()
        parser = StepStreamParser()
        grounds = Grounds(task.catalogue, task.request, task.today)
        planned: list[Step] = []
        first = True
        try:
            async with self._http().stream(
                "POST", url, json=self._body(task), headers=headers
            ) as response:
                if response.status_code != 200:
                    text = (await response.aread()).decode(errors="replace")[:300]
                    raise PlannerError(f"{url} answered HTTP {response.status_code}: {text}")
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    choice = json.loads(data)["choices"][0]
                    text = (choice.get("delta") or {}).get("content") or ""
                    if text and first:
                        first = False
                        yield FirstToken()
                    for step in parser.feed(text):
                        # held to the decoder's rules; a step that needs a value nobody
                        # gave ends the plan, as it does with the embedded planner
                        kept = grounds.repair(step, planned)
                        if kept is None:
                            return
                        planned.append(kept)
                        yield kept
        except httpx.HTTPError as exc:
            raise PlannerError(f"cannot reach the model server at {url}: {exc}") from None
        except PlanError as exc:
            raise PlannerError(f"the model wrote an invalid step: {exc}") from None
        if not parser.text.rstrip().endswith("}"):
            raise PlannerError(f"the model's plan is incomplete: {parser.text[-200:]!r}")
