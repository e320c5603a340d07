"""A 200-item fan-out killed with SIGKILL mid-way, then resumed: every item's effect happens
exactly once, counted from the tool's own effect log (`tests/fanout_child.py`)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from ember.journal import RunStatus, SQLiteJournal, fold

ROOT = Path(__file__).resolve().parents[1]
ITEMS = 200


def _child(action: str, db: Path, effects: Path) -> list[str]:
    return [sys.executable, "-m", "tests.fanout_child", action, str(db), str(effects), str(ITEMS)]


def _count(effects: Path, table: str) -> int:
    if not effects.exists():
        return 0
    db = sqlite3.connect(effects)
    try:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def test_a_fan_out_of_200_killed_mid_way_resends_none_and_loses_none(tmp_path: Path) -> None:
    db, effects = tmp_path / "ember.db", tmp_path / "effects.db"
    child = subprocess.Popen(
        _child("work", db, effects), cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "STARTED"
    while _count(effects, "effects") < 60 and child.poll() is None:
        time.sleep(0.002)  # polling the effect log: kill once a good part is sent
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    sent_before = _count(effects, "effects")
    assert 0 < sent_before < ITEMS  # killed mid-way

    journal = SQLiteJournal(db)
    crashed = fold("r-fanout", journal.read("r-fanout"))
    journal.close()
    assert crashed.status is RunStatus.RUNNING
    finished = {i for i, s in crashed.steps[2].items.items() if s.status == "succeeded"}
    assert 0 < len(finished) <= sent_before

    resumed = subprocess.run(
        _child("resume", db, effects),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["status"] == "succeeded"

    log = sqlite3.connect(effects)
    per_item = dict(log.execute("SELECT item, count(*) FROM effects GROUP BY item").fetchall())
    attempts = log.execute("SELECT item, key FROM attempts").fetchall()
    log.close()
    assert per_item == dict.fromkeys(range(ITEMS), 1)  # every item exactly once
    calls = Counter(item for item, _ in attempts)
    called_again = {item for item, n in calls.items() if n > 1}
    assert not called_again & finished  # an item journaled as done was never called again
    assert len(called_again) <= 8  # only those in flight at the kill (max_concurrency)
    keys: dict[int, str] = {}
    for item, key in attempts:
        assert keys.setdefault(item, key) == key  # a call made again carries the same key
