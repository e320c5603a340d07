"""The tool registry: descriptors, their compiled validators, and the transport of each tool."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import msgspec

from ember.errors import ToolDefinitionError, UnknownToolError
from ember.tools.decorator import ToolFunction, describe_function
from ember.tools.descriptor import Risk, ToolDescriptor
from ember.tools.transport import InprocTransport, ToolResult, Transport
from ember.tools.validation import Validator, compile_validator

__all__ = ["RegisteredTool", "ToolRegistry"]


class RegisteredTool(msgspec.Struct, frozen=True):
    """A tool as the runtime holds it: what it is, how to check its arguments, how to reach it.
    `inline`: a function that runs on the event loop itself (no timer can interrupt it).
    `approval_when`: a condition on a call's arguments under which that call is high-risk
    (waits for approval) although the tool is not, e.g. a mail-merge to many recipients."""

    descriptor: ToolDescriptor
    validate: Validator
    transport: Transport
    source: str
    inline: bool = False
    approval_when: Callable[[Mapping[str, Any]], bool] | None = None

    def descriptor_for(self, args: Mapping[str, Any]) -> ToolDescriptor:
        """The descriptor the policy judges this call by: high-risk when `approval_when`
        holds for `args`."""
        if self.approval_when is None or not self.approval_when(args):
            return self.descriptor
        return msgspec.structs.replace(self.descriptor, risk=Risk.HIGH)


class ToolRegistry:
    """Tools by name, in registration order (the order the planner's catalogue uses)."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(
        self,
        target: ToolFunction | Callable[..., Any] | ToolDescriptor,
        *,
        transport: Transport | None = None,
        descriptor: ToolDescriptor | None = None,
        source: str = "inproc",
        approval_when: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> ToolDescriptor:
        """Register a `@tool` function, a plain typed function, or a descriptor with a transport.

        The arguments schema is compiled to a validator here, once. Registering a name twice is
        an error: unregister it first.
        """
        if isinstance(target, ToolDescriptor):
            if transport is None:
                raise ToolDefinitionError(
                    f"{target.tool_name}: a descriptor needs a transport to reach the tool"
                )
            descriptor = descriptor or target
        elif isinstance(target, ToolFunction):
            descriptor = descriptor or target.descriptor
            transport = transport or InprocTransport(target.fn, inline=target.inline)
        else:
            descriptor = descriptor or describe_function(target)
            transport = transport or InprocTransport(target)
        if descriptor.tool_name in self._tools:
            raise ToolDefinitionError(
                f"a tool named {descriptor.tool_name!r} is already registered "
                f"(from {self._tools[descriptor.tool_name].source})"
            )
        validate = compile_validator(descriptor.tool_name, descriptor.parameters)
        inline = isinstance(transport, InprocTransport) and transport.inline
        self._tools[descriptor.tool_name] = RegisteredTool(
            descriptor, validate, transport, source, inline, approval_when
        )
        return descriptor

    def unregister(self, name: str) -> None:
        """Remove a tool; unknown names raise `UnknownToolError`."""
        self.get(name)
        del self._tools[name]

    def get(self, name: str) -> RegisteredTool:
        """The registered tool `name`, or `UnknownToolError` listing the known names."""
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(name, list(self._tools)) from None

    def validate(self, name: str, args: Mapping[str, Any]) -> None:
        """Raise `ArgumentError` if `args` break the parameters schema of tool `name`."""
        self.get(name).validate(args)

    async def call(self, name: str, args: dict[str, Any], *, idempotency_key: str) -> ToolResult:
        """Validate, then dispatch one call. Bad arguments never reach the tool."""
        registered = self.get(name)
        registered.validate(args)
        return await registered.transport.call(name, args, idempotency_key=idempotency_key)

    def descriptors(self) -> list[ToolDescriptor]:
        """Every descriptor, in registration order."""
        return [registered.descriptor for registered in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
