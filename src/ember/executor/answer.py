"""The joiner: compose a run's answer, in Markdown, from its steps' results (a template)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ember.executor.steps import StepReport
from ember.journal import StepStatus

__all__ = ["compose_answer"]


def compose_answer(task: str, steps: Sequence[StepReport], plan_error: str | None) -> str:
    """A short Markdown account of what each step did or why it did not (steps by id)."""
    lines = [f"**Task:** {task}", ""]
    if not steps and plan_error is None:
        lines.append("No tool can do this: the planner made an empty plan, so nothing was run.")
    for step in steps:
        if step.status is StepStatus.SUCCEEDED:
            lines.append(f"{step.id}. `{step.tool}`: {_describe(step.result)}")
        else:
            lines.append(f"{step.id}. `{step.tool}` **{step.status.value}**: {step.error or ''}")
    if plan_error:
        lines.append(f"\n**Planning failed:** {plan_error}")
    return "\n".join(lines)


def _describe(result: Any) -> str:
    if not isinstance(result, Mapping):
        return _scalar(result)
    parts = []
    for key, value in result.items():
        if isinstance(value, list):
            first = f"; first: {_describe(value[0])}" if value else ""
            parts.append(f"{key}: {len(value)} item{'s' if len(value) != 1 else ''}{first}")
        elif isinstance(value, Mapping):
            parts.append(f"{key}: ({_describe(value)})")
        else:
            parts.append(f"{key}: {_scalar(value)}")
    return ", ".join(parts)


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= 100 else text[:97] + "..."
