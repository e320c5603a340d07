"""The PostgreSQL journal through the command line: `--db postgresql://...` / `EMBER_DB` picks
it for every command that opens a journal (run, runs, runs show, tokens, audit)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import ember


def test_every_command_opens_the_postgres_journal_it_is_given(
    postgres_db: str, ember_env: dict[str, str], tmp_path: Path
) -> None:
    env = dict(ember_env, EMBER_DB=postgres_db, EMBER_AUDIT_KEY=str(tmp_path / "audit-key"))
    task = "What's the weather in Tokyo on 2026-03-03?"
    ran = ember(env, "run", "--planner", "scripted", "--json", task)
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout)["run_id"]
    listed = ember(env, "runs")
    assert run_id in listed.stdout
    assert "succeeded" in listed.stdout
    shown = ember(env, "runs", "show", run_id[:6], "--json")
    assert json.loads(shown.stdout)["run"]["status"] == "succeeded"
    created = ember(env, "tokens", "create", "alice", "--role", "admin")
    assert created.returncode == 0, created.stderr
    assert "alice" in ember(env, "tokens", "list").stdout
    verified = ember(env, "audit", "verify")
    assert verified.returncode == 0, verified.stderr
    assert "entries chained" in verified.stdout  # the run's start, its call, the token
    # --db wins over EMBER_DB, and a SQLite file is still a SQLite file
    local = ember(env, "runs", "--db", str(tmp_path / "local.db"))
    assert run_id not in local.stdout + local.stderr


def test_resume_leaves_the_workers_runs_to_the_workers(
    postgres_db: str, ember_env: dict[str, str], tmp_path: Path
) -> None:
    """`ember resume --all` on a cluster's journal resumes only runs started outside the queue:
    a run a worker holds (on another host, whose process it cannot see) is not taken."""
    import asyncio

    from ember.journal.leases import Leases

    env = dict(ember_env, EMBER_DB=postgres_db, EMBER_AUDIT_KEY=str(tmp_path / "audit-key"))
    ember(env, "runs")  # the schema
    leases = Leases(postgres_db, "elsewhere:1", lease_s=60)

    async def held_elsewhere() -> None:
        from .test_journal import events_of

        await leases.enqueue("r-held", "task")
        (claim,) = await leases.claim()
        from ember.journal.postgres import PostgresJournal

        journal = PostgresJournal(postgres_db)
        journal.hold("r-held", claim.epoch)
        for event in events_of("r-held")[:3]:  # started, planned, a call in flight
            await journal.append(event)
        journal.close()
        await leases.close()

    asyncio.run(held_elsewhere())
    resumed = ember(env, "resume", "--all")
    assert resumed.returncode == 0, resumed.stderr
    assert "r-held is in the workers' queue" in resumed.stderr
    assert "no interrupted runs" in resumed.stderr


def test_a_postgres_journal_is_a_data_destination_the_egress_list_must_allow(
    postgres_db: str, tmp_path: Path
) -> None:
    from urllib.parse import urlsplit

    import msgspec
    import pytest

    from ember.app import check_egress, destinations
    from ember.config import Settings
    from ember.errors import EgressError

    parts = urlsplit(postgres_db)
    host = f"{parts.hostname}:{parts.port or 5432}"
    settings = Settings(tmp_path / "x.db", tmp_path / "demo", journal_url=postgres_db)
    assert (host, "journal") in [(d.where, d.what) for d in destinations(settings)]
    with pytest.raises(EgressError, match=f"journal via postgresql -> {host}"):
        check_egress(msgspec.structs.replace(settings, egress=("10.9.9.9",)))
    check_egress(msgspec.structs.replace(settings, egress=(str(parts.hostname),)))


def test_enqueue_then_a_worker_runs_it_once(
    postgres_db: str, ember_env: dict[str, str], tmp_path: Path
) -> None:
    env = dict(ember_env, EMBER_DB=postgres_db, EMBER_AUDIT_KEY=str(tmp_path / "audit-key"))
    queued = ember(env, "enqueue", "What's the weather in Tokyo on 2026-03-03?")
    assert queued.returncode == 0, queued.stderr
    run_id = queued.stdout.strip()
    worked = ember(env, "worker", "--planner", "scripted", "--once", "--poll", "0.1")
    assert worked.returncode == 0, worked.stderr
    assert f"{run_id}: starting (lease epoch 1)" in worked.stderr
    assert f"{run_id}: succeeded" in worked.stderr
    shown = json.loads(ember(env, "runs", "show", run_id, "--json").stdout)
    assert shown["run"]["steps"]["1"]["result"]["city"] == "Tokyo"
    local = dict(env, EMBER_DB=str(tmp_path / "local.db"))
    refused = ember(local, "worker", "--once")
    assert refused.returncode == 2
    assert "needs the shared journal: --db postgresql://" in refused.stderr
