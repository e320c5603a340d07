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
"""

from ember._version import __version__
from ember.errors import EmberError, UserError
from ember.executor import RunResult, Runtime, StepReport
from ember.journal import SQLiteJournal
from ember.planner import Plan, Planner, PlanningTask, ScriptedPlanner, Step
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
