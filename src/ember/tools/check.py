"""Static checks of plan steps against the tool catalogue (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ember.errors import PlanError
from ember.plan import ITEM, Reference, Step, references
from ember.tools.descriptor import ToolDescriptor

__all__ = ["check_reference_paths", "check_step"]


def check_step(step: Step, catalogue: Mapping[str, ToolDescriptor]) -> set[int]:
    """Raise `PlanError` if the step names an unknown tool, misses a required argument, passes
    an unknown one, references itself, or writes a malformed reference. Literal argument values
    are validated against the schema when the step runs, after references are resolved.
    Returns the ids of the steps it depends on (its references and `after`)."""
    descriptor = catalogue.get(step.tool)
    if descriptor is None:
        raise PlanError(
            f"step {step.id} calls unknown tool {step.tool!r}; known tools: "
            + ", ".join(sorted(catalogue))
        )
    schema = descriptor.parameters
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in step.args]
    if missing:
        raise PlanError(
            f"step {step.id} ({step.tool}) lacks required argument(s): " + ", ".join(missing)
        )
    if schema.get("additionalProperties") is False:
        unknown = [name for name in step.args if name not in properties]
        if unknown:
            raise PlanError(
                f"step {step.id} ({step.tool}) passes unknown argument(s) "
                f"{', '.join(unknown)}; it takes: {', '.join(properties)}"
            )
    deps = set(step.after)
    each = list(references(step.each)) if step.each is not None else []
    for ref in [*references(step.args), *each]:  # also rejects malformed references
        if ref.step == step.id:
            raise PlanError(f"step {step.id} ({step.tool}) references its own result ({ref})")
        if ref.step == ITEM and step.each is None:
            raise PlanError(
                f"step {step.id} ({step.tool}) uses {ref}, but it does not run for each item "
                'of a list: give it "each": "$N.list"'
            )
        if ref.step != ITEM:
            deps.add(ref.step)
    return deps


def check_reference_paths(
    steps: Mapping[int, Step], catalogue: Mapping[str, ToolDescriptor]
) -> list[tuple[int, str]]:
    """(step id, problem) for each reference to a missing step or to a field the referenced
    tool's `returns` schema does not have."""
    problems = []
    for step in steps.values():
        each = list(references(step.each)) if step.each is not None else []
        for written in [*references(step.args), *each]:
            ref = written
            if written.step == ITEM:  # an item's field: a field of the list's first item
                ref = Reference(each[0].step, (*each[0].path, "0", *written.path))
            target = steps.get(ref.step)
            if target is None:
                problems.append((step.id, f"references step {ref.step}, which the plan lacks"))
                continue
            returns = catalogue[target.tool].returns if target.tool in catalogue else None
            if returns is not None and target.each is not None:
                returns = {"type": "array", "items": returns}  # one result per item
            if returns is not None and not _has_path(returns, ref.path):
                problems.append(
                    (
                        step.id,
                        f"references {ref}, but {target.tool} returns no "
                        f"field {'.'.join(ref.path)!r}",
                    )
                )
        for dep in step.after:
            if dep not in steps:
                problems.append((step.id, f"waits for step {dep} (after), which the plan lacks"))
    return problems


def _has_path(schema: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node = schema
    for segment in path:
        if node.get("type") == "array" and segment.isdigit():
            node = node.get("items", {})
        elif segment in node.get("properties", {}):
            node = node["properties"][segment]
        else:
            return not node.get("properties") and node.get("type") != "array"
    return True
