"""Every error ember raises on purpose.

```
EmberError                      base of everything below
├── UserError                   the input was wrong; the message says what to change
│   ├── ToolError               about a tool
│   │   ├── UnknownToolError    no tool of that name is registered
│   │   ├── ToolDefinitionError a descriptor or @tool function is malformed
│   │   └── ArgumentError       arguments break the tool's schema (names argument, value, rule)
│   ├── PlanError               a plan is malformed (bad reference, cycle, duplicate id, ...)
│   ├── PlannerError            a planner could not produce a plan (model missing, no script, ...)
│   │   └── ModelError          the model file is missing, corrupt, or its backend not installed
│   ├── RunNotFoundError        no run with that id in the journal
│   ├── PolicyError             a policy file is malformed or names unknown tools/principals
│   ├── AuthenticationError     no token, or one that is unknown or revoked (HTTP 401)
│   ├── PermissionDeniedError   the policy denies the principal this action (HTTP 403)
│   └── EgressError             data would go to a destination the `egress` list lacks
├── ToolCallError               a tool raised while running; carries the step and the cause
├── JournalError                the journal cannot be opened or written
│   ├── CorruptRecordError      a record's checksum does not match its body
│   ├── NondeterminismError     a replayed step differs from what the journal recorded
│   └── PolicyChangedError      the control plane changed after a call was decided: decide again
└── EmberInternalError          a bug in ember itself: please report it
```

User errors are the caller's to fix; `EmberInternalError` never is. Messages say what
happened, name the ids involved, and say what to do.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "AuthenticationError",
    "CorruptRecordError",
    "EgressError",
    "EmberError",
    "EmberInternalError",
    "JournalError",
    "ModelError",
    "NondeterminismError",
    "PermissionDeniedError",
    "PlanError",
    "PlannerError",
    "PolicyChangedError",
    "PolicyError",
    "RunNotFoundError",
    "ToolCallError",
    "ToolDefinitionError",
    "ToolError",
    "UnknownToolError",
    "UserError",
]


class EmberError(Exception):
    """Base class of every error ember raises on purpose."""


class UserError(EmberError):
    """The input was wrong: the message names it and says what to change."""


class ToolError(UserError):
    """Something about a tool (its name, descriptor or arguments) is wrong."""


class UnknownToolError(ToolError):
    """No tool of that name is registered."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        super().__init__(
            f"no tool named {name!r} is registered; known tools: {', '.join(sorted(known))}"
        )


class ToolDefinitionError(ToolError):
    """A tool descriptor, or the function `@tool` was applied to, is malformed."""


class ArgumentError(ToolError):
    """Arguments for a tool break its parameters schema.

    `argument` is the JSON path of the offending value ("" for the whole object), `rule` the
    schema keyword it broke.
    """

    def __init__(self, tool: str, argument: str, value: object, rule: str, detail: str) -> None:
        self.tool = tool
        self.argument = argument
        self.value = value
        self.rule = rule
        self.detail = detail
        where = f"argument {argument!r}" if argument else "the arguments"
        super().__init__(f"{tool}: {where} = {value!r} breaks rule {rule!r}: {detail}")


class PlanError(UserError):
    """A plan is malformed: a bad reference, a cycle, a duplicate id, an unknown tool."""


class PlannerError(UserError):
    """A planner could not produce a plan."""


class ModelError(PlannerError):
    """The model file is missing or corrupt, or its backend is not installed."""


class RunNotFoundError(UserError):
    """No run with that id is in the journal."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r} in the journal; `ember runs` lists the recent ones")


class PolicyError(UserError):
    """A policy file is malformed, or names a tool or principal ember does not know. `line` is
    the 1-based line of the file where the problem is (0 when it is not about one line)."""

    def __init__(self, line: int, reason: str, source: str = "the policy") -> None:
        self.line = line
        self.reason = reason
        where = f"{source}, line {line}" if line else source
        super().__init__(f"{where}: {reason}")


class AuthenticationError(UserError):
    """No token was presented, or the one presented is unknown or revoked."""


class PermissionDeniedError(UserError):
    """The policy denies the principal this action; the message names the rule."""


class EgressError(UserError):
    """A tool, model or exporter would send data to a destination not on the `egress` list."""


class ToolCallError(EmberError):
    """A tool raised while running. `retryable` is the tool's own verdict."""

    def __init__(self, tool: str, message: str, *, retryable: bool = False) -> None:
        self.tool = tool
        self.retryable = retryable
        super().__init__(f"{tool}: {message}")


class JournalError(EmberError):
    """The journal cannot be opened or written."""


class CorruptRecordError(JournalError):
    """A journal record's checksum does not match its body."""


class NondeterminismError(JournalError):
    """Recovery found a step whose tool or arguments differ from what the journal recorded."""

    def __init__(self, run_id: str, step_id: int, recorded: object, expected: object) -> None:
        self.run_id = run_id
        self.step_id = step_id
        super().__init__(
            f"run {run_id}, step {step_id}: the journal recorded {recorded}, but replaying the run "
            f"now gives {expected}. The plan or the code changed since the run started; resume "
            "it with the version that started it, or fail the run"
        )


class PolicyChangedError(JournalError):
    """The control plane (policy, tokens, roles) changed after a call was decided under
    `version`: the decision's record was not committed. The executor decides again."""

    def __init__(self, version: int) -> None:
        self.version = version
        super().__init__(
            f"the control plane changed since version {version} decided this call: decide again"
        )


class EmberInternalError(EmberError):
    """A bug in ember itself. Please report it with the traceback."""
