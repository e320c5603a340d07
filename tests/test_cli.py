"""`ember` as a user runs it: real subprocesses, a real journal file, the demo tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import ember

TRAVEL = (
    "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and "
    "email the booking to alice@example.com"
)


def test_run_scripted_json_has_every_field(ember_env: dict[str, str]) -> None:
    done = ember(
        ember_env, "run", "--planner", "scripted", "--json", "--today", "2026-03-02", TRAVEL
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)  # exactly one JSON object on stdout
    assert set(out) >= {"run_id", "status", "answer", "steps", "latency_ms"}
    assert out["status"] == "succeeded"
    assert [s["tool"] for s in out["steps"]] == [
        "get_weather",
        "search_hotels",
        "book_hotel",
        "send_email",
    ]
    for step in out["steps"]:
        assert set(step) >= {"id", "tool", "args", "result", "status", "ms"}
        assert step["status"] == "succeeded"
        assert step["ms"] > 0
    assert out["steps"][2]["args"]["hotel_id"] == "H-PAR-01"
    assert set(out["latency_ms"]) == {"l1_ttft", "l1_plan", "l2_overhead", "l3_persist", "l4_e2e"}
    assert "plan  3. book_hotel" in done.stderr
    assert "done  4. send_email" in done.stderr

    listed = ember(ember_env, "runs")
    assert listed.returncode == 0
    assert out["run_id"] in listed.stdout
    assert "succeeded" in listed.stdout
    shown = ember(ember_env, "runs", "show", out["run_id"][:6], "--json")
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert detail["run"]["status"] == "succeeded"
    kinds = [e["kind"] for e in detail["events"]]
    assert kinds[0] == "run.started"
    assert kinds[-1] == "run.done"
    assert kinds.count("step.done") == 4
    text = ember(ember_env, "runs", "show", out["run_id"])
    assert "book_hotel" in text.stdout
    assert "step.intent" in text.stdout


def test_run_prints_answer_and_latency_table(ember_env: dict[str, str]) -> None:
    done = ember(
        ember_env, "run", "--planner", "scripted", "What's the weather in Tokyo on 2026-03-03?"
    )
    assert done.returncode == 0, done.stderr
    assert "`get_weather`: city: Tokyo, date: 2026-03-03" in done.stdout
    for label in (
        "L1 planning, first token",
        "L2 orchestration overhead",
        "L3 journal persistence",
        "L4 end to end",
    ):
        assert label in done.stdout


def test_run_names_runs_that_a_dead_process_left_interrupted(
    ember_env: dict[str, str], tmp_path: Path
) -> None:
    """`ember run` does not take over other processes' runs (`ember resume --all` does); it
    says they are there."""
    from ember.plan import Step

    from .test_recovery import crashed_journal

    weather = Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-03"})
    crashed_journal(Path(ember_env["EMBER_DB"]), [weather], {}, [1]).close()
    task = "What's the weather in Tokyo on 2026-03-03?"
    done = ember(ember_env, "run", "--planner", "scripted", task)
    assert done.returncode == 0, done.stderr
    assert "1 earlier run(s) in this journal were interrupted" in done.stderr
    assert "e.g. r-1: `ember resume --all` continues them" in done.stderr
    assert ember(ember_env, "resume", "--all").returncode == 0
    again = ember(ember_env, "run", "--planner", "scripted", task)
    assert "interrupted" not in again.stderr


def test_tools_listing(ember_env: dict[str, str]) -> None:
    done = ember(ember_env, "tools")
    rows = [line.split()[:3] for line in done.stdout.splitlines()]
    assert len(rows) == 16
    assert ["generate_report", "async", "demo"] in rows
    assert rows[-2:] == [["sleep", "sync", "builtin"], ["wait_until", "sync", "builtin"]]
    full = json.loads(ember(ember_env, "tools", "--json").stdout)
    assert {"tool_name", "parameters", "execution_mode"} <= set(full[0])


def test_bad_input_exits_2_with_a_clear_message(ember_env: dict[str, str]) -> None:
    unknown = ember(ember_env, "run", "--planner", "scripted", "Fly me to the moon")
    assert unknown.returncode == 1  # the run is journaled, as failed, with the reason
    assert "the scripted planner has no plan for 'Fly me to the moon'" in unknown.stderr
    missing = ember(ember_env, "runs", "show", "r-nope")
    assert missing.returncode == 2
    assert "no run 'r-nope'" in missing.stderr
    model = ember(ember_env, "run", "--model", "/no/such.gguf", "hi")
    assert model.returncode == 2
    assert "neither a shipped model" in model.stderr
    date = ember(ember_env, "run", "--today", "tomorrow", "hi")
    assert date.returncode == 2
    assert "--today" in date.stderr
    tasks = str(Path(__file__).parents[1] / "evals" / "planner" / "fresh.jsonl")
    rule = ember(ember_env, "eval", "planner", "--tasks", tasks, "--rules-off", "numbers,nope")
    assert rule.returncode == 2
    assert "no decoding rule named nope: the rules are push-bound" in rule.stderr
    assert "loading the model" not in rule.stderr  # refused before the model loads


def test_failed_run_exits_1(ember_env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "plans.json"
    script.write_text(
        json.dumps(
            {
                "book it": {
                    "steps": [
                        {
                            "id": 1,
                            "tool": "search_hotels",
                            "args": {"city": "Atlantis", "check_in": "2026-03-03", "nights": 1},
                        },
                        {
                            "id": 2,
                            "tool": "book_hotel",
                            "args": {
                                "hotel_id": "$1.hotels.0.hotel_id",
                                "check_in": "2026-03-03",
                                "nights": 1,
                            },
                        },
                        {
                            "id": 3,
                            "tool": "get_weather",
                            "args": {"city": "Oslo", "date": "2026-03-03"},
                        },
                    ]
                }
            }
        )
    )
    done = ember(
        ember_env, "run", "--planner", "scripted", "--script", str(script), "--json", "Book it."
    )
    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["status"] == "failed"
    assert [s["status"] for s in out["steps"]] == ["failed", "skipped", "succeeded"]
    assert "no hotel data for 'Atlantis'" in out["steps"][0]["error"]
    assert "failed: step 1 (search_hotels) failed" in done.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"x": {"steps": [{"id": 1}]}}')
    bad = ember(ember_env, "run", "--planner", "scripted", "--script", str(broken), "x")
    assert bad.returncode == 2
    assert "plan for 'x'" in bad.stderr
    assert "tool" in bad.stderr


def test_help_and_version(ember_env: dict[str, str]) -> None:
    assert "run" in ember(ember_env, "--help").stdout
    assert ember(ember_env, "--version").stdout.startswith("ember 0.")


def test_ctrl_c_cancels_the_run_and_records_every_step(
    ember_env: dict[str, str], tmp_path: Path
) -> None:
    import signal
    import time

    script = tmp_path / "plans.json"
    script.write_text(
        json.dumps(
            {
                "wait": {
                    "steps": [
                        {"id": 1, "tool": "sleep", "args": {"seconds": 60}},
                        {
                            "id": 2,
                            "tool": "get_weather",
                            "args": {"city": "Oslo", "date": "2026-03-03"},
                            "after": [1],
                        },
                    ]
                }
            }
        )
    )
    # Ctrl-C as a terminal sends it, also when these tests run in a background job, whose
    # children inherit SIGINT ignored (POSIX shells do that for `&` without job control).
    restore_sigint = (
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv[0] = 'ember'; runpy.run_module('ember.cli', run_name='__main__')"
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            restore_sigint,
            "run",
            "--planner",
            "scripted",
            "--script",
            str(script),
            "wait",
        ],
        env=ember_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while "start 1. sleep" not in (line := child.stderr.readline() if child.stderr else ""):
        assert time.monotonic() < deadline, "the run did not start"
        assert line or child.poll() is None
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 130
    assert "interrupted" in err
    run_id = ember(ember_env, "runs").stdout.split()[0]
    shown = json.loads(ember(ember_env, "runs", "show", run_id, "--json").stdout)
    assert shown["run"]["status"] == "cancelled"
    steps = shown["run"]["steps"]
    assert steps["1"]["status"] == "failed"
    assert "cancelled while running" in steps["1"]["error"]
    assert steps["2"]["status"] == "skipped"
