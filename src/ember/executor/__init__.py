"""The executor: DAG scheduling of plan steps, and the `Runtime` that ties the layers together."""

from ember.executor.runtime import RunResult, Runtime, StepReport

__all__ = ["RunResult", "Runtime", "StepReport"]
