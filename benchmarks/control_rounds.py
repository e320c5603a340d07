"""The control plane's costs in alternating rounds, for a shared machine: each round measures
every contender once, so drift in the machine's load hits them alike, and the figure is the
median of the rounds' medians (docs/benchmarks.md, "The control plane").

    python -m benchmarks.control_rounds            # 10 rounds of decisions, 5 of chains
"""

from __future__ import annotations

import statistics
import sys

from benchmarks import contenders


def _us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def main(rounds: int = 10) -> int:
    decisions: dict[str, list[float]] = {"engine": [], "conditions": [], "no_conditions": []}
    for _ in range(rounds):
        decisions["engine"].append(_us(contenders.policy_cedar_raw(5000)))
        decisions["conditions"].append(_us(contenders.policy_decide(5000, policy="conditions")))
        decisions["no_conditions"].append(_us(contenders.policy_decide(5000)))
    labels = {
        "engine": "policy.floor.cedar_is_authorized",
        "conditions": "policy.decide.argument_conditions",
        "no_conditions": "policy.decide.rule_without_conditions",
    }
    for key, medians in decisions.items():
        print(
            f"{labels[key]:<44} {statistics.median(medians):8.2f} us (rounds {min(medians):.2f}"
            f"-{max(medians):.2f})"
        )
    ratios, plain, ruled = [], [], []
    for _ in range(max(1, rounds // 2)):
        chains = contenders.ember_chain_alternating(4000)
        plain.append(_us(chains["without_control"]))
        ruled.append(_us(chains["policy_audit"]))
        ratios.append(ruled[-1] / plain[-1])
    print(f"{'l3.ember.durable_chain20_per_step':<44} {statistics.median(plain):8.2f} us")
    print(f"{'l3.ember.durable_chain20_policy_audit':<44} {statistics.median(ruled):8.2f} us")
    print(
        f"ratio, median of rounds: {statistics.median(ratios):.3f} (rounds "
        f"{', '.join(f'{r:.2f}' for r in ratios)}; target <= 1.30)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(arg) for arg in sys.argv[1:2])))
