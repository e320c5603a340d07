"""The side-effecting tools that `ember chaos --db postgresql://...` and the cluster tests run
on workers, and the count of their effects: the truth about what happened.

Each call of `effect` (idempotent: deduplicated by its idempotency key) or `effect_once` (not
idempotent: every call is an effect) is a row of `fx_effects` in the PostgreSQL database
`$FX_URL`, written by the tool itself in its own transaction. A call whose connection fails
mid-write (a terminated backend) looks up its own call id before writing again, so the record
holds each call exactly once: a step with 0 rows was lost, with 2 it was repeated by ember.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from ember.tools.decorator import tool

__all__ = ["counts", "effect", "effect_once", "plan", "prepare"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fx_effects(
    run text NOT NULL, step int NOT NULL, key text NOT NULL, idempotent bool NOT NULL,
    call uuid NOT NULL UNIQUE, pid int NOT NULL, at float8 NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS fx_once_a_key ON fx_effects(key) WHERE idempotent
"""


def prepare(url: str) -> None:
    """Create the effects table in the database at `url` (kept if it exists)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_SCHEMA)


def counts(url: str, runs: list[str] | None = None) -> dict[tuple[str, int], int]:
    """Effects by (run, step), of `runs` when given."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT run, step, count(*) FROM fx_effects "
            "WHERE %s::text[] IS NULL OR run = ANY(%s::text[]) GROUP BY run, step",
            (runs, runs),
        ).fetchall()
    return {(run, step): count for run, step, count in rows}


def plan(tool_name: str, steps: int) -> dict[str, Any]:
    """A chain of `steps` calls of `tool_name`, as a scripted planner's plan."""
    return {
        "steps": [
            {"id": i, "tool": tool_name, "args": {"n": i}, "after": [i - 1] if i > 1 else []}
            for i in range(1, steps + 1)
        ]
    }


_conn: Any = None


def _record(n: int, key: str, idempotent: bool) -> None:
    import psycopg

    global _conn  # noqa: PLW0603 - one connection a worker process, made again if it broke
    time.sleep(float(os.environ.get("FX_PAUSE_S", "0")))
    call, run = str(uuid.uuid4()), key.split(":", 1)[0]
    for attempt in range(5):
        try:
            if _conn is None or _conn.broken or _conn.closed:
                _conn = psycopg.connect(os.environ["FX_URL"], autocommit=True)
            if (
                attempt
                and _conn.execute("SELECT 1 FROM fx_effects WHERE call = %s", (call,)).fetchone()
            ):
                return  # the write that failed had committed
            _conn.execute(
                "INSERT INTO fx_effects VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (key) WHERE idempotent DO NOTHING",
                (run, n, key, idempotent, call, os.getpid(), time.time()),
            )
            return
        except psycopg.OperationalError:
            time.sleep(0.05 * (attempt + 1))
    raise RuntimeError(f"cannot record effect {n} of {run}: the database is unreachable")


@tool(idempotent=True)
def effect(n: int, idempotency_key: str = "") -> dict[str, int]:
    """Record one side effect, deduplicated by its idempotency key."""
    _record(n, idempotency_key, idempotent=True)
    return {"n": n}


@tool
def effect_once(n: int, idempotency_key: str = "") -> dict[str, int]:
    """Record one side effect; calling it again records another (not idempotent)."""
    _record(n, idempotency_key, idempotent=False)
    return {"n": n}
