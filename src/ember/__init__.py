"""ember: a self-hosted AI agent runtime.

A planner model turns a request into a graph of tool calls; the executor runs it, in parallel
where the graph allows; the journal records every step durably; every layer's latency is timed.

```python
import asyncio
from ember import Runtime, SQLiteJournal, ScriptedPlanner, ToolRegistry, tool

@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b
```

The names below are imported on first use, so `ember --help` does not pay for asyncio,
msgspec or the validator library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ember._version import __version__

if TYPE_CHECKING:
    from ember.errors import EmberError, UserError
    from ember.executor import RunResult, Runtime, StepReport
    from ember.journal import SQLiteJournal
    from ember.plan import Plan, Step
    from ember.planner import Planner, PlanningTask, ScriptedPlanner
    from ember.tools import ExecutionMode, Risk, ToolDescriptor, ToolRegistry, tool

__all__ = [
    "EmberError",
    "ExecutionMode",
    "Plan",
    "Planner",
    "PlanningTask",
    "Risk",
    "RunResult",
    "Runtime",
    "SQLiteJournal",
    "ScriptedPlanner",
    "Step",
    "StepReport",
    "ToolDescriptor",
    "ToolRegistry",
    "UserError",
    "__version__",
    "tool",
]

_HOMES = {
    "EmberError": "ember.errors",
    "UserError": "ember.errors",
    "RunResult": "ember.executor",
    "Runtime": "ember.executor",
    "StepReport": "ember.executor",
    "SQLiteJournal": "ember.journal",
    "Plan": "ember.plan",
    "Planner": "ember.planner",
    "PlanningTask": "ember.planner",
    "ScriptedPlanner": "ember.planner",
    "Step": "ember.plan",
    "ExecutionMode": "ember.tools",
    "Risk": "ember.tools",
    "ToolDescriptor": "ember.tools",
    "ToolRegistry": "ember.tools",
    "tool": "ember.tools",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ember' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
