"""Policy: pure decisions about each tool call: run it now, wait for a person, or not at all."""

from ember.policy.decide import CallContext, Ruling, Verdict, decide

__all__ = ["CallContext", "Ruling", "Verdict", "decide"]
