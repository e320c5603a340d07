"""The control plane as one process sees it: the current version's compiled policy and
principals (`Snapshot`), rebuilt when the version in the database moves.

Deciding a call reads nothing: it uses the snapshot held. The journal commits the decision only
while the database's version is still the snapshot's (else `PolicyChangedError`); the executor
then calls `refresh` (one indexed read of the version counter, and a rebuild since it moved)
and decides again. So a change committed by any process bites at the next call of every run.
"""

from __future__ import annotations

import getpass
import time
from typing import Any

import msgspec

from ember.errors import PermissionDeniedError
from ember.journal.control import ControlRows, TokenRecord
from ember.policy.cedar import DEFAULT_POLICY, Judgement, Policy, Principal

__all__ = ["ControlPlane", "Snapshot", "local_user"]


def local_user() -> str:
    """The OS user running this process: the principal the `ember` command acts as."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


class Snapshot(msgspec.Struct, frozen=True):
    """The control plane at one version: its policy and its principals."""

    version: int
    policy: Policy
    tokens: dict[str, TokenRecord]
    local: str  # the OS user of this process, a principal without a token
    known: dict[str, Principal] = msgspec.field(default_factory=dict)  # principal()'s answers

    def principal(self, name: str) -> Principal:
        """The principal `name` as of this version (`revoked` says why it may not act)."""
        known = self.known.get(name)
        if known is None:
            known = self.known[name] = self._principal(name or self.local)
        return known

    def _principal(self, name: str) -> Principal:
        record = self.tokens.get(name)
        if record is None:
            if name == self.local:
                return Principal(name)
            return Principal(
                name, revoked=f"principal {name} has no token (version {self.version})"
            )
        if record.revoked_at is not None:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.revoked_at))
            return Principal(name, record.roles, f"the token of {name} was revoked at {when}")
        return Principal(name, record.roles)

    def require(
        self, name: str, action: str, resource: str, context: dict[str, Any] | None = None
    ) -> Judgement:
        """The judgement allowing `name` to do `action`; PermissionDeniedError if it is denied."""
        judged = self.policy.judge(self.principal(name), action, resource, lambda: context or {})
        if not judged.allowed:
            raise PermissionDeniedError(judged.reason)
        return judged


class ControlPlane:
    """The store and the snapshot of its current version (see the module docstring)."""

    def __init__(self, store: ControlRows, local: str | None = None) -> None:
        self.store = store
        self.local = local or local_user()
        self._snapshot = self._load()

    def snapshot(self) -> Snapshot:
        """The snapshot held: no I/O (the journal checks it is still current at commit)."""
        return self._snapshot

    def refresh(self) -> Snapshot:
        """The current snapshot: one read of the version, and a rebuild if it moved."""
        if self.store.version() != self._snapshot.version:
            self._snapshot = self._load()
        return self._snapshot

    def _load(self) -> Snapshot:
        version, stored, tokens = self.store.snapshot()
        text = stored.text if stored is not None else DEFAULT_POLICY
        policy = Policy(version, text, f"the stored policy v{version}")
        return Snapshot(version, policy, {t.name: t for t in tokens}, self.local)
