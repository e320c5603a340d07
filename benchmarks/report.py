"""Render a `python -m benchmarks.run --json FILE` result as Markdown tables for docs/benchmarks.md.

python -m benchmarks.report bench-out/all.json
"""

from __future__ import annotations

import json
import sys
from typing import Any


def render(report: dict[str, Any]) -> str:
    lines = []
    if "machine" in report:
        machine = report["machine"]
        lines += [
            f"Machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']}, "
            f"{machine['system']} (load average {machine['load_avg_1m']:.2f} at the start).",
            f"Command: `{report['command']}`",
        ]
    for suite, rows in report["suites"].items():
        if suite == "crash":
            lines += [
                "",
                "### crash",
                "",
                "| trial set | trials | killed | lost | duplicated | "
                "in doubt | resume p50 / p99 ms |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            lines += [
                f"| {r['name']} | {r['trials']} | {r['crashed']} | {r['lost']} | "
                f"{r['duplicated']} | {r['in_doubt']} | {r['resume_ms']['p50']} / "
                f"{r['resume_ms']['p99']} |"
                for r in rows
            ]
            continue
        if suite == "revocation":
            lines += [
                "",
                "### revocation",
                "",
                "| race | revocations | runs | calls allowed | calls denied | stale calls | "
                "stale effects |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            lines += [
                f"| {r['name']} | {r['revocations']} | {r['runs']} | {r['calls_allowed']} | "
                f"{r['calls_denied']} | {r['stale_calls']} | {r['stale_effects']} |"
                for r in rows
            ]
            continue
        lines += [
            "",
            f"### {suite}",
            "",
            "| benchmark | median us | p99 us | x floor | target |",
            "|---|---:|---:|---:|---|",
        ]
        for row in rows:
            if "skipped" in row:
                lines.append(f"| {row['name']} | skipped: {row['skipped']} | | | |")
                continue
            ratio = f"{row['ratio_to_floor']:.2f}" if "ratio_to_floor" in row else "floor"
            target = ""
            if "meets_target" in row:
                goal = (
                    f"<= {row['target_us']:,.0f} us"
                    if "target_us" in row
                    else f"<= {row['target_ratio']:.2f} x floor"
                )
                target = f"{goal}: {'pass' if row['meets_target'] else '**not met**'}"
            lines.append(
                f"| {row['name']} | {row['median_us']:,.2f} | {row['p99_us']:,.2f} | "
                f"{ratio} | {target} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    with open(sys.argv[1]) as handle:
        print(render(json.load(handle)))
