"""The side-effecting tool the cluster's tests and chaos run on workers: each call is a row of
`fx_calls` (every call, never deduplicated) and, deduplicated by idempotency key, a row of
`fx_effects` (the effect), in the PostgreSQL database `$FX_URL`. The counts are the truth:
0 effects for a step is a lost step, 2 a duplicated effect."""

from __future__ import annotations

import os
import time
from typing import Any

from ember import tool

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS fx_calls(step int, key text, pid int, at float8);"
    "CREATE TABLE IF NOT EXISTS fx_effects(step int, key text PRIMARY KEY)"
)


def prepare(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_SCHEMA)


def counts(url: str) -> dict[int, int]:
    """Effects by step."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT step, count(*) FROM fx_effects GROUP BY step").fetchall()
    return dict(rows)


def plan(steps: int) -> dict[str, Any]:
    """A chain of `steps` effects, as a scripted planner's plan."""
    return {
        "steps": [
            {"id": i, "tool": "effect", "args": {"n": i}, "after": [i - 1] if i > 1 else []}
            for i in range(1, steps + 1)
        ]
    }


_conn: Any = None


@tool(idempotent=True)
def effect(n: int, idempotency_key: str = "") -> dict[str, int]:
    """Record one side effect, deduplicated by its idempotency key, after a pause."""
    import psycopg

    global _conn  # noqa: PLW0603 - one connection a worker process, made again if it broke
    time.sleep(float(os.environ.get("FX_PAUSE_S", "0")))
    for attempt in (1, 2):
        try:
            if _conn is None or _conn.broken or _conn.closed:
                _conn = psycopg.connect(os.environ["FX_URL"], autocommit=True)
            with _conn.transaction():
                _conn.execute(
                    "INSERT INTO fx_calls VALUES (%s, %s, %s, %s)",
                    (n, idempotency_key, os.getpid(), time.time()),
                )
                _conn.execute(
                    "INSERT INTO fx_effects VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                    (n, idempotency_key),
                )
            break
        except psycopg.OperationalError:
            if attempt == 2:
                raise
    return {"n": n}
