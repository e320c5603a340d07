"""DAG readiness: which planned steps can start, which can never run (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping

from ember.journal.events import StepStatus
from ember.planner.plan import Step, dependencies

__all__ = ["blocked", "ready"]

_FINAL_BAD = (StepStatus.FAILED, StepStatus.SKIPPED)


def ready(steps: Mapping[int, Step], status: Mapping[int, StepStatus]) -> list[int]:
    """Planned steps whose dependencies have all succeeded, in id order."""
    return sorted(
        step_id
        for step_id, step in steps.items()
        if status[step_id] is StepStatus.PLANNED
        and all(status.get(dep) is StepStatus.SUCCEEDED for dep in dependencies(step))
    )


def blocked(steps: Mapping[int, Step], status: Mapping[int, StepStatus]) -> dict[int, int]:
    """Planned steps that can never run, each with a dependency that failed or was skipped."""
    result = {}
    for step_id, step in sorted(steps.items()):
        if status[step_id] is StepStatus.PLANNED:
            bad = sorted(dep for dep in dependencies(step) if status.get(dep) in _FINAL_BAD)
            if bad:
                result[step_id] = bad[0]
    return result
