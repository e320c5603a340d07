"""Policy: pure decisions about each tool call (run it now, wait for a person, or not at all),
the Cedar policies they consult, principals and tokens, and the audit log's signatures."""

from ember.policy.cedar import Judgement, Policy, Principal, compile_policy
from ember.policy.decide import CallContext, Ruling, Verdict, decide

__all__ = [
    "CallContext",
    "Judgement",
    "Policy",
    "Principal",
    "Ruling",
    "Verdict",
    "compile_policy",
    "decide",
]
