"""The PostgreSQL journal's schema: migrations, versioned as the SQLite journal's are.

Migration i brings the schema from version i to i + 1 (the version is the one row of
`ember_schema`, SQLite's `user_version`); never edit one that shipped. Processes that open a
journal at once migrate it one at a time (a transaction-scoped advisory lock), and whoever comes
second finds the work done.

The tables are the SQLite journal's (`events`, `runs`, `control`, `policies`, `tokens`,
`audit_checkpoints`), with what a cluster of workers adds:

- `runs`: the run's place in the work queue (`state`: queued, running, waiting, done), the task
  to plan when a worker claims it, and its lease: the worker holding it (`owner`), until when
  (`lease_until`, epoch seconds) and the lease's `epoch`, bumped by every claim. Every append of
  a leased run carries the epoch it was claimed under, and the commit refuses it once the epoch
  moved on (`ember.journal.postgres`: fencing).
- `audit_head`: the audit log's last entry number and hash, one row: a commit that chains an
  entry locks it, so entries are numbered in commit order across every writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.errors import JournalError

__all__ = ["ENDS_IDLE_TRANSACTIONS", "MIGRATIONS", "migrate", "redacted"]

# Run on every session that takes locks other processes wait for (the journal's commits, the
# control plane's changes): the server ends such a session when it is idle in a transaction for
# 5 s, so a process frozen in the middle of one (SIGSTOP, a paused VM) cannot keep the locks.
ENDS_IDLE_TRANSACTIONS = "SET idle_in_transaction_session_timeout = '5s'"

MIGRATIONS: Sequence[str] = (
    """
    CREATE TABLE runs(
        run_key bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id text NOT NULL UNIQUE,
        state text NOT NULL DEFAULT 'running',
        task text NOT NULL DEFAULT '',
        principal text NOT NULL DEFAULT '',
        owner text NOT NULL DEFAULT '',
        epoch bigint NOT NULL DEFAULT 0,
        lease_until double precision,
        queued_at double precision
    );
    CREATE INDEX runs_to_claim ON runs(run_key) WHERE state IN ('queued', 'running');
    CREATE TABLE events(
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id text NOT NULL,
        kind text NOT NULL,
        at double precision NOT NULL,
        body bytea NOT NULL,
        crc bigint NOT NULL,
        run_key bigint,
        audit_seq bigint UNIQUE,
        audit bytea,
        chain bytea
    );
    CREATE INDEX events_by_run_key ON events(run_key, seq);
    CREATE INDEX runs_by_start ON events(seq) WHERE kind = 'run.started';
    CREATE TABLE control(id integer PRIMARY KEY CHECK (id = 0), version bigint NOT NULL);
    INSERT INTO control VALUES (0, 0);
    CREATE TABLE audit_head(
        id integer PRIMARY KEY CHECK (id = 0), seq bigint NOT NULL, chain bytea
    );
    INSERT INTO audit_head VALUES (0, 0, NULL);
    CREATE TABLE policies(
        version bigint PRIMARY KEY, text text NOT NULL, at double precision NOT NULL,
        by text NOT NULL
    );
    CREATE TABLE tokens(
        name text PRIMARY KEY,
        hash text NOT NULL UNIQUE,
        roles text NOT NULL,
        created_at double precision NOT NULL,
        revoked_at double precision
    );
    CREATE TABLE audit_checkpoints(
        seq bigint PRIMARY KEY, head bytea NOT NULL, at double precision NOT NULL,
        key_id text NOT NULL, signature bytea NOT NULL
    );
    """,
)

_LOCK = 0x656D626572  # "ember": the advisory lock migrations take


def redacted(url: str) -> str:
    """`url` without its password, for messages."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # an unparsable URL: what follows its credentials
        return url.rsplit("@", maxsplit=1)[-1]
    parts.pop("password", None)
    return make_conninfo("", **parts)


def migrate(conn: Any, url: str) -> None:
    """Bring the database of `conn` (a psycopg connection, autocommit) to the current schema.
    `JournalError` if it is newer than this ember knows."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS ember_schema(version integer NOT NULL)")
        row = conn.execute("SELECT version FROM ember_schema").fetchone()
        if row is None:
            conn.execute("INSERT INTO ember_schema VALUES (0)")
        version = row[0] if row else 0
        if version > len(MIGRATIONS):
            raise JournalError(
                f"the journal at {redacted(url)} has schema version {version}, newer than "
                f"this ember knows ({len(MIGRATIONS)}): upgrade ember"
            )
        for index in range(version, len(MIGRATIONS)):
            conn.execute(MIGRATIONS[index])
            conn.execute("UPDATE ember_schema SET version = %s", (index + 1,))
