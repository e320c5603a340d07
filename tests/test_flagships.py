"""The four flagship workflows of examples/, each run for real as a user runs it: one command,
in a child process. The invoice batch and the PLC watch are killed with SIGKILL mid-way and
resumed; what happened is counted from the ledger and at the SMTP server."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from examples.fixtures import SimulatedLine

from .packs_support import SmtpSink, wait_for
from .test_pack_sql import POSTGRES

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))


def command(name: str, work: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", f"examples.{name}.run", "--work", str(work), "--json", *options]


def run(name: str, work: Path, *options: str, timeout: float = 180) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(command(name, work, *options), cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def start(name: str, work: Path, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(command(name, work, *options), cwd=ROOT, env=ENV, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def test_competitor_analysis(tmp_path: Path) -> None:
    result = run("competitors", tmp_path)
    assert result["status"] == "succeeded"
    # the statements listed, then read one by one (a step over the list), then outlined
    assert [s["tool"] for s in result["steps"]] == [
        "files_list",
        "docs_financials",
        "docs_slide_outline",
    ]
    assert [Path(s["source"]).name for s in result["steps"][1]["result"]] == [
        "acme.csv",
        "borealis.xlsx",
        "cobalt.pdf",
    ]
    outline = json.loads(Path(result["json"]).read_text())
    assert [r["company"] for r in outline["ratios"]] == [
        "Acme Robotics",
        "Borealis Motion",
        "Cobalt Automation",
    ]
    assert len(outline["chart_suggestions"]) == 3
    assert Path(result["outline"]).read_text().startswith("# Competitor analysis FY2025")
    assert all(Path(chart).stat().st_size > 1000 for chart in result["charts"])
    layers = set(result["latency_ms"])  # which layers are reported, not how fast
    assert {"l1_ttft", "l2_overhead", "l3_persist", "l4_e2e"} <= layers


@pytest.mark.model
def test_competitor_analysis_planned_by_the_embedded_model(tmp_path: Path) -> None:
    """The same request planned by the default model instead of the flagship's plan.json: each
    statement named inside the folder the request names, then the outline of all three."""
    result = run("competitors", tmp_path, "--planner", "llama", timeout=600)
    assert result["status"] == "succeeded"
    steps = [(s["tool"], s["args"]) for s in result["steps"]]
    assert steps[:3] == [
        ("docs_financials", {"path": "statements/acme.csv"}),
        ("docs_financials", {"path": "statements/borealis.xlsx"}),
        ("docs_financials", {"path": "statements/cobalt.pdf"}),
    ]
    assert steps[3][0] == "docs_slide_outline"
    outline = json.loads(Path(result["json"]).read_text())
    assert [r["company"] for r in outline["ratios"]] == [
        "Acme Robotics",
        "Borealis Motion",
        "Cobalt Automation",
    ]
    assert all(Path(chart).stat().st_size > 1000 for chart in result["charts"])


def ledger(work: Path) -> list[dict[str, str]]:
    path = work / "out" / "ledger.csv"
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_invoice_batch_killed_mid_way_books_every_invoice_exactly_once(tmp_path: Path) -> None:
    for attempt in range(3):  # a kill that lands after the batch finished proves nothing
        work = tmp_path / f"attempt-{attempt}"
        child = start("invoices", work)
        wait_for(lambda: len(ledger(work)) >= 10 or child.poll() is not None, timeout=120)  # noqa: B023
        child.send_signal(signal.SIGKILL)
        child.wait()
        if 0 < len(ledger(work)) < 100:
            break
    else:
        pytest.fail("three kills all landed after the batch finished")
    booked_before = len(ledger(work))
    result = run("invoices", work, "--resume")
    assert result["status"] == "succeeded"
    rows = ledger(work)
    assert len(rows) == 100
    assert sorted(row["file"] for row in rows) == [f"invoice-{i:03d}.pdf" for i in range(1, 101)]
    assert len({row["sha256"] for row in rows}) == 100
    batch = result["steps"][0]["result"]
    assert batch["booked"] == 100 - booked_before  # the resumed step booked only the rest
    assert batch["already_booked"] == booked_before
    assert (batch["valid"], batch["invalid"]) == (96, 4)
    assert batch["summary"] == str((work / "out" / "summary.md").resolve())
    summary = (work / "out" / "summary.md").read_text()
    assert "- invoices: 100\n" in summary
    assert "- valid: 96; totals do not add up: 4\n" in summary  # the whole folder, resumed


@pytest.mark.model
def test_invoice_batch_planned_by_the_embedded_model(tmp_path: Path) -> None:
    """The request planned by the default model instead of plan.json: one batch step that
    books the folder into the ledger and writes the summary where the request says."""
    result = run("invoices", tmp_path, "--planner", "llama", "--count", "12", timeout=600)
    assert result["status"] == "succeeded", result["error"]
    [batch] = result["steps"]
    assert batch["tool"] == "docs_invoice_batch"
    assert batch["args"]["folder"].rstrip("/") == "invoices"
    assert batch["args"]["ledger"] == "out/ledger.csv"
    assert batch["args"]["summary"] == "out/summary.md"
    assert len(ledger(tmp_path)) == 12
    assert "- invoices: 12\n" in (tmp_path / "out" / "summary.md").read_text()


@pytest.fixture
def line() -> Iterator[SimulatedLine]:
    with SimulatedLine(step=10) as simulated:  # 70, 80, 90, ...: above 80 at the third read
        yield simulated


def test_plc_watch_restarted_mid_loop_sends_one_alert_and_repeats_no_reading(
    tmp_path: Path, line: SimulatedLine
) -> None:
    with SmtpSink() as sink:
        options = ("--plc", f"127.0.0.1:{line.port}", "--smtp", f"127.0.0.1:{sink.port}")
        child = start("plc_watch", tmp_path, *options)
        # killed mid-loop, after two readings a second apart (70 and 80: no alert yet)
        wait_for(lambda: line.reads >= 2 or child.poll() is not None, timeout=120)
        assert child.poll() is None, "the watch finished before it could be killed"
        child.send_signal(signal.SIGKILL)
        child.wait()
        reads_before = line.reads
        assert sink.messages == []
        result = run("plc_watch", tmp_path, *options, "--resume")
        assert result["status"] == "succeeded"
        assert len(sink.messages) == 1
    alert = sink.messages[0]
    assert alert["Subject"] == "Oven 1 above 80 °C"
    watch, mailed = [s["result"] for s in result["steps"]]
    assert (watch["went_above"], watch["value"]) == (True, 90)
    assert watch["count"] <= 8  # the schedule kept: readings due while it was down not made
    assert line.reads == reads_before + 1  # readings made before the kill were not made again
    assert (mailed["sent"], mailed["message_id"]) == (True, alert["Message-ID"])
    assert f"read 90 °C at reading {watch['count']}" in alert.get_content()


@pytest.fixture
def crm_database() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    try:
        psycopg.connect(POSTGRES, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL answers at {POSTGRES} (set EMBER_TEST_POSTGRES_URL): {exc}")
    name = f"ember_test_crm_{uuid.uuid4().hex[:8]}"
    yield name
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_mail_merge_waits_for_approval_over_the_configured_size(
    tmp_path: Path, crm_database: str
) -> None:
    with SmtpSink() as sink:
        options = ("--postgres", POSTGRES, "--crm-database", crm_database,
                   "--smtp", f"127.0.0.1:{sink.port}", "--customers", "8")  # fmt: skip
        waiting = run("mail_merge", tmp_path / "long", *options, "--approval-over", "5")
        assert waiting["status"] == "waiting"
        assert "waits for approval" in waiting["error"]
        assert sink.messages == []  # nothing is sent before the approval
        approved = run("mail_merge", tmp_path / "long", *options, "--approval-over", "5",
                       "--resume", "--approve")  # fmt: skip
        assert approved["status"] == "succeeded"
        assert approved["sent"] == 8
        assert len(set(sink.message_ids())) == len(sink.messages) == 8
        first = min(sink.messages, key=lambda m: str(m["To"]))
        assert first["To"] == "customer01@example.com"
        assert first["Subject"] == "Your Starter plan renews on 2026-03-01"
        assert "Dear Customer 01," in first.get_payload(decode=True).decode()
        short = run("mail_merge", tmp_path / "short", *options, "--approval-over", "20")
        assert short["status"] == "succeeded"
        assert len(sink.messages) == 16


@pytest.mark.model
def test_mail_merge_planned_by_the_embedded_model(tmp_path: Path, crm_database: str) -> None:
    """The request planned by the default model instead of plan.json: the query names the
    columns sql_query's description lists, and mail_merge takes the query's columns and rows
    as they are (written out again, they once shifted every address to a name)."""
    with SmtpSink() as sink:
        options = ("--postgres", POSTGRES, "--crm-database", crm_database,
                   "--smtp", f"127.0.0.1:{sink.port}", "--customers", "8",
                   "--approval-over", "20", "--planner", "llama")  # fmt: skip
        result = run("mail_merge", tmp_path, *options, timeout=600)
    assert result["status"] == "succeeded", result["error"]
    tools = [s["tool"] for s in result["steps"]]
    assert tools[:2] == ["sql_query", "mail_merge"]
    assert "renewal_date" in result["steps"][0]["args"]["sql"]
    merge = next(s for s in result["steps"] if s["tool"] == "mail_merge")
    assert merge["args"]["columns"] == result["steps"][0]["result"]["columns"]
    recipients = sorted(str(m["To"]) for m in sink.messages)
    assert recipients == [f"customer{i:02d}@example.com" for i in range(1, 9)]
    first = min(sink.messages, key=lambda m: str(m["To"]))
    assert "Customer 01" in first.get_payload(decode=True).decode()


@pytest.mark.model
def test_plc_watch_planned_by_the_embedded_model(tmp_path: Path, line: SimulatedLine) -> None:
    """The request planned by the default model instead of plan.json: one watch of the
    register (every second, 8 readings at most, until above 80), then one alert of its value."""
    with SmtpSink() as sink:
        options = ("--plc", f"127.0.0.1:{line.port}", "--smtp", f"127.0.0.1:{sink.port}",
                   "--planner", "llama")  # fmt: skip
        result = run("plc_watch", tmp_path, *options, timeout=600)
    assert result["status"] == "succeeded", result["error"]
    watch, alert = result["steps"]
    assert (watch["tool"], alert["tool"]) == ("plc_watch", "mail_alert")
    assert {k: watch["args"][k] for k in ("kind", "address", "above", "readings")} == {
        "kind": "holding_registers", "address": 0, "above": 80, "readings": 8}  # fmt: skip
    assert watch["result"] == {"went_above": True, "value": 90, "count": 3}
    assert (alert["args"]["value"], alert["result"]["sent"]) == (90, True)  # the watch's value
    assert [str(m["To"]) for m in sink.messages] == ["ops@example.com"]
