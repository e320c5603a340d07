"""The child process of the fan-out crash test (`test_crash_lists.py`): one run whose second
step sends an "email" to each of N addresses, each a row in an effect log of its own.

    python -m tests.fanout_child work|resume JOURNAL EFFECTS N

The effect log is the truth the test counts: `effects` keeps one row per idempotency key (the
tool dedupes, as a mail API that takes an idempotency key does), `attempts` one row per call.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from ember import Plan, Runtime, ScriptedPlanner, SQLiteJournal, Step, ToolRegistry, tool
from ember.executor.resilience import ExecutionSettings

RUN_ID = "r-fanout"


def runtime(db: Path, effects: Path, count: int) -> Runtime:
    sink = sqlite3.connect(effects, isolation_level=None)
    sink.execute("PRAGMA journal_mode=WAL")
    sink.execute("CREATE TABLE IF NOT EXISTS effects(item INTEGER, key TEXT UNIQUE)")
    sink.execute("CREATE TABLE IF NOT EXISTS attempts(item INTEGER, key TEXT)")

    @tool(name="list_customers", inline=True)
    def list_customers() -> dict[str, Any]:
        """The customers to write to."""
        rows = [{"n": n, "email": f"c{n}@example.com"} for n in range(count)]
        return {"rows": rows}

    @tool(name="send_email", idempotent=True)
    async def send_email(to: str, n: int, idempotency_key: str = "") -> dict[str, Any]:
        """Send one message; a repeat with the same key is not sent again."""
        sink.execute("INSERT INTO attempts VALUES (?, ?)", (n, idempotency_key))
        await asyncio.sleep(0.01)  # the mail server's round trip
        sink.execute("INSERT OR IGNORE INTO effects VALUES (?, ?)", (n, idempotency_key))
        return {"to": to}

    registry = ToolRegistry()
    registry.register(list_customers)
    registry.register(send_email)
    plan = Plan(
        [
            Step(1, "list_customers"),
            Step(2, "send_email", {"to": "$item.email", "n": "$item.n"}, each="$1.rows"),
        ]
    )
    journal = SQLiteJournal(db)
    settings = ExecutionSettings(max_concurrency=8)
    return Runtime(registry, ScriptedPlanner({"fan out": plan}), journal, settings=settings)


def main(argv: list[str]) -> int:
    action, db, effects, count = argv
    ember = runtime(Path(db), Path(effects), int(count))
    if action == "work":
        print("STARTED", flush=True)
        result = asyncio.run(ember.run("fan out", run_id=RUN_ID))
    else:
        result = asyncio.run(ember.resume(RUN_ID))
    print(json.dumps({"status": result.status.value}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
