"""The embedded planner: llama.cpp in this process, decoding plans in ember's compact syntax.

One `Llama` object is kept alive, so the prompt prefix (instructions + catalogue + examples) is
evaluated once and reused by every later request; it is also saved to disk, so a new process
restores it instead of evaluating it again. The calendar that follows it changes once a day.
The plan is decoded by `ember.planner.decoding.PlanDecoder` in a worker thread; each step is
handed to the event loop as soon as it is complete, so the executor can start it.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from ember.errors import ModelError
from ember.plan import Step
from ember.planner.answering import build_answer_prompt, write_answer
from ember.planner.base import AnswerTask, FirstToken, PlanEvent, PlanningTask, stream_from_thread
from ember.planner.decoding import MAX_STEPS, PlanDecoder, check_rules
from ember.planner.grounding import Grounds
from ember.planner.models import cache_dir, resolve_model, shipped_model
from ember.planner.prompt import (
    build_dated,
    build_prefix,
    build_request,
    build_round,
    build_shared_head,
)
from ember.planner.shapes import Shape, ShapeCache, shape_of
from ember.planner.vocabulary import VOCABULARY_FORMAT, Cursor, Logits, Vocabulary
from ember.progress import Progress

__all__ = ["LlamaModel", "LlamaPlanner"]

# How prompt states are read (`LlamaPlanner._prefix_ready`): part of the disk cache's keys, so
# that a state read another way (before 2026-12-06: on from where the cached prompt differed)
# is never restored.
_READING = "parts-whole-1"


class LlamaModel:
    """A llama-cpp-python `Llama` as the decoder's `LanguageModel`."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def tokenize(self, text: bytes, *, special: bool) -> list[int]:
        tokens: list[int] = self.llm.tokenize(text, add_bos=False, special=special)
        return tokens

    def eval(self, tokens: Sequence[int]) -> None:
        self.llm.eval(tokens)

    def rewind(self, count: int) -> None:
        self.llm.n_tokens -= count  # llama.cpp drops the KV cache after it on the next eval

    def logits(self) -> Logits:
        import numpy as np

        pointer = ctypes.cast(self.llm._ctx.get_logits(), ctypes.POINTER(ctypes.c_float))
        return np.ctypeslib.as_array(pointer, (self.llm.n_vocab(),))


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
        prefix_cache: bool = True,
        abstain_band: tuple[float, float] | None = None,
        rules_off: frozenset[str] = frozenset(),
        shapes: bool = True,
    ) -> None:
        self.model_path: Path = resolve_model(model)
        shipped = shipped_model(model)
        self.abstain_band = (
            abstain_band
            if abstain_band is not None
            else (shipped.abstain_band if shipped is not None else None)
        )
        check_rules(rules_off)
        self.rules_off = rules_off  # decoding rules switched off, to measure them (RULES)
        # plans by request shape: a request of a shape planned before needs no model pass
        self.shapes = ShapeCache() if shapes else None
        self.shape_hits = 0
        self._n_ctx = n_ctx
        # Every core: on 2 quiet cores a pass of the 1.5B model after a ~1,200-token prompt
        # takes 117 ms with 2 threads against 141 ms with 1; with one core busy elsewhere the two
        # are within 5 % (docs/benchmarks.md, "Threads").
        self._n_threads = n_threads or (os.cpu_count() or 2)
        self._n_threads_batch = n_threads_batch or (os.cpu_count() or 2)
        self.prefix_cache = prefix_cache
        self._llm: Any = None
        self._vocab: Vocabulary | None = None
        self._lock = threading.Lock()
        self._kv_end = 0  # the KV cache holds input_ids[:_kv_end], maybe past llm.n_tokens
        # Where a part `_prefix_ready` read (or restored) ends: a state the cache holds is one
        # read as its own part only if it ends at one of these (not inside a longer part).
        self._read_ends: set[int] = set()
        self.typed_session: str | None = None  # whose typed-ahead request the cache holds
        self.reused_tokens = 0  # of the last plan's request, how many were already read
        self.last_margin: float | None = None  # the last plan's first-choice margin
        self.last_passes: int | None = None  # the last plan's model passes after the request
        self.last_end_margins: list[float] = []  # after each step, logit(a step) - logit(done)

    def _load(self) -> Any:
        if self._llm is None:
            # Passive OpenMP waiting: threads sleep instead of spinning when a core is busy
            # elsewhere (../shared/MEASUREMENTS.md).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            from llama_cpp import Llama

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

    def warm(self, task: PlanningTask) -> None:
        """Load the model and make the catalogue prefix ready now, not on the first request."""
        with self._lock:
            llm = self._load()
            self._context_ready(llm, task)
            self._vocabulary(llm)

    def prefill(self, session_id: str, task: PlanningTask) -> int:
        """Read the request typed so far (`task.request`, unfinished) into the model now, as
        if it were submitted: its whole prompt but the last token, which `plan()` reads again
        for the first choice's logits. Submitted as it stands, the plan then starts after one
        single-token pass; typed further, what follows the first changed token (the prompt's
        closing included) is read again by the next prefill. Call it as the user types (it
        blocks while the model reads; from async code run it in a thread). Returns how many
        tokens it read. The cache holds one typed-ahead request: another session's prefill
        replaces it, and `plan()` reuses what of it matches its own prompt, token by token.
        The plan is the model's over the same tokens, read in other batches (a keystroke at a
        time): its logits can differ in the last digits from a plan read whole, so a choice
        between two near-equal options may go the other way."""
        with self._lock:
            llm = self._load()
            self._context_ready(llm, task)
            self._vocabulary(llm)
            # The last word too: if typing changes how the end is tokenized, only the tokens
            # from the first that differs are read again.
            numbers = "numbers" not in self.rules_off
            prompt = build_request(task.request, task.today, numbers=numbers).encode()
            typed = llm.tokenize(prompt, add_bos=False, special=True)[:-1]
            reused = self._reuse_typed(llm, typed)
            if reused < len(typed):
                llm.eval(typed[reused:])
            self._kv_end = llm.n_tokens
            self.typed_session = session_id
            return len(typed) - reused

    def _reuse_typed(self, llm: Any, tokens: list[int]) -> int:
        """Skip over the start of `tokens` that the KV cache already holds right after the
        current context (read by an earlier `prefill`); returns how many were skipped."""
        start = llm.n_tokens
        held = llm.input_ids[start : max(start, self._kv_end)].tolist()
        same = next(
            (i for i, (a, b) in enumerate(zip(held, tokens, strict=False)) if a != b),
            min(len(held), len(tokens)),
        )
        llm.n_tokens = start + same
        return same

    def _context_ready(self, llm: Any, task: PlanningTask) -> None:
        """Leave exactly the prompt's prefix and dated part in the KV cache, so the request is
        evaluated right after them."""
        prefix = build_prefix(task.catalogue)
        head = build_shared_head(task.catalogue)
        starts = [part for part in (head, prefix) if part]
        self._prefix_ready(llm, [*starts, prefix + build_dated(task.today)], daily=True)

    def _prefix_ready(self, llm: Any, starts: Sequence[str], *, daily: bool = False) -> None:
        """Put `starts[-1]` in the KV cache, each of `starts` (each a start of the next) read
        whole after the one before it and the first from the prompt's start: the same tokens
        read in other batches give other logits, and a plan must depend neither on the
        requests nor on the catalogues before it. A state already in the cache is kept where
        it was read as a part of its own (not inside a longer one), and a state read once is
        saved to the disk cache (keyed by model file, `starts` and context
        size) and restored from it by later processes; a `daily` one (the calendar after the
        prefix) replaces there the other days' states of the same prefix."""
        text = starts[-1]
        tokens = llm.tokenize(text.encode(), special=True)
        common = self._cached_tokens(llm, tokens)
        if common < len(tokens) or len(tokens) not in self._read_ends:
            base = starts[-2] if len(starts) > 1 else None
            path = self._prefix_file(starts, daily=daily)
            if self.prefix_cache and path.is_file() and self._restore_prefix(llm, path, tokens):
                # saved as `_prefix_ready` reads: each start ends a part read whole
                ends = (len(llm.tokenize(start.encode(), special=True)) for start in starts[:-1])
                self._read_ends.update(ends)
                return
            common = 0
            if base is not None:
                based = len(llm.tokenize(base.encode(), special=True))
                self._prefix_ready(llm, starts[:-1])
                common = min(self._cached_tokens(llm, tokens), based)
            self._forget_after(llm, common)
            progress = Progress(f"reading {len(tokens) - common} prompt tokens into the model")
            llm.eval(tokens[common:])
            self._kv_end = llm.n_tokens
            self._read_ends.add(len(tokens))
            if self.prefix_cache:
                self._save_prefix(llm, path, tokens)
            progress.finish("kept for later runs" if self.prefix_cache else "done")
        llm.n_tokens = len(tokens)

    def _forget_after(self, llm: Any, count: int) -> None:
        """Keep the first `count` tokens of the KV cache; what follows is read anew."""
        llm.n_tokens = count  # llama.cpp drops the cache after it on the next eval
        self._read_ends = {end for end in self._read_ends if end <= count}

    @staticmethod
    def _cached_tokens(llm: Any, tokens: list[int]) -> int:
        """How many of `tokens` the KV cache already holds, from the start."""
        cached = list(llm.input_ids[: min(llm.n_tokens, len(tokens))])
        differ = (i for i, (a, b) in enumerate(zip(cached, tokens, strict=False)) if a != b)
        return next(differ, len(cached))

    def _cache_file(self, kind: str, suffix: str, *parts: str) -> Path:
        """A file in the cache for this model file (path, size, mtime) and `parts`."""
        stat = self.model_path.stat()
        model = [str(self.model_path), str(stat.st_size), str(stat.st_mtime_ns)]
        key = hashlib.sha256("\x1f".join([*model, *parts]).encode()).hexdigest()[:24]
        return cache_dir() / kind / f"{key}{suffix}"

    def _prefix_file(self, starts: Sequence[str], *, daily: bool = False) -> Path:
        """The saved state of `starts[-1]` read as `_prefix_ready` reads `starts`. The states
        of one prefix's days share a name's start, so saving one removes the others."""
        path = self._cache_file("prefix", ".kv", _READING, str(self._n_ctx), *starts)
        if not daily:
            return path
        family = self._cache_file("prefix", "", _READING, str(self._n_ctx), *starts[:-1]).name
        return path.with_name(f"{family}-{path.name}")

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
            if "-" in path.stem:  # a dated state: the family's older days are of no more use
                family = path.stem.split("-")[0]
                for old in path.parent.glob(f"{family}-*.kv"):
                    if old != path:
                        old.unlink(missing_ok=True)
        else:
            partial.unlink(missing_ok=True)

    def _restore_prefix(self, llm: Any, path: Path, tokens: list[int]) -> bool:
        import ctypes

        import llama_cpp

        capacity = len(tokens) + 16
        array = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        llm.reset()
        self._kv_end = 0
        self._read_ends = set()
        read = llama_cpp.llama_state_seq_load_file(
            llm._ctx.ctx, str(path).encode(), 0, array, capacity, ctypes.byref(count)
        )
        if not read or list(array[: count.value]) != tokens:
            llm.reset()
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = self._kv_end = len(tokens)
        self._read_ends = {len(tokens)}
        return True

    def _vocabulary(self, llm: Any) -> Vocabulary:
        """The model's vocabulary and token masks: built once (~1.5 s), then loaded from the
        cache (a few ms) by every later process."""
        if self._vocab is None:
            path = self._cache_file("vocab", ".npz", VOCABULARY_FORMAT)
            self._vocab = Vocabulary.load(path) if path.is_file() else None
            if self._vocab is None:
                progress = Progress("building the vocabulary's token masks (once per model)")
                # special tokens render as empty: never offered as a piece of text
                self._vocab = Vocabulary([llm.detokenize([t]) for t in range(llm.n_vocab())])
                self._vocab.save(path)
                progress.finish(f"saved to {path}")
        return self._vocab

    def _decode(self, task: PlanningTask, emit: Callable[[PlanEvent], None]) -> list[Step]:
        shape = shape_of(task.request, task.today)
        key = Shape(" ".join(t.tool_name for t in task.catalogue) + "\n" + shape.key, shape.values)
        if self.shapes is not None and task.attempt == 0:
            recalled = self._recall(key, task)
            if recalled is not None:
                emit(FirstToken())
                for step in recalled:
                    emit(step)
                return recalled
        steps = self._decode_with_model(task, emit)
        if self.shapes is not None and task.attempt == 0:
            self.shapes.remember(key, steps)
        return steps

    def _recall(self, key: Shape, task: PlanningTask) -> list[Step] | None:
        """The plan of a request of the same shape, its values this request's, if every step
        still passes the decoder's grounding rules (`Grounds.repair`) unchanged."""
        assert self.shapes is not None
        recalled = self.shapes.recall(key)
        if recalled is None:
            return None
        grounds = Grounds(task.catalogue, task.request, task.today, off=self.rules_off)
        if any(grounds.repair(step, recalled[:n]) != step for n, step in enumerate(recalled)):
            return None
        self.shape_hits += 1
        self.last_passes, self.last_margin, self.last_end_margins = 0, None, []
        return recalled

    def _decode_with_model(
        self, task: PlanningTask, emit: Callable[[PlanEvent], None], *, round_: bool = False
    ) -> list[Step]:
        with self._lock:
            llm = self._load()
            self._context_ready(llm, task)
            decoder = PlanDecoder(
                Cursor(LlamaModel(llm), self._vocabulary(llm)),
                task.catalogue,
                today=task.today,
                request=task.request,
                abstain=self.abstain_band,
                off=self.rules_off,
            )
            numbers = "numbers" not in self.rules_off
            prompt = (
                build_round(task, numbers=numbers)
                if round_
                else build_request(task.request, task.today, numbers=numbers)
            )
            tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            # What a prefill already read is skipped; the last token is read again for logits.
            # Without one, the request is read whole, even where it starts as the last one did:
            # read in other batches, the same tokens give other logits (margins differ by
            # tenths), and the same request must get the same plan whatever came before it.
            typed = self.typed_session is not None
            reused = self.reused_tokens = self._reuse_typed(llm, tokens[:-1]) if typed else 0
            try:
                return decoder.decode(
                    tokens[reused:],
                    on_step=emit,
                    on_first_token=lambda: emit(FirstToken()),
                    earlier=task.earlier if round_ else (),
                    failed=task.failed if round_ else (),
                    max_steps=task.max_steps or MAX_STEPS,
                )
            finally:
                self._kv_end = llm.n_tokens
                self.typed_session = None
                self.last_margin = decoder.first_margin
                self.last_passes = decoder.passes
                self.last_end_margins = decoder.end_margins

    async def plan(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        async for event in stream_from_thread(functools.partial(self._decode, task)):
            yield event

    async def plan_on(self, task: PlanningTask) -> AsyncIterator[PlanEvent]:
        """Add steps after `task.earlier`, seeing their results (`task.observations`) as
        fenced data; the grounding rules hold as for any plan: a value a result holds is taken
        by reference to a typed field, never copied from its free text."""
        decode = functools.partial(self._decode_with_model, task, round_=True)
        async for event in stream_from_thread(decode):
            yield event

    def _write_answer(self, task: AnswerTask, on_text: Callable[[str], None]) -> str:
        """Write the answer (`ember.planner.answering`) in the model's context, reusing what
        the KV cache holds of its prompt; the next plan restores its own prefix."""
        with self._lock:
            llm = self._load()
            vocab = self._vocabulary(llm)
            tokens = llm.tokenize(build_answer_prompt(task).encode(), add_bos=False, special=True)
            common = min(self._cached_tokens(llm, tokens), len(tokens) - 1)
            self._forget_after(llm, common)
            try:
                return write_answer(LlamaModel(llm), vocab, tokens[common:], on_text)
            finally:
                self._kv_end = llm.n_tokens
                self.typed_session = None

    async def answer(self, task: AnswerTask) -> AsyncIterator[str]:
        """Stream the run's answer as the model writes it (in a worker thread)."""
        async for text in stream_from_thread(functools.partial(self._write_answer, task)):
            yield text
