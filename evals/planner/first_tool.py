"""How often the embedded planner's first tool is right: the decoder's first step for each task
(the no-tool band off, one step), against the tools the expected plans can start with (a step
that uses no earlier result). Faster than a whole evaluation (about 3 s a task on 2 cores), and
it isolates the first choice, where plans on a catalogue the planner has not seen go wrong
(docs/benchmarks.md, "The first tool on an unseen catalogue").

    python evals/planner/first_tool.py --tasks evals/planner/ops.jsonl \
        --catalog evals/planner/ops-catalog.json [--reverse] [--examples FILE]

`--reverse` lists the catalogue's tools in the prompt in reverse order; `--examples` shows the
worked examples in FILE (JSON Lines: {"today", "request", "steps"}) after the tools, instead of
the demo catalogue's before them. Prints one line a task (its id, the tool chosen, the first-choice
margin, OK or the tools it could start with) and the count (`--count-only`: the count alone,
for a held-out set); no request's text.
"""

from __future__ import annotations

import argparse
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import msgspec

from ember.planner import prompt
from ember.planner.base import PlanningTask
from ember.planner.llama import LlamaPlanner
from ember.tools.demo import demo_catalog
from ember.tools.descriptor import ToolDescriptor


def first_step(planner: LlamaPlanner, task: PlanningTask) -> tuple[str | None, float | None]:
    """The planner's first tool for `task` (None: `done`), and its first-choice margin."""
    steps = planner._decode_with_model(
        msgspec.structs.replace(task, max_steps=1), lambda event: None
    )
    return (steps[0].tool if steps else None), planner.last_margin


def starts(task: dict[str, Any]) -> set[str]:
    """The tools an expected plan of `task` can start with: its steps that use no earlier
    step's result and wait for none."""
    return {
        step["tool"]
        for plan in task["expected"]
        for step in plan["steps"]
        if not re.search(r"\$\d", json.dumps(step["args"])) and not step.get("after")
    }


def show_examples(path: Path) -> None:
    """Show the worked examples in `path` after the tools, for a catalogue that has their
    tools, instead of the demo catalogue's examples before the tools."""
    lines = path.read_text(encoding="utf-8").splitlines()
    examples = [
        (item["today"], item["request"], item["steps"])
        for item in map(json.loads, filter(str.strip, lines))
    ]
    fixed = prompt.compact_system_text

    def fits(catalogue: Any) -> bool:
        names = {tool.tool_name for tool in catalogue}
        return all(step["tool"] in names for example in examples for step in example[2])

    def system_text(catalogue: Any) -> str:
        return (
            prompt._with_own_examples(catalogue, examples) if fits(catalogue) else fixed(catalogue)
        )

    from ember.planner import llama

    shared = prompt.build_shared_head
    prompt.compact_system_text = system_text
    llama.build_shared_head = lambda catalogue: "" if fits(catalogue) else shared(catalogue)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", required=True, help="a task file (JSON Lines)")
    parser.add_argument("--catalog", help="the tool catalogue JSON (default: the demo tools')")
    parser.add_argument("--reverse", action="store_true", help="list the tools in reverse")
    parser.add_argument("--examples", type=Path, help="worked examples to show instead")
    parser.add_argument(
        "--count-only", action="store_true", help="print the count only (for a held-out set)"
    )
    args = parser.parse_args()
    catalogue = tuple(demo_catalog())
    if args.catalog:
        raw = json.loads(Path(args.catalog).read_text(encoding="utf-8"))
        catalogue = tuple(ToolDescriptor.from_json(item) for item in raw)
    if args.reverse:
        catalogue = catalogue[::-1]
    if args.examples:
        show_examples(args.examples)
    planner = LlamaPlanner(shapes=False)
    planner.abstain_band = None  # the band off: the model's own first choice, never checked
    right = judged = 0
    for line in Path(args.tasks).read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        planning = PlanningTask(task["request"], date.fromisoformat(task["today"]), catalogue)
        tool, margin = first_step(planner, planning)
        possible = starts(task)
        if any(not plan["steps"] for plan in task["expected"]):
            verdict = "(no tool expected)"
        else:
            judged += 1
            right += tool in possible
            verdict = "OK" if tool in possible else "X " + ",".join(sorted(possible))
        if not args.count_only:
            print(f"{task['id']}: {tool} margin {margin or 0:.2f} {verdict}", flush=True)
    print(f"first tool right: {right}/{judged} (tasks with a plan)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
