"""The control plane's rows in the journal database: its version counter, the policies by
version, the tokens (a hash of each, never the token), the audit log and its checkpoints.

Every change (a policy set, a token created or revoked, a role taken away) is one transaction
that makes the change, bumps the version and appends the change's audit entry, so a process
deciding a call sees either the state before the change or after it, and the journal refuses a
decision made before it (`ember.journal.rows`). What the rows
mean (Cedar, principals, signatures) is `ember.policy`'s business.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import msgspec

from ember.errors import JournalError, UserError
from ember.journal.audit import AuditRow, canonical, chain
from ember.journal.rows import read_head
from ember.journal.sqlite import open_database

__all__ = ["Checkpoint", "ControlRows", "ControlStore", "StoredPolicy", "TokenRecord"]

# A control-plane change is a row of its own in `events` (run id '', kind 'control') holding
# its audit entry, numbered and chained after the log's head, read in the same transaction.
_APPEND_AUDIT = (
    "INSERT INTO events(run_id, kind, at, body, crc, audit_seq, audit, chain) "
    "VALUES ('', 'control', ?, ?, ?, ?, ?, ?)"
)


class TokenRecord(msgspec.Struct, frozen=True):
    """A principal's token: its name, roles, the SHA-256 of the token, and when it was revoked."""

    name: str
    roles: tuple[str, ...]
    hash: str
    created_at: float
    revoked_at: float | None = None


class StoredPolicy(msgspec.Struct, frozen=True):
    version: int
    text: str
    at: float
    by: str


class Checkpoint(msgspec.Struct, frozen=True):
    """A signed statement that the audit log's entry `seq` had hash `head`."""

    seq: int
    head: bytes
    at: float
    key_id: str
    signature: bytes


class ControlRows(Protocol):
    """The control plane's rows, in whichever journal database holds them: `ControlStore`
    (SQLite), `ember.journal.pgcontrol.PostgresControlStore` (PostgreSQL)."""

    def close(self) -> None: ...
    def version(self) -> int: ...
    def policy(self) -> StoredPolicy | None: ...
    def tokens(self) -> list[TokenRecord]: ...
    def token_by_hash(self, digest: str) -> TokenRecord | None: ...
    def snapshot(self) -> tuple[int, StoredPolicy | None, list[TokenRecord]]: ...
    def set_policy(self, text: str, by: str) -> int: ...
    def add_token(self, name: str, roles: tuple[str, ...], digest: str, by: str) -> int: ...
    def revoke(self, name: str, by: str, role: str | None = None) -> int: ...
    def audit(self, since: float | None = None) -> Iterator[AuditRow]: ...
    def head(self) -> tuple[int, bytes] | None: ...
    def checkpoints(self) -> list[Checkpoint]: ...
    def add_checkpoint(self, checkpoint: Checkpoint) -> None: ...


class ControlStore:
    """The control-plane rows of the journal database at `path` (its own connection)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db = open_database(self.path)

    def close(self) -> None:
        self._db.close()

    def version(self) -> int:
        """The current version: one read of one row, bumped by every change."""
        return int(self._db.execute("SELECT version FROM control WHERE id = 0").fetchone()[0])

    def policy(self) -> StoredPolicy | None:
        """The policy in force (the latest set), or None if none was ever set."""
        row = self._db.execute(
            "SELECT version, text, at, by FROM policies ORDER BY version DESC LIMIT 1"
        ).fetchone()
        return StoredPolicy(*row) if row else None

    def tokens(self) -> list[TokenRecord]:
        rows = self._db.execute(
            "SELECT name, roles, hash, created_at, revoked_at FROM tokens ORDER BY name"
        ).fetchall()
        return [_token(row) for row in rows]

    def token_by_hash(self, digest: str) -> TokenRecord | None:
        row = self._db.execute(
            "SELECT name, roles, hash, created_at, revoked_at FROM tokens WHERE hash = ?",
            (digest,),
        ).fetchone()
        return _token(row) if row else None

    def snapshot(self) -> tuple[int, StoredPolicy | None, list[TokenRecord]]:
        """The version with the policy and tokens of that version, read in one transaction."""
        self._db.execute("BEGIN")
        try:
            return self.version(), self.policy(), self.tokens()
        finally:
            self._db.execute("COMMIT")

    def set_policy(self, text: str, by: str) -> int:
        """Store `text` as the policy in force (already checked); returns the new version."""

        def store(version: int, at: float) -> dict[str, Any]:
            self._db.execute(
                "INSERT INTO policies(version, text, at, by) VALUES (?, ?, ?, ?)",
                (version, text, at, by),
            )
            return {"by": by, "lines": text.count("\n") + 1, "text": text}

        return self._change("policy.set", store)

    def add_token(self, name: str, roles: tuple[str, ...], digest: str, by: str) -> int:
        """Store a token for `name` (replacing a revoked one); returns the new version."""

        def store(version: int, at: float) -> dict[str, Any]:
            existing = self._db.execute(
                "SELECT revoked_at FROM tokens WHERE name = ?", (name,)
            ).fetchone()
            if existing is not None and existing[0] is None:
                raise UserError(
                    f"principal {name!r} has a token already: revoke it first "
                    f"(`ember tokens revoke {name}`)"
                )
            self._db.execute(
                "INSERT OR REPLACE INTO tokens(name, hash, roles, created_at, revoked_at) "
                "VALUES (?, ?, ?, ?, NULL)",
                (name, digest, json.dumps(list(roles)), at),
            )
            return {"by": by, "name": name, "roles": list(roles)}

        return self._change("token.create", store)

    def revoke(self, name: str, by: str, role: str | None = None) -> int:
        """Revoke `name`'s token, or take `role` away from it; returns the new version."""

        def store(version: int, at: float) -> dict[str, Any]:
            row = self._db.execute(
                "SELECT roles, revoked_at FROM tokens WHERE name = ?", (name,)
            ).fetchone()
            if row is None or row[1] is not None:
                raise UserError(f"principal {name!r} has no live token: `ember tokens list`")
            if role is None:
                self._db.execute("UPDATE tokens SET revoked_at = ? WHERE name = ?", (at, name))
                return {"by": by, "name": name}
            roles = json.loads(row[0])
            if role not in roles:
                raise UserError(f"principal {name!r} does not have role {role!r}: {roles}")
            roles.remove(role)
            self._db.execute(
                "UPDATE tokens SET roles = ? WHERE name = ?", (json.dumps(roles), name)
            )
            return {"by": by, "name": name, "role": role}

        return self._change("token.revoke" if role is None else "role.remove", store)

    def _change(self, kind: str, store: Callable[[int, float], dict[str, Any]]) -> int:
        """One transaction: the change, the version bumped, the audit entry appended."""
        at = time.time()
        try:
            self._db.execute("BEGIN IMMEDIATE")
            version = self.version() + 1
            entry = store(version, at) | {"kind": kind, "version": version}
            entry["at_us"] = round(at * 1_000_000)
            self._db.execute("UPDATE control SET version = ? WHERE id = 0", (version,))
            body = canonical(entry)
            seq, head = read_head(self._db)
            self._db.execute(
                _APPEND_AUDIT, (at, body, zlib.crc32(body), seq + 1, body, chain(head, body))
            )
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return version

    def audit(self, since: float | None = None) -> Iterator[AuditRow]:
        """The audit log's entries in order (from time `since`, epoch seconds): a scan of the
        journal's rows, for verifying and exporting."""
        query = "SELECT audit_seq, at, audit, chain FROM events WHERE audit_seq IS NOT NULL"
        cursor = (
            self._db.execute(query + " ORDER BY seq")
            if since is None
            else self._db.execute(query + " AND at >= ? ORDER BY seq", (since,))
        )
        for seq, at, body, digest in cursor:
            data = body if isinstance(body, bytes) else str(body).encode()  # edited outside
            yield AuditRow(int(seq), at, data, bytes(digest or b""))

    def head(self) -> tuple[int, bytes] | None:
        """The last entry's number and hash."""
        seq, digest = read_head(self._db)
        return (seq, digest) if digest is not None else None

    def checkpoints(self) -> list[Checkpoint]:
        rows = self._db.execute(
            "SELECT seq, head, at, key_id, signature FROM audit_checkpoints ORDER BY seq"
        ).fetchall()
        return [Checkpoint(s, bytes(h), a, k, bytes(g)) for s, h, a, k, g in rows]

    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        try:
            self._db.execute(
                "INSERT OR IGNORE INTO audit_checkpoints(seq, head, at, key_id, signature) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    checkpoint.seq,
                    checkpoint.head,
                    checkpoint.at,
                    checkpoint.key_id,
                    checkpoint.signature,
                ),
            )
        except sqlite3.Error as exc:
            raise JournalError(f"cannot write a checkpoint to {self.path}: {exc}") from None


def _token(row: tuple[Any, ...]) -> TokenRecord:
    name, roles, digest, created_at, revoked_at = row
    return TokenRecord(name, tuple(json.loads(roles)), digest, created_at, revoked_at)
