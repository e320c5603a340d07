"""The embedded planner: llama.cpp in this process, grammar-constrained to ember's plan format.

One `Llama` object is kept alive, so the prompt prefix (instructions + catalogue + examples)
is evaluated once and reused by every later request (llama.cpp keeps the longest common prefix
of consecutive prompts in its KV cache). Generation runs in a worker thread; text streams back
to the event loop, and each step is yielded as soon as its JSON object closes.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from ember.errors import ModelError, PlanError, PlannerError
from ember.planner.base import FirstToken, PlanEvent, PlanningTask
from ember.planner.models import cache_dir, resolve_model
from ember.planner.plan import Plan, Step
from ember.planner.prompt import build_grammar, build_prefix, build_request

__all__ = ["LlamaPlanner", "StepStreamParser"]

_DONE = object()


class StepStreamParser:
    """Feeds on plan text as it streams and returns each step object as soon as it closes."""

    def __init__(self) -> None:
        self._buffer: list[str] = []
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


class LlamaPlanner:
    """Plans with a GGUF model through llama-cpp-python (the `embedded` extra)."""

    name = "llama"

    def __init__(
        self,
        model: str | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        max_tokens: int = 512,
        prefix_cache: bool = True,
    ) -> None:
        self.model_path: Path = resolve_model(model)
        self._n_ctx = n_ctx
        self._n_threads = n_threads or 1
        self._n_threads_batch = n_threads_batch or (os.cpu_count() or 2)
        self._max_tokens = max_tokens
        self.prefix_cache = prefix_cache
        self._llm: Any = None
        self._grammars: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._llm is None:
            # Measured on 2 busy cores: passive OpenMP waiting, 1 generation thread and all
            # cores for the prompt hold up best (../shared/MEASUREMENTS.md).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ModelError(
                    'the llama planner needs llama-cpp-python: run `pip install -e ".[embedded]"`,'
                    " or use --planner scripted"
                ) from None
            try:
                self._llm = Llama(
                    model_path=str(self.model_path),
                    n_ctx=self._n_ctx,
                    n_threads=self._n_threads,
                    n_threads_batch=self._n_threads_batch,
                    verbose=False,
                )
            except ValueError as exc:
                raise ModelError(f"llama.cpp cannot load {self.model_path}: {exc}") from None
        return self._llm

    def _grammar(self, task: PlanningTask) -> Any:
        key = tuple(tool.tool_name for tool in task.catalogue)
        if key not in self._grammars:
            from llama_cpp.llama_grammar import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_string(
                build_grammar(task.catalogue), verbose=False
            )
        return self._grammars[key]

    def warm(self, task: PlanningTask) -> None:
        """Load the model and make the catalogue prefix ready now, not on the first request."""
        with self._lock:
            self._prefix_ready(self._load(), build_prefix(task.catalogue))

    def _prefix_ready(self, llm: Any, prefix: str) -> None:
        """Put the prompt prefix in the KV cache: already there, restored from the disk cache
        (keyed by model file, prefix and context size), or evaluated once and saved there."""
        tokens = llm.tokenize(prefix.encode(), special=True)
        if llm.n_tokens >= len(tokens) and list(llm.input_ids[: len(tokens)]) == tokens:
            return
        path = self._prefix_file(prefix)
        if self.prefix_cache and path.is_file() and self._restore_prefix(llm, path, tokens):
            return
        llm.reset()
        llm.eval(tokens)
        if self.prefix_cache:
            self._save_prefix(llm, path, tokens)

    def _prefix_file(self, prefix: str) -> Path:
        stat = self.model_path.stat()
        key = hashlib.sha256(
            "\x1f".join(
                [
                    str(self.model_path),
                    str(stat.st_size),
                    str(stat.st_mtime_ns),
                    str(self._n_ctx),
                    prefix,
                ]
            ).encode()
        ).hexdigest()[:24]
        return cache_dir() / "prefix" / f"{key}.kv"

    def _save_prefix(self, llm: Any, path: Path, tokens: list[int]) -> None:
        import llama_cpp

        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".partial-{os.getpid()}")
        array = (llama_cpp.llama_token * len(tokens))(*tokens)
        written = llama_cpp.llama_state_seq_save_file(
            llm._ctx.ctx, str(partial).encode(), 0, array, len(tokens)
        )
        if written:
            partial.replace(path)
        else:
            partial.unlink(missing_ok=True)

    def _restore_prefix(self, llm: Any, path: Path, tokens: list[int]) -> bool:
        import ctypes

        import llama_cpp

        capacity = len(tokens) + 16
        array = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        llm.reset()
        read = llama_cpp.llama_state_seq_load_file(
            llm._ctx.ctx, str(path).encode(), 0, array, capacity, ctypes.byref(count)
        )
        if not read or list(array[: count.value]) != tokens:
            llm.reset()
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        return True

    def _generate(self, task: PlanningTask, stop: threading.Event) -> Iterator[str]:
        with self._lock:
            llm = self._load()
            prefix = build_prefix(task.catalogue)
            self._prefix_ready(llm, prefix)
            stream = llm.create_completion(
                prefix + build_request(task.request, task.today),
                grammar=self._grammar(task),
                max_tokens=self._max_tokens,
                temperature=0.0,
                stream=True,
            )
            for chunk in stream:
                if stop.is_set():
                    stream.close()
                    return
                yield chunk["choices"][0]["text"]

    async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()

        def produce() -> None:
            try:
                for text in self._generate(task, stop):
                    loop.call_soon_threadsafe(queue.put_nowait, text)
            except BaseException as exc:  # handed to the event loop, raised there
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, _DONE)

        worker = loop.run_in_executor(None, produce)
        parser = StepStreamParser()
        first = True
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, str)
                if first:
                    first = False
                    yield FirstToken()
                for step in parser.feed(item):
                    yield step
        except PlanError as exc:
            raise PlannerError(f"the model wrote an invalid step: {exc}") from None
        finally:
            stop.set()
            await worker
        if not parser.text.rstrip().endswith("]}"):
            raise PlannerError(
                f"the model's plan was cut off after {self._max_tokens} tokens: {parser.text!r}"
            )
