"""The audit log's entries and hash chain (pure: no I/O).

Every policy decision (a call allowed, a call denied, an approval asked for, given or refused),
every call, every run's start and every change to the control plane (policy, tokens, roles) is
an audit entry: a kind and a JSON object, written as canonical JSON (`canonical`: keys sorted,
no spaces, UTF-8, integers only, in the manner of RFC 8785). Entries form a SHA-256 chain:

    hash(n) = SHA-256(hash(n - 1) || body(n)),   hash(0) = 32 zero bytes

so editing, removing, inserting or reordering an entry breaks the chain at that entry or the one
after it (`verify_chain`). Signed checkpoints of the chain head (`ember.policy.signing`) catch a
log cut short after them, and a chain rewritten from some entry to its end.

The SQLite journal keeps an entry in the row of the event it belongs to, numbered and chained
by the same write (`ember.journal.rows`), so auditing a call adds no row or commit to the step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

import msgspec

from ember.journal.events import (
    Event,
    RunStarted,
    StepAwaitingApproval,
    StepDenied,
    StepIntent,
    StepResolved,
)
from ember.plan import canonical_args

__all__ = [
    "GENESIS",
    "AuditRow",
    "Break",
    "audit_entry",
    "canonical",
    "chain",
    "guard_of",
    "verify_chain",
]

GENESIS = bytes(32)  # the hash before the first entry
_encoder = msgspec.json.Encoder(order="sorted")


def canonical(entry: dict[str, Any]) -> bytes:
    """`entry` as canonical JSON: sorted keys, no whitespace, UTF-8. Entries hold strings,
    integers, booleans, lists and objects only (times are integer microseconds), for which this
    is the RFC 8785 form."""
    return _encoder.encode(entry)


def chain(previous: bytes | None, body: bytes) -> bytes:
    """The hash of an entry whose predecessor's hash is `previous` (None: the first entry)."""
    return hashlib.sha256((previous or GENESIS) + body).digest()


def _us(at: float) -> int:
    return round(at * 1_000_000)


# One struct a kind of entry, fields in sorted order: msgspec writes a struct's fields in the
# order they are declared, so encoding one is the canonical form, without sorting a dict.
class _Call(msgspec.Struct, frozen=True):
    at_us: int
    key: str  # the idempotency key: run, step and a digest of tool and canonical arguments
    kind: str
    policy: int
    principal: str
    rule: str
    run: str
    step: int
    tool: str


class _Deny(msgspec.Struct, frozen=True):
    args_sha256: str
    at_us: int
    kind: str
    policy: int
    principal: str
    reason: str
    rule: str
    run: str
    step: int
    tool: str


class _Approval(msgspec.Struct, frozen=True):
    at_us: int
    kind: str  # approval.wait (asked) / approval.approve, .deny, .retry, .skip, .fail (given)
    policy: int
    principal: str  # who started the run (asked), or who decided (given)
    rule: str
    run: str
    step: int
    tool: str


class _Started(msgspec.Struct, frozen=True):
    at_us: int
    kind: str
    principal: str
    run: str
    task_sha256: str


_plain = msgspec.json.Encoder()


def audit_entry(event: Event) -> bytes | None:
    """The canonical audit entry of a journal event, or None if it has none. A call is named
    by its idempotency key, which digests run, step, tool and arguments."""
    entry: msgspec.Struct
    match event:
        case StepIntent(policy=int(policy)):
            entry = _Call(
                _us(event.at),
                event.idempotency_key,
                "call",
                policy,
                event.principal,
                event.rule,
                event.run_id,
                event.step_id,
                event.tool,
            )
        case StepDenied(policy=int(policy)):
            digest = hashlib.sha256(canonical_args(event.args)).hexdigest()
            entry = _Deny(
                digest,
                _us(event.at),
                "deny",
                policy,
                event.principal,
                event.reason,
                event.rule,
                event.run_id,
                event.step_id,
                event.tool,
            )
        case StepAwaitingApproval(policy=int(policy)):
            entry = _Approval(
                _us(event.at),
                "approval.wait",
                policy,
                event.principal,
                event.rule,
                event.run_id,
                event.step_id,
                event.tool,
            )
        case StepResolved(policy=int(policy)):
            entry = _Approval(
                _us(event.at),
                f"approval.{event.decision.value}",
                policy,
                event.by,
                event.rule,
                event.run_id,
                event.step_id,
                "",
            )
        case RunStarted(principal=str(principal)) if principal:
            digest = hashlib.sha256(event.task.encode()).hexdigest()
            entry = _Started(_us(event.at), "run.started", principal, event.run_id, digest)
        case _:
            return None
    return _plain.encode(entry)


def guard_of(event: Event) -> int | None:
    """The control-plane version `event`'s decision was made under, if it records one: the
    journal commits it only while that version is current."""
    if isinstance(event, (StepIntent, StepDenied, StepAwaitingApproval, StepResolved)):
        return event.policy
    return None


class AuditRow(msgspec.Struct, frozen=True):
    """One stored entry: its place in the log (1, 2, ...), when, its body and chained hash."""

    seq: int
    at: float
    body: bytes
    hash: bytes


class Break(msgspec.Struct, frozen=True):
    """The first entry where the log stops being what was written: `seq`, and what is wrong."""

    seq: int
    problem: str


def verify_chain(rows: Iterable[AuditRow], heads: dict[int, bytes] | None = None) -> Break | None:
    """The first broken entry of `rows` (in order), or None if the chain holds. `heads`: the
    hash a signed checkpoint vouches for at each of those entry numbers."""
    heads = heads or {}
    listed = list(rows)
    for index, row in enumerate(listed):
        expected = index + 1
        if row.seq != expected:
            return Break(expected, f"missing: entry {expected} was removed (next: {row.seq})")
        previous = listed[index - 1].hash if index else None
        if chain(previous, row.body) != row.hash:
            return _diagnose(listed, index)
        vouched = heads.get(row.seq)
        if vouched is not None and vouched != row.hash:
            return Break(row.seq, "differs from the signed checkpoint: the log was rewritten")
    beyond = [seq for seq in heads if seq > len(listed)]
    if beyond:
        return Break(
            len(listed) + 1,
            f"missing: the log ends at entry {len(listed)}, but a signed checkpoint vouches "
            f"for entry {max(beyond)}: it was truncated",
        )
    return None


def _diagnose(rows: list[AuditRow], index: int) -> Break:
    """Entry `index` does not follow the one before it: say what most likely happened."""
    row = rows[index]
    before_last = rows[index - 2].hash if index >= 2 else None
    if index >= 1 and chain(before_last, row.body) == row.hash:
        return Break(row.seq - 1, "inserted: the entry after it follows the entry before it")
    if index + 1 < len(rows) and chain(rows[index + 1].hash, row.body) == row.hash:
        return Break(row.seq, "moved: it follows the entry after it (entries were reordered)")
    return Break(
        row.seq,
        "does not match its hash chain: it was edited, or an entry before it was removed",
    )
