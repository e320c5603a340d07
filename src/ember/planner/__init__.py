"""Planners turn a request into a plan: the protocol, plan types, and the backends."""

from ember.plan import Plan, Reference, Step
from ember.planner.base import FirstToken, PlanEvent, Planner, PlanningTask
from ember.planner.scripted import ScriptedPlanner

__all__ = [
    "FirstToken",
    "Plan",
    "PlanEvent",
    "Planner",
    "PlanningTask",
    "Reference",
    "ScriptedPlanner",
    "Step",
]
