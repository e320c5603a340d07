"""Planners turn a request into a plan, streamed step by step: the `Planner` protocol and its
backends (llama: the embedded model and its driven decoder; openai; scripted)."""

from ember.planner.base import FirstToken, PlanEvent, Planner, PlanningTask
from ember.planner.scripted import ScriptedPlanner

__all__ = ["FirstToken", "PlanEvent", "Planner", "PlanningTask", "ScriptedPlanner"]
