"""Policies in Cedar, evaluated by the `cedarpy` package: compiled once per version, checked
against the tools and principals ember knows, and asked about each action.

The model (see docs/architecture.md, "Policy"):

```
principal  User::"NAME"       a token's name, or the local OS user; `in Role::"R"` for its roles
action     Action::"call"     resource Tool::"TOOL": call a tool (context below)
           Action::"approve"  resource Tool::"TOOL": approve a waiting call of that tool
           Action::"start_run", Action::"read_runs"   resource Ember::"runs"
context    args (the call's arguments), paths (path arguments, normalised), sql_read_only,
           risk, hour, minute, weekday ("mon".."sun"), run_principal (User of the run)
```

A permit annotated `@require_approval("why")` allows the call only once a principal whom the
policy allows to `approve` it has approved. Cedar's default is deny; `forbid` wins over
`permit`; a rule whose condition fails to evaluate (`context.args.to` on a call without `to`)
denies, never allows (ember fails closed where Cedar would skip the rule).

Speed: the decision for (principal, action, tool) is first asked with the context unknown
(Cedar's partial evaluation). If no rule that could apply reads the context, that answer is the
decision for every call, cached in the compiled policy, which is per version; otherwise each
call is evaluated in full (docs/benchmarks.md, "Policy").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import cedarpy
import msgspec

from ember.errors import PolicyError

__all__ = ["ACTIONS", "DEFAULT_POLICY", "Judgement", "Policy", "Principal", "compile_policy"]

_encode = msgspec.json.Encoder().encode

ACTIONS = ("call", "approve", "start_run", "read_runs")
RESOURCE_OF = {"call": "Tool", "approve": "Tool", "start_run": "Ember", "read_runs": "Ember"}
_TYPES = ("User", "Role", "Tool", "Action", "Ember")
DEFAULT_POLICY = (
    '@id("no policy set: everything is allowed")\npermit(principal, action, resource);\n'
)


class Principal(msgspec.Struct, frozen=True):
    """Who acts: a name, its roles, and why it may no longer act ("" while it may)."""

    name: str
    roles: tuple[str, ...] = ()
    revoked: str = ""


class Judgement(msgspec.Struct, frozen=True):
    """The policy's answer: allowed or not, the rules that decided (`rule`, by @id and line),
    the reason in words when denied, and why an approval is needed when a rule asks for one."""

    allowed: bool
    rule: str = ""
    reason: str = ""
    require_approval: str = ""


class _Rule(msgspec.Struct, frozen=True):
    label: str  # `@id` and line, or the line
    line: int
    require_approval: str | None
    forbids: bool  # a `forbid` (else a `permit`)


class Policy:
    """A policy text compiled at one control-plane `version` (immutable; safe to share)."""

    def __init__(self, version: int, text: str, source: str = "the policy") -> None:
        self.version = version
        self.text = text
        try:
            self._set = cedarpy.PolicySet.from_str(text)
            self._est = json.loads(cedarpy.policies_to_json_str(text))["staticPolicies"]
        except ValueError as exc:
            raise PolicyError(_error_line(text), str(exc), source) from None
        starts = list(_statement_lines(text))
        self._rules: dict[str, _Rule] = {}
        for order, (pid, body) in enumerate(self._est.items()):
            index = int(pid[6:]) if re.fullmatch(r"policy\d+", pid) else order  # policyN
            line = starts[index] if index < len(starts) else 0
            forbids = body.get("effect") == "forbid"
            self._rules[pid] = _Rule(_label(body, line), line, _approval(body), forbids)
        self._known: dict[tuple[str, str, str], Judgement | None] = {}
        self._entities: dict[Principal, Any] = {}

    def rules(self) -> Iterator[tuple[str, int, dict[str, Any]]]:
        """Each rule's label, line and Cedar JSON form."""
        for pid, body in self._est.items():
            yield self._rules[pid].label, self._rules[pid].line, body

    def judge(
        self,
        principal: Principal,
        action: str,
        resource: str,
        context: Callable[[], dict[str, Any]],
    ) -> Judgement:
        """May `principal` do `action` on `resource` (a tool's name, or "runs")? `context`
        builds the request's context; it is called only if some rule reads it."""
        if principal.revoked:
            return Judgement(False, reason=principal.revoked)
        key = (principal.name, action, resource)
        if key not in self._known:
            self._known[key] = self._partial(principal, action, resource)
        known = self._known[key]
        if known is not None:
            return known
        return self._full(principal, action, resource, context())

    def _request(self, principal: Principal, action: str, resource: str) -> dict[str, Any]:
        return {
            "principal": {"type": "User", "id": principal.name},
            "action": {"type": "Action", "id": action},
            "resource": {"type": RESOURCE_OF[action], "id": resource},
        }

    def _entities_of(self, principal: Principal) -> Any:
        entities = self._entities.get(principal)
        if entities is None:
            roles = [{"type": "Role", "id": role} for role in principal.roles]
            user = {"uid": {"type": "User", "id": principal.name}, "attrs": {}, "parents": roles}
            listed = [user, *({"uid": r, "attrs": {}, "parents": []} for r in roles)]
            entities = self._entities[principal] = cedarpy.Entities.from_json_str(
                json.dumps(listed)
            )
        return entities

    def _partial(self, principal: Principal, action: str, resource: str) -> Judgement | None:
        """The decision whatever the context is, or None if it depends on the context."""
        request = {  # the partial evaluator takes Cedar's text form of entity ids
            part: f"{uid['type']}::{json.dumps(uid['id'])}"
            for part, uid in self._request(principal, action, resource).items()
        }
        result = cedarpy.is_authorized_partial(request, self._set, self._entities_of(principal))
        if result.decision == cedarpy.Decision.NoDecision or result.diagnostics.errors:
            return None
        return self._judgement(
            result.decision == cedarpy.Decision.Allow,
            result.diagnostics.reasons,
            [],
            principal=principal,
            action=action,
            resource=resource,
        )

    def _full(
        self, principal: Principal, action: str, resource: str, context: dict[str, Any]
    ) -> Judgement:
        # the context as JSON text: msgspec writes it faster than the wrapper's json.dumps
        request = self._request(principal, action, resource)
        request["context"] = _encode(context).decode()
        result = cedarpy.is_authorized(request, self._set, self._entities_of(principal))
        allowed = result.decision == cedarpy.Decision.Allow and not result.diagnostics.errors
        return self._judgement(
            allowed,
            result.diagnostics.reasons,
            result.diagnostics.errors,
            principal=principal,
            action=action,
            resource=resource,
        )

    def _judgement(
        self,
        allowed: bool,
        reasons: list[str],
        errors: list[str],
        *,
        principal: Principal,
        action: str,
        resource: str,
    ) -> Judgement:
        # the rules that decided: permits that allowed, or forbids that denied (partial
        # evaluation lists every rule it found satisfied, of either effect)
        rules = [
            rule
            for rule in (self._rules.get(pid) for pid in reasons)
            if rule is not None and rule.forbids != allowed
        ]
        rule = "; ".join(r.label for r in rules)
        if allowed:
            asks = next((r.require_approval for r in rules if r.require_approval is not None), "")
            return Judgement(True, rule, require_approval=asks or "")
        who = f"{principal.name} ({', '.join(principal.roles) or 'no roles'})"
        what = f"{action} {resource}"
        if errors:
            reason = f"a rule could not be evaluated for {who} to {what}, so it is denied: " + (
                "; ".join(_name_policies(error, self._rules) for error in errors)
            )
        elif rules:
            reason = f"forbidden to {who} to {what} by {rule} (policy v{self.version})"
        else:
            reason = f"no rule of policy v{self.version} permits {who} to {what}"
        return Judgement(False, rule, reason)


def compile_policy(
    text: str,
    version: int,
    *,
    tools: Mapping[str, object] | None = None,
    principals: set[str] | None = None,
    source: str = "the policy",
) -> Policy:
    """Compile `text`; with `tools` and `principals` (the known names), a rule naming another
    tool, principal, action or entity type is refused with its line (`PolicyError`)."""
    policy = Policy(version, text, source)
    if not policy._est:
        raise PolicyError(
            0,
            "it has no rules, so it would deny everything: write at least one "
            "permit, or `forbid(principal, action, resource);` on purpose",
            source,
        )
    for label, line, body in policy.rules():
        for kind, name in _entities(body):
            problem = _unknown(kind, name, tools, principals)
            if problem:
                found = _find_line(text, line, kind, name)
                raise PolicyError(found, f"{problem} (in rule {label})", source)
    return policy


def _unknown(
    kind: str, name: str, tools: Mapping[str, object] | None, principals: set[str] | None
) -> str:
    if kind not in _TYPES:
        return f"unknown entity type {kind}::{name!r}: use one of {', '.join(_TYPES)}"
    if kind == "Action" and name not in ACTIONS:
        return f"unknown action {name!r}: the actions are {', '.join(ACTIONS)}"
    if kind == "Tool" and tools is not None and name not in tools:
        return f"unknown tool {name!r}: `ember tools` lists the tools ({len(tools)} known)"
    if kind == "User" and principals is not None and name not in principals:
        known = ", ".join(sorted(principals)) or "none"
        return (
            f"unknown principal {name!r}: create its token first (`ember tokens create "
            f"{name}`); known principals: {known}"
        )
    if kind == "Ember" and name != "runs":
        return f'unknown resource Ember::{name!r}: the only one is Ember::"runs"'
    return ""


def _entities(node: Any) -> Iterator[tuple[str, str]]:
    """Every entity literal in a rule's Cedar JSON form."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str) and isinstance(node.get("id"), str):
            yield node["type"], node["id"]
        for value in node.values():
            yield from _entities(value)
    elif isinstance(node, list):
        for value in node:
            yield from _entities(value)


def _label(body: dict[str, Any], line: int) -> str:
    name = body.get("annotations", {}).get("id")
    return f'"{name}" (line {line})' if name else f"the rule at line {line}"


def _approval(body: dict[str, Any]) -> str | None:
    annotations = body.get("annotations", {})
    if "require_approval" not in annotations:
        return None
    return str(annotations["require_approval"] or "a rule requires an approval")


def _name_policies(error: Any, rules: dict[str, _Rule]) -> str:
    text = str(error)
    return re.sub(
        r"\bpolicy\d+\b",
        lambda m: rules[m.group()].label if m.group() in rules else m.group(),
        text,
    )


def _statement_lines(text: str) -> Iterator[int]:
    """The 1-based line where each top-level statement starts (its first annotation or effect),
    skipping comments and strings: statement N is Cedar's `policyN`."""
    line, started, in_string, escaped, comment = 1, False, False, False, False
    for index, char in enumerate(text):
        if char == "\n":
            line, comment = line + 1, False
            continue
        if comment:
            continue
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
            continue
        if char == "/" and text[index + 1 : index + 2] == "/":
            comment = True
        elif char == '"':
            in_string = True
        elif char == ";":
            started = False
        elif not char.isspace() and not started:
            started = True
            yield line


def _error_line(text: str) -> int:
    """The line of a parse error: the shortest prefix of whole lines that fails with an error
    other than running out of input (Cedar's messages carry no position)."""
    lines = text.splitlines(keepends=True)
    low, high = 1, len(lines)
    while low < high:
        middle = (low + high) // 2
        if _fails_before_end("".join(lines[:middle])):
            high = middle
        else:
            low = middle + 1
    return low if lines else 0


def _fails_before_end(prefix: str) -> bool:
    try:
        cedarpy.PolicySet.from_str(prefix)
    except ValueError as exc:
        return "unexpected end of input" not in str(exc)
    return False


def _find_line(text: str, start: int, kind: str, name: str) -> int:
    """The line, at or after `start`, where `kind::"name"` is written (else `start`)."""
    pattern = re.compile(rf'\b{re.escape(kind)}\s*::\s*"{re.escape(name)}"')
    for number, line in enumerate(text.splitlines()[start - 1 :], start=start):
        if pattern.search(line.split("//")[0]):
            return number
    return start
