"""Fit score, total cost of ownership, risk bands and sensitivity (pure arithmetic, shown).

Fit rule: the source gives weights but verdict thresholds on a 0-30 scale (six dimensions x 5).
ember's total is 6 x the weighted mean, which keeps the 0-30 scale, so the thresholds keep
their meaning, and makes the weights count. The unweighted sum is reported beside it.
Verdicts: total >= 22: the hosted platform first; 15 < total < 22: evaluate in a pilot first;
total <= 15: self-host.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ember.assess.model import DIMENSIONS, Candidate, Scenario

__all__ = [
    "FIT_RULE",
    "CostLine",
    "FitResult",
    "TcoResult",
    "fit",
    "risk_band",
    "sensitivity",
    "tco",
    "verdict",
]

FIT_RULE = (
    "total = 6 x weighted mean of the six 0-5 scores (weights add up to 1), so the "
    "source's 0-30 thresholds keep their meaning and the weights count; the unweighted "
    "sum is shown beside it"
)
HOSTED_AT, SELF_HOST_AT = 22.0, 15.0


def verdict(total: float) -> str:
    if total >= HOSTED_AT:
        return "hosted platform first"
    if total <= SELF_HOST_AT:
        return "self-host"
    return "pilot first (evaluate carefully)"


class FitResult(msgspec.Struct, frozen=True):
    candidate: str
    weighted_total: float
    unweighted_total: float
    verdict: str
    contributions: dict[str, float]  # 6 x weight x score, per dimension


def fit(scenario: Scenario, candidate: Candidate) -> FitResult:
    scores = msgspec.structs.asdict(candidate.fit)
    weights = msgspec.structs.asdict(scenario.weights)
    contributions = {dim: 6 * weights[dim] * scores[dim] for dim in DIMENSIONS}
    weighted = round(sum(contributions.values()), 6)
    return FitResult(
        candidate.name,
        weighted,
        round(sum(scores.values()), 6),
        verdict(weighted),
        {k: round(v, 6) for k, v in contributions.items()},
    )


class CostLine(msgspec.Struct, frozen=True):
    item: str
    formula: str
    total: float


class TcoResult(msgspec.Struct, frozen=True):
    candidate: str
    horizon_years: int
    lines: list[CostLine]
    total: float
    api_monthly: float  # the first month's API fee
    monthly: list[float]  # every month's spend (the one-off build in month 1)
    stated_total: float | None
    consistent: bool | None  # None: nothing stated
    note: str = ""


def tco(scenario: Scenario, candidate: Candidate) -> TcoResult:
    costs = candidate.costs
    months = 12 * scenario.horizon_years
    if costs.api_monthly is not None:
        api = costs.api_monthly
        api_formula = f"{api:,.2f} a month"
    else:
        assert costs.requests_per_day is not None
        assert costs.tokens_per_request is not None
        assert costs.price_per_million_tokens is not None
        api = (
            costs.requests_per_day
            * costs.tokens_per_request
            / 1e6
            * costs.price_per_million_tokens
            * scenario.days_per_month
        )
        api_formula = (
            f"{costs.requests_per_day:,.0f} requests/day x "
            f"{costs.tokens_per_request:,.0f} tokens / 1e6 x "
            f"{costs.price_per_million_tokens:g} per M tokens x "
            f"{scenario.days_per_month:g} days = {api:,.2f} a month"
        )
    growth = costs.growth_monthly
    api_by_month = [api * (1 + growth) ** m for m in range(months)]
    api_total = sum(api_by_month)
    if growth:
        api_formula += f", growing {growth:.1%} a month, summed over {months} months"
    else:
        api_formula += f" x {months} months"
    lines = [
        CostLine("API fees", api_formula, api_total),
        CostLine(
            "infrastructure",
            f"{costs.infrastructure_monthly:,.2f} a month x {months} months",
            costs.infrastructure_monthly * months,
        ),
        CostLine(
            "operations staff",
            f"{costs.operations_monthly:,.2f} a month x {months} months",
            costs.operations_monthly * months,
        ),
        CostLine(
            "compliance audits",
            f"{costs.compliance_yearly:,.2f} a year x {scenario.horizon_years} years",
            costs.compliance_yearly * scenario.horizon_years,
        ),
        CostLine("architecture build", f"{costs.build_one_off:,.2f} once", costs.build_one_off),
    ]
    monthly = [
        api_by_month[m]
        + costs.infrastructure_monthly
        + costs.operations_monthly
        + (costs.compliance_yearly if m % 12 == 0 else 0.0)
        + (costs.build_one_off if m == 0 else 0.0)
        for m in range(months)
    ]
    total = round(sum(line.total for line in lines), 2)
    consistent = None
    note = ""
    if costs.stated_total is not None:
        consistent = abs(costs.stated_total - total) <= max(1.0, 0.005 * total)
        if not consistent:
            note = (
                f"stated total {costs.stated_total:,.0f} does not follow from the items, "
                f"which add up to {total:,.0f} ({total - costs.stated_total:+,.0f})"
            )
    return TcoResult(
        candidate.name,
        scenario.horizon_years,
        [msgspec.structs.replace(line, total=round(line.total, 2)) for line in lines],
        total,
        round(api, 2),
        [round(m, 2) for m in monthly],
        costs.stated_total,
        consistent,
        note,
    )


def risk_band(score: float) -> str:
    """red 8-10, amber 4-7, green 0-3 (scores between bands go to the higher one)."""
    if score >= 8:
        return "red"
    if score > 3:
        return "amber"
    return "green"


def sensitivity(scenario: Scenario, candidate: Candidate) -> dict[str, Any] | None:
    """The smallest single change of one fit score that changes the verdict, or None."""
    result = fit(scenario, candidate)
    weights = msgspec.structs.asdict(scenario.weights)
    scores = msgspec.structs.asdict(candidate.fit)
    best: dict[str, Any] | None = None
    epsilon = 1e-6
    for target in (HOSTED_AT, SELF_HOST_AT + epsilon, SELF_HOST_AT, HOSTED_AT - epsilon):
        if verdict(target) == result.verdict:
            continue
        for dim in DIMENSIONS:
            if weights[dim] == 0:
                continue
            needed = (target - result.weighted_total) / (6 * weights[dim])
            new = scores[dim] + needed
            if 0 <= new <= 5 and (best is None or abs(needed) < abs(best["change"])):
                best = {
                    "dimension": dim,
                    "from": scores[dim],
                    "to": round(new, 3),
                    "change": round(needed, 3),
                    "new_verdict": verdict(target),
                }
    return best
