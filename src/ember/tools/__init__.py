"""Tools: descriptors, the `@tool` decorator, the registry, validation and transports."""

from ember.tools.decorator import ToolFunction, tool
from ember.tools.descriptor import ExecutionMode, Risk, ToolDescriptor
from ember.tools.registry import RegisteredTool, ToolRegistry
from ember.tools.transport import InprocTransport, ToolResult, Transport

__all__ = [
    "ExecutionMode",
    "InprocTransport",
    "RegisteredTool",
    "Risk",
    "ToolDescriptor",
    "ToolFunction",
    "ToolRegistry",
    "ToolResult",
    "Transport",
    "tool",
]
