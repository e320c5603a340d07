"""Would prompt-lookup drafts (the planner issue's lever 4) pay? Measured before building them.

Plans the dev tasks with the embedded default model, recording every token the decoder samples
freely (`Cursor.sample`: values; choices and forced text are already read in batches). For each
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

from ember.measure.planner_eval import evaluate_planner, load_tasks
from ember.planner import vocabulary
from ember.planner.llama import LlamaPlanner
from ember.tools.demo import demo_catalog

Sampled = list[tuple[list[int], list[int]]]  # (context before the value, its sampled tokens)


class _Recorded(list[int]):
    """A cursor's pending tokens that note each token the decoder chooses (`append`; forced
    text arrives through `extend`) and, at the first, the context it was chosen in."""

    def __init__(self, pending: list[int], llm: Any) -> None:
        super().__init__(pending)
        self.llm = llm
        self.context: list[int] | None = None
        self.chosen: list[int] = []

    def append(self, token: int) -> None:
        if self.context is None:
            self.context = [*self.llm.input_ids[: self.llm.n_tokens].tolist(), *self]
        self.chosen.append(token)
        super().append(token)


def _recording_sample(records: Sampled) -> Any:
    """`Cursor.sample`, recording the context and the tokens it chose."""
    sample = vocabulary.Cursor.sample

    def recording(self: Any, *args: Any, **kwargs: Any) -> tuple[str, bool]:
        self.tokens = recorded = _Recorded(self.tokens, self.llm)
        try:
            return sample(self, *args, **kwargs)
        finally:
            self.tokens = list(recorded)
            records.append((recorded.context or [], recorded.chosen))

    return recording


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
    vocabulary.Cursor.sample = _recording_sample(records)  # type: ignore[method-assign]
    planner = LlamaPlanner()
    asyncio.run(evaluate_planner(planner, load_tasks(args.tasks), demo_catalog()))
    passes = [drafted_passes(c, t, args.ngram, args.draft) for c, t in records if t]
    position = int(statistics.median(len(c) for c, t in records if t))
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
