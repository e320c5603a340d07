"""What every flagship's `run.py` shares: a work folder with its `ember.toml`, one run of the
flagship's request with the scripted planner (its plan in the flagship's `plan.json`) or, with
`--planner llama`, planned by the embedded model, resume after a crash, and the latency table
beside the hosted platform's claims.

The same run from the command line, once the work folder exists (`run.py` prints it):

    ember --config WORK/ember.toml --db WORK/ember.db run --planner scripted \\
        --script examples/NAME/plan.json "REQUEST"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ember.app import open_runtime
from ember.config import PlannerSettings, Settings
from ember.executor import RunResult

__all__ = ["Flagship", "latency_table", "main_args"]

# The hosted platform's claims for the same layers (../shared/SOURCE-NOTES.md): printed beside
# ember's figures as the vendor's claims, never as a target met.
CLAIMS = {"l1_ttft": 180, "l2_overhead": 95, "l3_persist": 42, "l4_e2e": 650}
LAYERS = {
    "l1_ttft": "L1 planning, first token",
    "l1_plan": "L1 planning, plan complete",
    "l2_overhead": "L2 tool orchestration",
    "l3_persist": "L3 state persistence",
    "l4_e2e": "L4 end to end",
}
TODAY = date(2026, 3, 2)


def main_args(description: str, default_work: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--work", default=default_work, help="the work folder (made if missing)")
    parser.add_argument("--resume", action="store_true", help="resume the interrupted run")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--planner",
        choices=("scripted", "llama"),
        default="scripted",
        help="scripted: the flagship's plan.json (default); llama: the embedded model plans it",
    )
    return parser.parse_args()


@dataclass
class Flagship:
    """One flagship: its folder (with plan.json), the request, its packs' TOML, and which
    planner plans it (`scripted`: its plan.json; `llama`: the embedded model)."""

    name: str
    request: str
    packs_toml: str
    work: Path
    planner: str = "scripted"

    @property
    def plan(self) -> Path:
        return Path(__file__).parent / self.name / "plan.json"

    def settings(self) -> Settings:
        config = self.work / "ember.toml"
        config.write_text("demo_tools = false\n" + self.packs_toml, encoding="utf-8")
        planner = (
            PlannerSettings(backend="scripted", script=str(self.plan))
            if self.planner == "scripted"
            else PlannerSettings(backend="llama")
        )
        return Settings.load(str(self.work / "ember.db"), str(config), planner=planner)

    def command(self) -> str:
        chosen = f"--script {self.plan} " if self.planner == "scripted" else ""
        return (
            f"ember --config {self.work}/ember.toml --db {self.work}/ember.db run "
            f'--planner {self.planner} {chosen}"{self.request}"'
        )

    def run(self, *, resume: bool = False) -> RunResult:
        """The request, planned and run (or every interrupted run of the work folder resumed,
        returning the last)."""

        async def main() -> RunResult:
            async with open_runtime(self.settings()) as runtime:
                if not resume:
                    return await runtime.run(self.request, today=TODAY)
                interrupted = runtime.interrupted_runs() or _waiting(runtime)
                if not interrupted:
                    raise SystemExit(f"nothing to resume in {self.work}/ember.db")
                results = [await runtime.resume(run_id) for run_id in interrupted]
                return results[-1]

        return asyncio.run(main())

    def report(self, result: RunResult, extra: dict[str, Any], as_json: bool) -> int:
        if as_json:
            print(json.dumps({**result.to_json(), **extra}, ensure_ascii=False, default=str))
        else:
            for step in result.steps:
                print(f"  {step.id}. {step.tool:<20} {step.status.value:<9} {step.ms or 0:8.1f} ms")
                if step.error:
                    print(f"     {step.error}")
            for key, value in extra.items():
                print(f"{key}: {value}")
            print(latency_table(result.latency_ms, self.planner))
            print(f"\nrun {result.run_id}: {result.status.value}\nthe same with the CLI:\n  "
                  f"{self.command()}")  # fmt: skip
        return 0 if result.status.value in ("succeeded", "waiting") else 1


def _waiting(runtime: Any) -> list[str]:
    from ember.journal import RunStatus

    return [s.run_id for s in runtime.journal.runs(100) if s.status is RunStatus.WAITING]


def latency_table(latency_ms: dict[str, float], planner: str = "scripted") -> str:
    """ember's layers beside the hosted platform's claims for the same task."""
    lines = [
        "",
        f"{'layer':<28} {f'ember, {planner} planner':>24} {'hosted platform claims':>24}",
    ]
    for key, label in LAYERS.items():
        claim = f"{CLAIMS[key]} ms" if key in CLAIMS else ""
        lines.append(f"{label:<28} {latency_ms.get(key, 0.0):>21.2f} ms {claim:>24}")
    lines.append(
        "(L4 includes the tools' own work, e.g. reading documents or waiting between polls. The "
        "scripted planner has no model: with the embedded model (--planner llama), L1 adds its "
        "planning time.)"
    )
    return "\n".join(lines)


def fail(message: str) -> None:
    print(message, file=sys.stderr)
    raise SystemExit(2)
