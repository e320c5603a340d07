"""`@tool`: build a tool descriptor from a typed Python function and its docstring.

```python
@tool(idempotent=True)
def get_weather(city: str, date: Annotated[str, msgspec.Meta(pattern=DATE)]) -> Forecast:
    \"\"\"Daily forecast for one city.

    Args:
        city: City name, e.g. "Paris".
        date: Day of the forecast, YYYY-MM-DD.
    \"\"\"
```

Parameter types become JSON Schema through msgspec (so `Annotated[..., msgspec.Meta(...)]`
constraints carry over); a parameter with a default is optional, its default (a text, number or
boolean) the schema's `default`; the return annotation, when it is not `Any`, becomes `returns`.
A parameter named `idempotency_key` is not an argument: the runtime passes the step's key there
(DESIGN.md "Execution and the journal").

On a method, the descriptor leaves `self` out, and reading the tool from an instance gives
the tool bound to it (how a pack holds its configuration: `ember.tools.packs`).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar, overload

import msgspec

from ember.errors import ToolDefinitionError
from ember.tools.descriptor import ExecutionMode, Risk, ToolDescriptor

__all__ = ["ToolFunction", "describe_function", "tool"]

RESERVED_PARAMETERS = frozenset({"idempotency_key"})
F = TypeVar("F", bound=Callable[..., Any])


class ToolFunction:
    """A function with the descriptor `@tool` built for it; calling it calls the function."""

    def __init__(self, fn: Callable[..., Any], descriptor: ToolDescriptor, *, inline: bool) -> None:
        self.fn = fn
        self.descriptor = descriptor
        self.inline = inline
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __get__(self, instance: object, owner: type | None = None) -> ToolFunction:
        """A tool defined on a method, bound to `instance` (the descriptor stays the same)."""
        if instance is None:
            return self
        return ToolFunction(self.fn.__get__(instance, owner), self.descriptor, inline=self.inline)

    def __repr__(self) -> str:
        return f"<tool {self.descriptor.tool_name}>"


@overload
def tool(fn: Callable[..., Any], /) -> ToolFunction: ...
@overload
def tool(
    *,
    name: str | None = None,
    execution_mode: ExecutionMode | str = ExecutionMode.SYNC,
    risk: Risk | str = Risk.LOW,
    idempotent: bool = False,
    timeout_s: float | None = None,
    inline: bool = False,
    read_only: bool | None = None,
) -> Callable[[Callable[..., Any]], ToolFunction]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    execution_mode: ExecutionMode | str = ExecutionMode.SYNC,
    risk: Risk | str = Risk.LOW,
    idempotent: bool = False,
    timeout_s: float | None = None,
    inline: bool = False,
    read_only: bool | None = None,
) -> ToolFunction | Callable[[Callable[..., Any]], ToolFunction]:
    """Make `fn` a tool. `inline=True` runs a plain (non-async) function on the event loop:
    only for functions that finish in microseconds; others run in the executor's thread pool.
    `read_only`: whether a call changes nothing (see `ToolDescriptor`)."""

    def wrap(target: Callable[..., Any]) -> ToolFunction:
        descriptor = describe_function(
            target,
            name=name,
            execution_mode=ExecutionMode(execution_mode),
            risk=Risk(risk),
            idempotent=idempotent,
            timeout_s=timeout_s,
            read_only=read_only,
        )
        return ToolFunction(target, descriptor, inline=inline)

    return wrap(fn) if fn is not None else wrap


def describe_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    execution_mode: ExecutionMode = ExecutionMode.SYNC,
    risk: Risk = Risk.LOW,
    idempotent: bool = False,
    timeout_s: float | None = None,
    read_only: bool | None = None,
) -> ToolDescriptor:
    """The descriptor of a typed function: see the module docstring."""
    tool_name = name or fn.__name__
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except NameError as exc:
        raise ToolDefinitionError(f"{tool_name}: cannot resolve a type annotation: {exc}") from None
    summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for index, param in enumerate(inspect.signature(fn).parameters.values()):
        if param.name in RESERVED_PARAMETERS or (index == 0 and param.name == "self"):
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{tool_name}: *args/**kwargs cannot be described as a schema"
            )
        if param.name not in hints:
            raise ToolDefinitionError(
                f"{tool_name}: parameter {param.name!r} needs a type annotation"
            )
        schema = _schema_of(tool_name, param.name, hints[param.name])
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        properties[param.name] = schema
        if param.default is param.empty:
            required.append(param.name)
        elif isinstance(param.default, str | int | float | bool):
            schema["default"] = param.default  # JSON Schema's own keyword, for callers to see
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return_hint = hints.get("return", Any)
    returns = (
        None
        if return_hint in (Any, None, type(None))
        else _schema_of(tool_name, "return", return_hint)
    )
    return ToolDescriptor(
        tool_name=tool_name,
        parameters=parameters,
        execution_mode=execution_mode,
        description=summary,
        returns=returns,
        risk=risk,
        idempotent=idempotent,
        timeout_s=timeout_s,
        read_only=read_only,
    )


def _schema_of(tool_name: str, what: str, hint: Any) -> dict[str, Any]:
    try:
        schema, components = msgspec.json.schema_components([hint], ref_template="{name}")
    except TypeError as exc:
        raise ToolDefinitionError(
            f"{tool_name}: type of {what!r} has no JSON Schema: {exc}"
        ) from None
    return dict(_inline_refs(schema[0], components))


def _inline_refs(node: Any, components: dict[str, Any]) -> Any:
    """Replace msgspec's `$ref`s with the definitions, so a schema stands alone."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline_refs(components[node["$ref"]], components)
        return {key: _inline_refs(value, components) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline_refs(item, components) for item in node]
    return node


_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters):$")
_ARG_LINE = re.compile(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (its first paragraph, {argument: description})."""
    description = " ".join(doc.split("\n\n", 1)[0].split())
    arg_docs: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for raw in doc.splitlines():
        line = raw.strip()
        if _ARGS_HEADER.match(line):
            in_args, current = True, None
        elif in_args and raw[:1] in (" ", "\t") and line:
            match = _ARG_LINE.match(line)
            if (
                match
                and raw.startswith(("    ", "\t"))
                and not raw.startswith(("        ", "\t\t"))
            ):
                current = match.group(1)
                arg_docs[current] = match.group(2).strip()
            elif current:
                arg_docs[current] += " " + line
        elif in_args and line:
            in_args = False
    return description, arg_docs
