"""The audit log, tampered with in a real SQLite file the way an attacker would (edit, delete,
insert, reorder, truncate, rewrite), and checked by `ember audit verify` in a child process:
each tampering is found at the entry where it was done."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from ember.journal.audit import AuditRow, canonical, chain, verify_chain

from .test_control_plane import OPS_RECORD, RUNS, Plane


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Plane:
    """A journal whose audit log holds token and policy changes, and two runs' decisions."""
    plane = Plane(tmp_path_factory.mktemp("audit"))
    plane.env["EMBER_EFFECT_SECONDS"] = "0"
    plane.env["EMBER_AUDIT_KEY"] = str(plane.root / "audit.key")  # shared by the copies
    plane.token("bob", "ops")
    plane.policy(RUNS + OPS_RECORD)
    for _ in range(2):
        done = plane.ember("--as", "bob", *plane.run_args("four"), token="bob")
        assert done.returncode == 0, done.stderr
    return plane


def _tampered(plane: Plane, tmp_path: Path, change: Callable[[sqlite3.Connection], None]) -> str:
    """`ember audit verify` on a copy of the journal after `change`."""
    copy = tmp_path / "copy.db"
    shutil.copy(plane.root / "ember.db", copy)
    db = sqlite3.connect(copy, isolation_level=None)
    change(db)
    db.close()
    env = dict(plane.env, EMBER_DB=str(copy))
    from .conftest import ember

    checked = ember(env, "audit", "verify")
    assert checked.returncode == (0 if "ok:" in checked.stdout else 1)
    return checked.stdout.strip()


def _row(db: sqlite3.Connection, entry: int) -> tuple[int, bytes, bytes]:
    seq, audit, digest = db.execute(
        "SELECT seq, audit, chain FROM events WHERE audit_seq = ?", (entry,)
    ).fetchone()
    return seq, audit, digest


def test_the_untouched_log_verifies(logged: Plane, tmp_path: Path) -> None:
    out = _tampered(logged, tmp_path, lambda db: None)
    assert out.startswith("ok: ")
    entries = logged.audit()
    kinds = [entry["kind"] for entry in entries]
    assert kinds[:2] == ["token.create", "policy.set"]
    assert kinds.count("run.started") == 2
    assert kinds.count("call") == 8
    assert f"ok: {len(entries)} entries chained" in out
    assert "checkpoints" in out


def test_an_edited_entry_is_found(logged: Plane, tmp_path: Path) -> None:
    def edit(db: sqlite3.Connection) -> None:
        seq, audit, _ = _row(db, 5)
        forged = audit.replace(b'"principal":"bob"', b'"principal":"eve"')
        assert forged != audit
        db.execute("UPDATE events SET audit = ? WHERE seq = ?", (forged, seq))

    assert _tampered(logged, tmp_path, edit).startswith("BROKEN at entry 5: does not match")


def test_a_removed_entry_is_found(logged: Plane, tmp_path: Path) -> None:
    def delete(db: sqlite3.Connection) -> None:
        db.execute("DELETE FROM events WHERE audit_seq = 6")

    assert _tampered(logged, tmp_path, delete).startswith("BROKEN at entry 6: missing")


def test_a_removed_entry_with_the_rest_renumbered_is_found(logged: Plane, tmp_path: Path) -> None:
    def delete(db: sqlite3.Connection) -> None:
        db.execute("DELETE FROM events WHERE audit_seq = 6")
        db.execute("UPDATE events SET audit_seq = audit_seq - 1 WHERE audit_seq > 6")

    assert _tampered(logged, tmp_path, delete).startswith("BROKEN at entry 6: does not match")


def test_an_inserted_entry_is_found(logged: Plane, tmp_path: Path) -> None:
    """The attacker even chains the forged entry to the one before it."""

    def insert(db: sqlite3.Connection) -> None:
        _, _, previous = _row(db, 4)
        seq, _, _ = _row(db, 5)
        forged = canonical({"kind": "call", "principal": "eve", "tool": "record"})
        db.execute("UPDATE events SET audit_seq = audit_seq + 1 WHERE audit_seq >= 5")
        db.execute("UPDATE events SET seq = seq + 1000000 WHERE seq >= ?", (seq,))  # make room
        db.execute(
            "INSERT INTO events(seq, run_id, kind, at, body, crc, audit_seq, audit, chain) "
            "VALUES (?, '', 'control', 0, x'', 0, 5, ?, ?)",
            (seq, forged, chain(previous, forged)),
        )

    out = _tampered(logged, tmp_path, insert)
    assert out.startswith("BROKEN at entry 5: inserted")


def test_reordered_entries_are_found(logged: Plane, tmp_path: Path) -> None:
    def swap(db: sqlite3.Connection) -> None:
        seq7, audit7, hash7 = _row(db, 7)
        seq8, audit8, hash8 = _row(db, 8)
        db.execute("UPDATE events SET audit = ?, chain = ? WHERE seq = ?", (audit8, hash8, seq7))
        db.execute("UPDATE events SET audit = ?, chain = ? WHERE seq = ?", (audit7, hash7, seq8))

    assert _tampered(logged, tmp_path, swap).startswith("BROKEN at entry 7: moved")


def test_a_log_truncated_after_a_checkpoint_is_found(logged: Plane, tmp_path: Path) -> None:
    last = len(logged.audit())

    def truncate(db: sqlite3.Connection) -> None:
        db.execute("DELETE FROM events WHERE audit_seq > ?", (last - 3,))
        db.execute("DELETE FROM audit_checkpoints")  # the attacker removes these too

    out = _tampered(logged, tmp_path, truncate)  # the checkpoint beside the key still vouches
    assert out.startswith(f"BROKEN at entry {last - 2}: missing")
    assert "truncated" in out


def test_a_log_rewritten_with_fresh_hashes_fails_the_signed_checkpoint(
    logged: Plane, tmp_path: Path
) -> None:
    def rewrite(db: sqlite3.Connection) -> None:
        rows = db.execute(
            "SELECT seq, audit, chain FROM events WHERE audit_seq IS NOT NULL ORDER BY seq"
        ).fetchall()
        previous = rows[2][2]
        for seq, audit, _ in rows[3:]:
            forged = audit.replace(b'"principal":"bob"', b'"principal":"eve"')
            previous = chain(previous, forged)
            db.execute(
                "UPDATE events SET audit = ?, chain = ? WHERE seq = ?", (forged, previous, seq)
            )

    out = _tampered(logged, tmp_path, rewrite)
    assert "differs from the signed checkpoint" in out


def test_export_writes_json_lines_with_the_chain(logged: Plane, tmp_path: Path) -> None:
    out = tmp_path / "audit.jsonl"
    exported = logged.ember("audit", "export", "--since", "2000-01-01", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    rows = [
        AuditRow(line["seq"], line["at"], canonical(line["entry"]), bytes.fromhex(line["hash"]))
        for line in lines
    ]
    assert verify_chain(rows) is None  # the export alone is enough to check the chain
    key = logged.ember("audit", "key")
    assert key.stdout.startswith("-----BEGIN PUBLIC KEY-----")


def test_entries_are_canonical_json() -> None:
    """RFC 8785 for strings and integers: keys sorted, no whitespace, UTF-8 as is."""
    entry = {"b": 1, "a": 'é\n"', "c": [True, None], "aa": {"z": 0, "y": -3}}
    expected = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical(entry) == expected.encode()
    from ember.journal.audit import _Call  # a struct entry writes its fields in sorted order

    call = _Call(1, "r-1:1:ab", "call", 3, "bob", "x", "r-1", 1, "record")
    as_dict = msgspec.to_builtins(call)
    assert msgspec.json.encode(call) == canonical(as_dict)
    assert hashlib.sha256(bytes(32) + canonical(as_dict)).digest() == chain(
        None, canonical(as_dict)
    )


def test_two_writers_keep_one_chain_and_a_stale_decision_is_refused(
    location: Path | str,
) -> None:
    """Two journals on one database (two processes' worth) chain their entries one after the
    other; a decision made under a version that moved is not written. On both backends."""
    import asyncio

    from ember.errors import PolicyChangedError
    from ember.journal import StepIntent
    from ember.journal.control import ControlRows, ControlStore

    from .backends import open_at

    first, second = open_at(location), open_at(location)
    store: ControlRows
    if isinstance(location, str):
        from ember.journal.pgcontrol import PostgresControlStore

        store = PostgresControlStore(location)
    else:
        store = ControlStore(location)

    def intent(run: str, step: int, version: int) -> StepIntent:
        return StepIntent(run, 1.0, step, "record", {"n": step}, f"{run}:{step}:k", "bob", version)

    async def write() -> None:
        for step in range(1, 21):
            await first.append(intent("r-a", step, 0))
            await second.append(intent("r-b", step, 0))
        store.set_policy("permit(principal, action, resource);", "test")
        with pytest.raises(PolicyChangedError):
            await first.append(intent("r-a", 21, 0))
        await first.append(intent("r-a", 21, 1))

    asyncio.run(write())
    rows = list(store.audit())
    assert len(rows) == 42  # 40 calls, the policy change, the call decided again
    assert verify_chain(rows) is None
    assert [json.loads(row.body)["kind"] for row in rows[-2:]] == ["policy.set", "call"]
    assert len([e for e in first.read("r-a") if isinstance(e, StepIntent)]) == 21
    for closing in (first, second, store):
        closing.close()
