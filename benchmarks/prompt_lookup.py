"""Would prompt-lookup drafts (the planner issue's lever 4) pay? Measured before building them.

Plans the dev tasks with the embedded default model, recording every token the decoder samples
freely (`_Cursor.sample`: values; choices and forced text are already read in batches). For each
sampled token it simulates a draft: up to `--draft` tokens continuing the latest earlier
occurrence of the last `--ngram` tokens in the prompt and plan so far, accepted while it equals
what greedy decoding chose (so the plan is the same by construction). Then it measures what a
pass of k tokens costs after a prompt of the same length, and prints both.

    python -m benchmarks.prompt_lookup --tasks ../shared/planner-tasks/dev.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import numpy as np

from ember.planner import decoding
from ember.planner.evaluate import evaluate_planner, load_tasks
from ember.planner.llama import LlamaPlanner
from ember.tools.demo import demo_catalog

Sampled = list[tuple[list[int], list[int]]]  # (context before the value, its sampled tokens)


def _recording_sample(records: Sampled) -> Any:
    """`_Cursor.sample`, unchanged but for recording the context and the tokens it chose."""

    def sample(
        self: Any, kind: str, closing: bytes, limit: int, *, openers: bool = False
    ) -> tuple[str, bool]:
        head = self._heal()
        context = [*self.llm.input_ids[: self.llm.n_tokens].tolist(), *self.tokens]
        chosen: list[int] = []
        value = b""
        allowed = self.vocab.masks[kind] | self.vocab.masks["opener"] & openers
        closers = {bytes([byte]) for byte in closing}
        for byte in closers:
            allowed[self.vocab.starting_with(byte)] = True
        opened = False
        for _ in range(limit):
            logits = self._logits()
            if head:
                pool = [
                    t
                    for t in self.vocab.starting_with(head)
                    if self._classify(self.vocab.pieces[t][len(head) :], kind, closers, openers)
                ]
                if not pool:
                    break
                token = max(pool, key=lambda t: logits[t])
            else:
                token = int(np.argmax(np.where(allowed, logits, -np.inf)))
            piece = self.vocab.pieces[token][len(head) :]
            verdict = self._classify(piece, kind, closers, openers)
            if verdict == "close":
                break
            self.tokens.append(token)
            chosen.append(token)
            value += piece
            head = b""
            if len(value) >= decoding._LENGTHS.get(kind, len(value) + 1):
                break
            if verdict == "open":
                opened = True
                break
        self.text = head
        records.append((context, chosen))
        return value.decode("utf-8", errors="replace"), opened

    return sample


def drafted_passes(context: list[int], chosen: list[int], ngram: int, draft: int) -> list[int]:
    """The draft size verified in each pass that producing `chosen` would take with drafts."""
    seen = list(context)
    done = 0
    passes = []
    while done < len(chosen):
        key = seen[-ngram:]
        proposal: list[int] = []
        for start in range(len(seen) - ngram - 1, -1, -1):
            if seen[start : start + ngram] == key:
                proposal = seen[start + ngram : start + ngram + draft]
                break
        accepted = 0
        while (
            accepted < len(proposal)
            and done + accepted < len(chosen)
            and proposal[accepted] == chosen[done + accepted]
        ):
            accepted += 1
        passes.append(len(proposal))
        seen.extend(chosen[done : done + accepted + 1])
        done += accepted + 1
    return passes


def pass_cost_ms(planner: LlamaPlanner, position: int, sizes: list[int]) -> dict[int, float]:
    """Median time of a pass of k tokens after `position` tokens, for each k in `sizes`."""
    llm = planner._load()
    llm.reset()
    tokens = llm.tokenize(b"The quick brown fox jumps over the lazy dog. " * 400)
    llm.eval(tokens[:position])
    samples: dict[int, list[float]] = {k: [] for k in sizes}
    for _ in range(6):
        for k in sizes:
            start = time.perf_counter()
            llm.eval(tokens[position : position + k])
            samples[k].append((time.perf_counter() - start) * 1000)
            llm.n_tokens = position
    llm.reset()
    return {k: round(statistics.median(v), 1) for k, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--ngram", type=int, default=2)
    parser.add_argument("--draft", type=int, default=4)
    args = parser.parse_args()
    records: Sampled = []
    decoding._Cursor.sample = _recording_sample(records)  # type: ignore[method-assign]
    planner = LlamaPlanner()
    asyncio.run(evaluate_planner(planner, load_tasks(args.tasks), demo_catalog()))
    passes = [drafted_passes(c, t, args.ngram, args.draft) for c, t in records if t]
    position = int(statistics.median(len(c) for c, _ in records))
    cost = pass_cost_ms(planner, position, list(range(1, args.draft + 2)))
    sampled = sum(len(t) for _, t in records)
    with_drafts = sum(cost[1 + d] for p in passes for d in p)
    report = {
        "values_sampled": len(records),
        "tokens_sampled": sampled,
        "passes_without_drafts": sampled,
        "passes_with_drafts": sum(len(p) for p in passes),
        "passes_carrying_a_draft": sum(1 for p in passes for d in p if d),
        "context_tokens_median": position,
        "pass_ms_by_tokens": cost,
        "ms_without_drafts": round(sampled * cost[1]),
        "ms_with_drafts": round(with_drafts),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
