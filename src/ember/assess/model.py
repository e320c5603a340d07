"""The assessment input: candidates, fit scores, costs and risks, parsed from TOML with every
field checked (a bad value's error names it, e.g. `$.candidates[1].fit.task_atomicity`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec

from ember.errors import UserError

__all__ = [
    "DIMENSIONS",
    "SOURCE_RISKS",
    "SOURCE_WEIGHTS",
    "Candidate",
    "Costs",
    "Fit",
    "Scenario",
    "load_scenario",
]

Score = Annotated[float, msgspec.Meta(ge=0, le=5)]
Money = Annotated[float, msgspec.Meta(ge=0)]
Weight = Annotated[float, msgspec.Meta(ge=0, le=1)]
RiskScore = Annotated[float, msgspec.Meta(ge=0, le=10)]

# The six fit dimensions and what 5 and 0 mean (../shared/SOURCE-NOTES.md, decision framework 1).
DIMENSIONS: dict[str, tuple[str, str, str]] = {
    "task_atomicity": (
        "task atomicity",
        "independent, stateless tasks",
        "each task depends on earlier results",
    ),
    "tool_standardisation": (
        "tool standardisation",
        "only mainstream SaaS tools",
        "many in-house or industrial tools (PLC, MES, ERP)",
    ),
    "latency_sensitivity": ("latency sensitivity", "real-time interaction", "back-office batch"),
    "data_sovereignty": (
        "data sovereignty",
        "no data-residency constraints",
        "regulated, data must stay local",
    ),
    "team_stack": ("team stack", "fluent in the vendor's cloud", "other cloud or own data centre"),
    "budget_elasticity": (
        "budget elasticity",
        "will pay a premium for speed",
        "strict cost control",
    ),
}
SOURCE_WEIGHTS = {
    "task_atomicity": 0.20,
    "tool_standardisation": 0.25,
    "latency_sensitivity": 0.15,
    "data_sovereignty": 0.20,
    "team_stack": 0.10,
    "budget_elasticity": 0.10,
}
SOURCE_RISKS = (
    "vendor_lock_in",
    "geopolitics",
    "compliance_failure",
    "tech_debt",
    "cost_runaway",
    "forced_feature_churn",
    "fault_diagnosis",
    "talent_scarcity",
    "data_leak",
    "innovation_constraint",
)


class Fit(msgspec.Struct, forbid_unknown_fields=True):
    """The six dimensions, each scored 0-5 (5: the hosted platform fits)."""

    task_atomicity: Score
    tool_standardisation: Score
    latency_sensitivity: Score
    data_sovereignty: Score
    team_stack: Score
    budget_elasticity: Score


class Weights(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Weights of the six dimensions; they must add up to 1."""

    task_atomicity: Weight = SOURCE_WEIGHTS["task_atomicity"]
    tool_standardisation: Weight = SOURCE_WEIGHTS["tool_standardisation"]
    latency_sensitivity: Weight = SOURCE_WEIGHTS["latency_sensitivity"]
    data_sovereignty: Weight = SOURCE_WEIGHTS["data_sovereignty"]
    team_stack: Weight = SOURCE_WEIGHTS["team_stack"]
    budget_elasticity: Weight = SOURCE_WEIGHTS["budget_elasticity"]


class Costs(msgspec.Struct, forbid_unknown_fields=True):
    """Cost inputs. API fees: `api_monthly`, or derived from volume x tokens x price."""

    infrastructure_monthly: Money
    operations_monthly: Money
    compliance_yearly: Money
    build_one_off: Money
    api_monthly: Money | None = None
    requests_per_day: Money | None = None
    tokens_per_request: Money | None = None
    price_per_million_tokens: Money | None = None
    growth_monthly: Annotated[float, msgspec.Meta(ge=-0.5, le=1)] = 0.0  # API volume growth
    stated_total: Money | None = None  # a figure someone claimed, checked against the items


class Candidate(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    fit: Fit
    costs: Costs
    risks: dict[str, RiskScore] = {}
    kind: str = ""  # free text: "hosted", "self-hosted", ...


class Scenario(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    candidates: list[Candidate]
    weights: Weights = Weights()
    horizon_years: Annotated[int, msgspec.Meta(ge=1, le=20)] = 3
    days_per_month: Annotated[float, msgspec.Meta(gt=0, le=31)] = 30.0
    risks: list[str] = msgspec.field(default_factory=lambda: list(SOURCE_RISKS))


def load_scenario(path: Path | str) -> Scenario:
    """Read and check a scenario file; `UserError` names the bad field and what to do."""
    path = Path(path)
    try:
        scenario = msgspec.toml.decode(path.read_bytes(), type=Scenario)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    except msgspec.ValidationError as exc:
        raise UserError(f"{path}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise UserError(f"{path} is not valid TOML: {exc}") from None
    check_scenario(scenario, str(path))
    return scenario


def check_scenario(scenario: Scenario, where: str = "scenario") -> None:
    """The checks a schema cannot express."""
    total = sum(msgspec.structs.asdict(scenario.weights).values())
    if abs(total - 1) > 1e-6:
        raise UserError(f"{where}: weights add up to {total:g}; they must add up to 1")
    if not scenario.candidates:
        raise UserError(f"{where}: no candidates: add at least one [[candidates]] table")
    known = set(scenario.risks)
    for index, candidate in enumerate(scenario.candidates):
        at = f"{where}: candidates[{index}] ({candidate.name!r})"
        unknown = sorted(set(candidate.risks) - known)
        if unknown:
            raise UserError(
                f"{at}.risks: unknown risk {unknown[0]!r}; known risks: "
                f"{', '.join(scenario.risks)} (or list yours in `risks = [...]`)"
            )
        missing = [risk for risk in scenario.risks if risk not in candidate.risks]
        if candidate.risks and missing:
            raise UserError(f"{at}.risks: no score for {', '.join(missing)}")
        costs = candidate.costs
        derived = (costs.requests_per_day, costs.tokens_per_request, costs.price_per_million_tokens)
        if costs.api_monthly is None and None in derived:
            raise UserError(
                f"{at}.costs: give api_monthly, or all of requests_per_day, "
                "tokens_per_request and price_per_million_tokens"
            )
