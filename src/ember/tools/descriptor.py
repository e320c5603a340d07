"""The tool descriptor: three required fields (DESIGN.md "Tool protocol"), a few optional ones."""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from ember.errors import ToolDefinitionError

__all__ = ["ExecutionMode", "Risk", "ToolDescriptor"]


class ExecutionMode(enum.StrEnum):
    """`sync`: the call returns the result. `async`: it returns a job; the result comes later."""

    SYNC = "sync"
    ASYNC = "async"


class Risk(enum.StrEnum):
    """`high` tools wait for an approval before they run."""

    LOW = "low"
    HIGH = "high"


class ToolDescriptor(msgspec.Struct, frozen=True):
    """What the runtime and the planner know about a tool.

    `parameters` is a JSON Schema (draft 2020-12) object schema for the arguments; `returns`
    (optional) describes the result, and lets plans refer to its fields (`"$1.hotels.0.name"`).
    `read_only`: True when a call changes nothing (a read, a search, a computation), False
    when it acts (books, sends, writes), None when the tool does not say (MCP's
    `readOnlyHint`); the planner offers a tool that acts to a question only when the request
    names its action (docs/architecture.md).
    """

    tool_name: str
    parameters: dict[str, Any]
    execution_mode: ExecutionMode = ExecutionMode.SYNC
    description: str = ""
    returns: dict[str, Any] | None = None
    risk: Risk = Risk.LOW
    idempotent: bool = False
    timeout_s: float | None = None
    read_only: bool | None = None

    def __post_init__(self) -> None:
        if not self.tool_name.isidentifier():
            raise ToolDefinitionError(
                f"tool_name {self.tool_name!r} must be an identifier (letters, digits, _)"
            )
        if self.parameters.get("type") != "object":
            raise ToolDefinitionError(
                f'{self.tool_name}: parameters must be a JSON Schema with "type": "object", '
                f"got {self.parameters.get('type')!r}"
            )
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ToolDefinitionError(
                f"{self.tool_name}: timeout_s must be > 0, got {self.timeout_s}"
            )

    @property
    def summary(self) -> str:
        """The description's first sentence, for one-line listings."""
        first = self.description.split(". ")[0].strip()
        return first if first.endswith(".") or not first else first + "."

    def to_json(self) -> dict[str, Any]:
        """The descriptor as plain JSON data (the `ember tools --json` and wire form)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolDescriptor:
        """Parse a descriptor, naming the bad field on failure."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            name = data.get("tool_name", "?") if isinstance(data, dict) else "?"
            raise ToolDefinitionError(f"tool descriptor {name!r}: {exc}") from None
