"""Executor: runs a plan as a graph (steps start when their inputs exist), and `Runtime`."""

from ember.executor.runtime import RunResult, Runtime
from ember.executor.steps import StepReport

__all__ = ["RunResult", "Runtime", "StepReport"]
