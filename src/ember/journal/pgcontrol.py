"""The control plane's rows in the PostgreSQL journal: the SQLite `ControlStore`'s, shared by
every worker of a cluster (see `ember.journal.control` for what each change does).

A change is one transaction: the `control` row locked for update (so it waits for the commits
that decide under the current version, which hold it under a share lock, and they for it), the
change, the version bumped, and its audit entry chained after `audit_head` (locked too), in a
row of its own (run id '', kind 'control').
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from ember.errors import JournalError, UserError
from ember.journal.audit import AuditRow, canonical, chain
from ember.journal.control import Checkpoint, StoredPolicy, TokenRecord

__all__ = ["PostgresControlStore"]

Store = Callable[[Any, int, float], dict[str, Any]]  # (connection, version, at) -> entry


class PostgresControlStore:
    """The control-plane rows of the PostgreSQL journal at `url` (its own connection)."""

    def __init__(self, url: str) -> None:
        import psycopg

        from ember.journal.pgschema import migrate, redacted

        self.url, self.where = url, redacted(url)
        try:
            self._conn = _connect(url)
            migrate(self._conn, url)
        except psycopg.Error as exc:
            raise JournalError(f"cannot open the journal at {self.where}: {exc}") from None

    def close(self) -> None:
        self._conn.close()

    @property
    def _db(self) -> Any:
        """The connection, made again if the server dropped it (a restart, a terminated
        backend): the next statement runs on a fresh one."""
        import psycopg

        if self._conn.broken or self._conn.closed:
            try:
                self._conn = _connect(self.url)
            except psycopg.Error as exc:
                raise JournalError(f"cannot reach the journal at {self.where}: {exc}") from None
        return self._conn

    def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of a read, tried once more on a fresh connection if the first one broke."""
        import psycopg

        try:
            return list(self._db.execute(sql, params).fetchall())
        except psycopg.OperationalError:
            if not self._conn.broken:
                raise
            return list(self._db.execute(sql, params).fetchall())

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        rows = self._all(sql, params)
        return rows[0] if rows else None

    def version(self) -> int:
        row = self._one("SELECT version FROM control WHERE id = 0")
        assert row is not None
        return int(row[0])

    def policy(self) -> StoredPolicy | None:
        row = self._one("SELECT version, text, at, by FROM policies ORDER BY version DESC LIMIT 1")
        return StoredPolicy(*row) if row else None

    def tokens(self) -> list[TokenRecord]:
        rows = self._all(
            "SELECT name, roles, hash, created_at, revoked_at FROM tokens ORDER BY name"
        )
        return [_token(row) for row in rows]

    def token_by_hash(self, digest: str) -> TokenRecord | None:
        row = self._one(
            "SELECT name, roles, hash, created_at, revoked_at FROM tokens WHERE hash = %s",
            (digest,),
        )
        return _token(row) if row else None

    def snapshot(self) -> tuple[int, StoredPolicy | None, list[TokenRecord]]:
        """The version with the policy and tokens of that version, read in one transaction."""
        db = self._db
        with db.transaction():
            db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return self.version(), self.policy(), self.tokens()

    def set_policy(self, text: str, by: str) -> int:
        def store(db: Any, version: int, at: float) -> dict[str, Any]:
            db.execute(
                "INSERT INTO policies(version, text, at, by) VALUES (%s, %s, %s, %s)",
                (version, text, at, by),
            )
            return {"by": by, "lines": text.count("\n") + 1, "text": text}

        return self._change("policy.set", store)

    def add_token(self, name: str, roles: tuple[str, ...], digest: str, by: str) -> int:
        def store(db: Any, version: int, at: float) -> dict[str, Any]:
            existing = db.execute(
                "SELECT revoked_at FROM tokens WHERE name = %s", (name,)
            ).fetchone()
            if existing is not None and existing[0] is None:
                raise UserError(
                    f"principal {name!r} has a token already: revoke it first "
                    f"(`ember tokens revoke {name}`)"
                )
            db.execute(
                "INSERT INTO tokens(name, hash, roles, created_at, revoked_at) "
                "VALUES (%s, %s, %s, %s, NULL) ON CONFLICT (name) DO UPDATE SET "
                "hash = EXCLUDED.hash, roles = EXCLUDED.roles, "
                "created_at = EXCLUDED.created_at, revoked_at = NULL",
                (name, digest, json.dumps(list(roles)), at),
            )
            return {"by": by, "name": name, "roles": list(roles)}

        return self._change("token.create", store)

    def revoke(self, name: str, by: str, role: str | None = None) -> int:
        def store(db: Any, version: int, at: float) -> dict[str, Any]:
            row = db.execute(
                "SELECT roles, revoked_at FROM tokens WHERE name = %s", (name,)
            ).fetchone()
            if row is None or row[1] is not None:
                raise UserError(f"principal {name!r} has no live token: `ember tokens list`")
            if role is None:
                db.execute("UPDATE tokens SET revoked_at = %s WHERE name = %s", (at, name))
                return {"by": by, "name": name}
            roles = json.loads(row[0])
            if role not in roles:
                raise UserError(f"principal {name!r} does not have role {role!r}: {roles}")
            roles.remove(role)
            db.execute("UPDATE tokens SET roles = %s WHERE name = %s", (json.dumps(roles), name))
            return {"by": by, "name": name, "role": role}

        return self._change("token.revoke" if role is None else "role.remove", store)

    def _change(self, kind: str, store: Store) -> int:
        """One transaction: the change, the version bumped, the audit entry appended; nothing
        of it if the connection fails (`JournalError`)."""
        import psycopg

        try:
            return self._changed(kind, store)
        except psycopg.Error as exc:
            raise JournalError(
                f"cannot change the control plane at {self.where}: {exc}; nothing was changed, "
                "try again"
            ) from None

    def _changed(self, kind: str, store: Store) -> int:
        at = time.time()
        db = self._db
        with db.transaction():
            version = db.execute("SELECT version FROM control WHERE id = 0 FOR UPDATE").fetchone()
            version = int(version[0]) + 1
            entry = store(db, version, at) | {"kind": kind, "version": version}
            entry["at_us"] = round(at * 1_000_000)
            db.execute("UPDATE control SET version = %s WHERE id = 0", (version,))
            body = canonical(entry)
            seq, head = db.execute(
                "SELECT seq, chain FROM audit_head WHERE id = 0 FOR UPDATE"
            ).fetchone()
            digest = chain(bytes(head) if head is not None else None, body)
            db.execute(
                "INSERT INTO events(run_id, kind, at, body, crc, audit_seq, audit, chain) "
                "VALUES ('', 'control', %s, %s, %s, %s, %s, %s)",
                (at, body, zlib.crc32(body), seq + 1, body, digest),
            )
            db.execute("UPDATE audit_head SET seq = %s, chain = %s WHERE id = 0", (seq + 1, digest))
        return version

    def audit(self, since: float | None = None) -> Iterator[AuditRow]:
        """The audit log's entries in order (from time `since`, epoch seconds)."""
        query = "SELECT audit_seq, at, audit, chain FROM events WHERE audit_seq IS NOT NULL"
        rows = (
            self._all(query + " ORDER BY audit_seq")
            if since is None
            else self._all(query + " AND at >= %s ORDER BY audit_seq", (since,))
        )
        for seq, at, body, digest in rows:
            yield AuditRow(int(seq), at, bytes(body), bytes(digest or b""))

    def head(self) -> tuple[int, bytes] | None:
        row = self._one("SELECT seq, chain FROM audit_head WHERE id = 0")
        assert row is not None
        return (int(row[0]), bytes(row[1])) if row[1] is not None else None

    def checkpoints(self) -> list[Checkpoint]:
        rows = self._all(
            "SELECT seq, head, at, key_id, signature FROM audit_checkpoints ORDER BY seq"
        )
        return [Checkpoint(s, bytes(h), a, k, bytes(g)) for s, h, a, k, g in rows]

    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        import psycopg

        try:
            self._db.execute(
                "INSERT INTO audit_checkpoints(seq, head, at, key_id, signature) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (seq) DO NOTHING",
                (
                    checkpoint.seq,
                    checkpoint.head,
                    checkpoint.at,
                    checkpoint.key_id,
                    checkpoint.signature,
                ),
            )
        except psycopg.Error as exc:
            raise JournalError(f"cannot write a checkpoint to {self.where}: {exc}") from None


def _token(row: tuple[Any, ...]) -> TokenRecord:
    name, roles, digest, created_at, revoked_at = row
    return TokenRecord(name, tuple(json.loads(roles)), digest, created_at, revoked_at)


def _connect(url: str) -> Any:
    """A connection for the store: a change holds the control row and the audit head locked
    (every audited commit waits for them), so the server ends the session of a process frozen
    in the middle of one (`ENDS_IDLE_TRANSACTIONS`)."""
    import psycopg

    from ember.journal.pgschema import ENDS_IDLE_TRANSACTIONS

    conn = psycopg.connect(url, autocommit=True)
    conn.execute(ENDS_IDLE_TRANSACTIONS)
    return conn
