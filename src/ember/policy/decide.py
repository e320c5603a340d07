"""Whether a tool call may run now: one pure function, consulted by the executor before each
call's intent is written (and journaled by it), with no I/O and no clock.

The rules, in order:

- The policy (when the context carries one: `ember.policy.cedar`) must allow the run's
  principal to call the tool with these arguments, now; else the step is denied (`deny`), with
  the rule that denied it. This holds for an approved call too: approving never skips policy.
- A high-risk tool (`risk="high"`), or a call a rule marks `@require_approval`, runs only once
  a person approved the step; a denial fails it.
- A call interrupted mid-way (its intent is in the journal, its outcome is not) runs again only
  if its tool is idempotent (the same idempotency key makes a repeat harmless) or a person said
  `retry`; otherwise it is held in doubt until a person decides: `skip` takes the effect as done,
  `fail` fails the step.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from ember.journal import Decision
from ember.plan import Step
from ember.policy.cedar import Policy, Principal
from ember.policy.facts import call_context
from ember.tools.descriptor import Risk, ToolDescriptor

__all__ = ["CallContext", "Ruling", "Verdict", "decide"]


class Verdict(enum.StrEnum):
    RUN = "run"  # call the tool now
    AWAIT_APPROVAL = "await_approval"  # a person must approve the step first
    HOLD_IN_DOUBT = "hold_in_doubt"  # it may have happened: a person must decide
    TAKE_AS_DONE = "take_as_done"  # a person said the effect happened: do not call again
    FAIL = "fail"  # failed by a person's decision (denied approval, `fail`)
    DENY = "deny"  # the policy does not allow the call


class CallContext(msgspec.Struct, frozen=True):
    """What the journal knows about the call: its run, whether it was interrupted after its
    intent was recorded, and the decision a person recorded for the step, if any; and, under a
    control plane, the policy in force, the run's principal and the time (epoch seconds)."""

    run_id: str
    interrupted: bool = False
    decision: Decision | None = None
    policy: Policy | None = None
    principal: Principal | None = None
    at: float = 0.0


class Ruling(msgspec.Struct, frozen=True):
    """A verdict and, for every verdict but `run`, the reason in words a person can act on;
    `rule`: the policy rules that decided (allowed, denied, or asked for an approval)."""

    verdict: Verdict
    reason: str = ""
    rule: str = ""


_RUN = Ruling(Verdict.RUN)


def decide(step: Step, tool: ToolDescriptor, args: dict[str, Any], context: CallContext) -> Ruling:
    """The ruling on calling `tool` with `args` (resolved and validated) for `step` now."""
    if tool.risk is not Risk.HIGH and not context.interrupted and context.policy is None:
        return _RUN  # no policy, no approval, no crash: decided before any text is made
    where = f"step {step.id} ({step.tool})"
    rule, approval = "", "risk=high" if tool.risk == Risk.HIGH else ""
    if context.policy is not None and context.principal is not None:
        judged = context.policy.judge(
            context.principal,
            "call",
            tool.tool_name,
            lambda: call_context(tool, args, context.at),
        )
        if not judged.allowed:
            return Ruling(Verdict.DENY, f"{where} was denied: {judged.reason}", judged.rule)
        rule, approval = judged.rule, approval or judged.require_approval
    if approval:
        if context.decision is Decision.DENY:
            return Ruling(Verdict.FAIL, f"{where} was denied approval", rule)
        if context.decision is not Decision.APPROVE:
            return Ruling(
                Verdict.AWAIT_APPROVAL,
                f"{where} waits for approval ({approval}): `ember approve|deny "
                f"{context.run_id} {step.id}` (or `ember runs resolve {context.run_id} "
                f"{step.id} --approve|--deny`)",
                rule or approval,
            )
    if not context.interrupted:
        return Ruling(Verdict.RUN, rule=rule) if rule else _RUN
    if context.decision is Decision.FAIL:
        return Ruling(Verdict.FAIL, f"{where} failed by decision")
    if context.decision is Decision.SKIP:
        return Ruling(Verdict.TAKE_AS_DONE, f"{where} was taken as done by decision")
    if context.decision is Decision.RETRY or tool.idempotent:
        return Ruling(Verdict.RUN, rule=rule)
    return Ruling(
        Verdict.HOLD_IN_DOUBT,
        f"{where} was interrupted after its intent was recorded and {step.tool} is not "
        f"idempotent: it may or may not have happened. Decide with "
        f"`ember runs resolve {context.run_id} {step.id} --retry|--skip|--fail`",
    )
