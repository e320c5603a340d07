"""L4 before and after issue 26 in one run: the travel example (an action-only request: no
answer is written) on the base commit's code and on this checkout's, alternately, each in its
own process; and a question's L4 with its answer's share (`l1_answer`).

    python -m benchmarks.answers_l4 --base ce69b5e [--rounds 2] [--json out.json]

The base commit's tree is exported (`git archive`) to a temporary folder and put first on
`PYTHONPATH`, so the same interpreter and packages run both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
_CHILD = """
import json, sys
from benchmarks.contenders import run_layers
planner, n = sys.argv[1], int(sys.argv[2])
series = run_layers(n, planner=planner)
print(json.dumps({k: [v * 1000 for v in vs] for k, vs in series.items()}))
"""
_QUESTION = """
import asyncio, json, sys, tempfile
from datetime import date
from pathlib import Path
from ember import Runtime, SQLiteJournal
from ember.planner.llama import LlamaPlanner
from ember.tools.demo import DemoWorld, demo_registry
n = int(sys.argv[1])
cities = ["Oslo", "Paris", "Lisbon", "Madrid", "Rome", "Berlin"]
out = {"l4_e2e": [], "l1_plan": [], "l1_answer_ttft": [], "l1_answer": []}
with tempfile.TemporaryDirectory() as tmp:
    journal = SQLiteJournal(Path(tmp) / "j.db")
    runtime = Runtime(demo_registry(DemoWorld(Path(tmp) / "demo")), LlamaPlanner(), journal)
    async def main():
        for i in range(n + 1):
            request = f"What's the weather in {cities[i % len(cities)]} on 2026-03-05?"
            result = await runtime.run(request, today=date(2026, 3, 2))
            if i:  # the first warms the model and its prefixes
                for key in out:
                    out[key].append(result.latency_ms.get(key, 0.0))
    asyncio.run(main())
print(json.dumps(out))
"""


def _run(code: str, args: list[str], path: Path | None) -> dict[str, list[float]]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = f"{path / 'src'}:{path}"
    else:
        env["PYTHONPATH"] = f"{ROOT / 'src'}:{ROOT}"
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=path or ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scripted", type=int, default=30, help="scripted runs per process")
    parser.add_argument("--llama", type=int, default=5, help="llama runs per process")
    parser.add_argument("--question", type=int, default=4, help="question runs (0: none)")
    parser.add_argument("--json", help="also write the samples here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ember-base-") as tmp:
        base = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        samples: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for label, path in (("base", base), ("branch", None)):
                for planner, n in (("scripted", args.scripted), ("llama", args.llama)):
                    if n:
                        series = _run(_CHILD, [planner, str(n)], path)
                        samples.setdefault(f"{planner}.{label}", []).extend(series["l4_e2e"])
        if args.question:
            question = _run(_QUESTION, [str(args.question)], None)
            for key, values in question.items():
                samples[f"question.llama.{key}"] = values
    table: dict[str, Any] = {
        name: {"median_ms": round(statistics.median(v), 2), "n": len(v)}
        for name, v in samples.items()
    }
    for name, row in table.items():
        print(f"{name:<32} median {row['median_ms']:>12,.2f} ms  (n={row['n']})")
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": samples, "table": table}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
