"""The control plane with real processes and a real SQLite file: tokens revoked mid-run, rules
removed while an approval waits, runs resumed after kill -9 under a new policy. The truth of
which calls happened is the tool's own effect log (tests/data/effect_tools.py), never the
journal alone; the order of decisions and revocations is the audit log's."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ember.journal.control import ControlStore

from .conftest import ember

DATA = Path(__file__).parent / "data"
RUNS = (
    '@id("runs") '
    'permit(principal, action in [Action::"start_run", Action::"read_runs"], resource);\n'
)
OPS_RECORD = (
    '@id("ops record")\n'
    'permit(principal in Role::"ops", action == Action::"call", resource == Tool::"record");\n'
)


class Plane:
    """An ember home for one test: journal, config with the effect tool, plans, effect log."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.effect_log = root / "effects.log"
        (root / "ember.toml").write_text(
            f'demo_tools = false\n[[tools]]\nmodule = "{DATA / "effect_tools.py"}"\n'
        )
        plans = {
            name: {
                "steps": [
                    {"id": i, "tool": "record", "args": {"n": i}, "after": [i - 1] if i > 1 else []}
                    for i in range(1, count + 1)
                ]
            }
            for name, count in (("ten", 10), ("one", 1), ("four", 4))
        }
        self.plans = root / "plans.json"
        self.plans.write_text(json.dumps(plans))
        self.env = dict(
            os.environ,
            EMBER_DB=str(root / "ember.db"),
            EMBER_DEMO_DIR=str(root / "demo"),
            EMBER_CONFIG=str(root / "ember.toml"),
            EMBER_EFFECTS=str(self.effect_log),
        )
        self.tokens: dict[str, str] = {}

    def ember(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(self.env, EMBER_TOKEN=self.tokens[token]) if token else self.env
        return ember(env, *args)

    def command(self, *args: str, principal: str | None = None) -> list[str]:
        head = [sys.executable, "-m", "ember.cli"]
        return [*head, *(["--as", principal] if principal else []), *args]

    def token(self, name: str, *roles: str) -> str:
        made = self.ember("tokens", "create", name, *(f"--role={role}" for role in roles))
        assert made.returncode == 0, made.stderr
        self.tokens[name] = made.stdout.strip()
        return self.tokens[name]

    def policy(self, text: str) -> None:
        path = self.root / f"policy-{time.monotonic_ns()}.cedar"
        path.write_text(text)
        put = self.ember("policy", "set", str(path))
        assert put.returncode == 0, put.stderr

    def effects(self) -> list[int]:
        if not self.effect_log.exists():
            return []
        return [int(line.split()[0]) for line in self.effect_log.read_text().splitlines()]

    def audit(self) -> list[dict[str, Any]]:
        store = ControlStore(self.root / "ember.db")
        try:
            return [dict(json.loads(row.body), seq=row.seq) for row in store.audit()]
        finally:
            store.close()

    def run_args(self, plan: str) -> list[str]:
        return ["run", "--planner", "scripted", "--script", str(self.plans), plan]


@pytest.fixture
def plane(tmp_path: Path) -> Plane:
    return Plane(tmp_path)


def _wait(check: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _step_of(entry: dict[str, Any]) -> int:
    return int(entry["step"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _http(url: str, body: dict[str, Any] | None = None, token: str = "") -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@contextlib.contextmanager
def _serving(plane: Plane, *extra: str) -> Iterator[str]:
    port = _free_port()
    command = plane.command(
        "serve", "--planner", "scripted", "--script", str(plane.plans), "--port", str(port), *extra
    )
    with subprocess.Popen(command, env=plane.env, stderr=subprocess.PIPE, text=True) as server:
        try:
            assert server.stderr is not None
            line = server.stderr.readline()
            while "listening on" not in line:
                assert line, "the server stopped before it listened"
                line = server.stderr.readline()
            yield f"http://127.0.0.1:{port}"
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


def test_a_token_revoked_while_a_run_is_in_flight_denies_its_very_next_call(
    plane: Plane,
) -> None:
    """`ember serve` runs bob's 10-step run; `ember tokens revoke bob`, another process,
    revokes his token while a call is in flight: that call finishes, the next is denied, and
    no call happens after the revocation committed (0 stale calls, from the effect log)."""
    bob = plane.token("bob", "ops")
    plane.policy(RUNS + OPS_RECORD)
    # each call takes 0.5 s: the revoking process has seconds to start before the run ends
    plane.env["EMBER_EFFECT_SECONDS"] = "0.5"
    answer: dict[str, Any] = {}
    with _serving(plane) as base:
        post = threading.Thread(
            target=lambda: answer.update(result=_http(f"{base}/runs", {"task": "ten"}, bob))
        )
        post.start()
        _wait(lambda: len(plane.effects()) >= 3)
        revoked = plane.ember("tokens", "revoke", "bob")
        assert revoked.returncode == 0, revoked.stderr
        post.join(timeout=120)
        after = _http(f"{base}/runs", token=bob)
    status, run = answer["result"]
    assert status == 200
    assert run["status"] == "failed"
    assert after[0] == 401  # the revoked token opens nothing any more
    assert "revoked" in after[1]["error"]

    done = [step["id"] for step in run["steps"] if step["status"] == "succeeded"]
    denied = [step for step in run["steps"] if "revoked" in (step["error"] or "")]
    effects = plane.effects()
    assert sorted(effects) == done  # every effect is a call the journal allowed, once
    assert len(denied) == 1
    assert denied[0]["id"] == max(done) + 1  # the very next call
    assert "the token of bob was revoked" in denied[0]["error"]

    entries = plane.audit()
    revocation = next(e["seq"] for e in entries if e["kind"] == "token.revoke")
    calls = [e for e in entries if e["kind"] == "call" and e["run"] == run["run_id"]]
    assert sorted(_step_of(e) for e in calls) == sorted(effects)
    stale = [e for e in calls if e["seq"] > revocation]
    assert stale == []  # no call decided after the revocation committed
    deny = next(e for e in entries if e["kind"] == "deny" and e["run"] == run["run_id"])
    assert deny["seq"] > revocation
    assert deny["principal"] == "bob"


def test_a_rule_removed_while_an_approval_waits_denies_the_approved_call(plane: Plane) -> None:
    plane.token("bob", "ops")
    plane.token("alice", "admin")
    approve = (
        '@id("admins approve")\n'
        'permit(principal in Role::"admin", action == Action::"approve", resource);\n'
    )
    needs_approval = (
        '@id("record after approval")\n@require_approval("an effect needs a second person")\n'
        'permit(principal in Role::"ops", action == Action::"call", resource == Tool::"record");\n'
    )
    plane.policy(RUNS + approve + needs_approval)
    started = plane.ember("--as", "bob", *plane.run_args("one"), token="bob")
    assert started.returncode == 1
    assert "waits for approval (an effect needs a second person)" in started.stderr
    listed = plane.ember("approvals")
    (line,) = listed.stdout.splitlines()
    run_id = line.split()[0]
    assert " 1 " in line
    assert "by bob" in line

    selfish = plane.ember("--as", "bob", "approve", run_id, "1", token="bob")
    assert selfish.returncode == 2  # bob may not approve: no rule lets him
    assert "no rule of policy" in selfish.stderr
    assert "bob (ops) to approve record" in selfish.stderr

    plane.policy(RUNS + approve)  # the rule that allowed the call is gone
    approved = plane.ember("--as", "alice", "approve", run_id, "1", "--json", token="alice")
    assert approved.returncode == 1, approved.stderr
    result = json.loads(approved.stdout)
    assert result["status"] == "failed"
    assert "no rule of policy v" in result["steps"][0]["error"]
    assert "bob (ops) to call record" in result["steps"][0]["error"]
    assert plane.effects() == []  # approving did not skip the policy: the call never happened

    shown = plane.ember("runs", "show", run_id)
    assert "step.denied" in shown.stdout
    assert "approval.approve" in {e["kind"] for e in plane.audit()}


def test_a_run_resumed_after_kill_9_is_decided_by_the_policy_in_force(plane: Plane) -> None:
    plane.token("bob", "ops")
    plane.policy(RUNS + OPS_RECORD)
    env = dict(plane.env, EMBER_TOKEN=plane.tokens["bob"])
    command = plane.command(*plane.run_args("ten"), principal="bob")
    with subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as child:
        _wait(lambda: len(plane.effects()) >= 3)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    killed_at = len(plane.effects())
    plane.policy(
        RUNS
        + OPS_RECORD
        + '@id("nothing from five on")\nforbid(principal, action == Action::"call", '
        'resource == Tool::"record")\n  when { context.args.n >= 5 };\n'
    )
    resumed = plane.ember("resume", "--all", "--json")
    assert resumed.returncode == 1, resumed.stderr
    result = json.loads(resumed.stdout)
    statuses = {step["id"]: step["status"] for step in result["steps"]}
    assert [statuses[i] for i in range(1, 5)] == ["succeeded"] * 4
    assert statuses[5] == "failed"
    assert '"nothing from five on" (line 4)' in result["steps"][4]["error"]
    assert plane.effects() == [1, 2, 3, 4]  # none repeated (same key), none from five on
    assert killed_at <= 4
    calls = [e for e in plane.audit() if e["kind"] == "call"]
    assert all(e["principal"] == "bob" for e in calls)  # the run's principal, after the kill too


def test_revocations_at_random_instants_leave_no_stale_call() -> None:
    """The revocation race of docs/benchmarks.md, small: runs in a child process, revocations
    from this one; every effect is an allowed call, none after a revocation committed."""
    from ember.measure.revocation import run_revocation_race

    report = run_revocation_race(30, seed=3)
    assert report.runs > 0
    assert report.calls_allowed == report.effects > 0
    assert report.calls_denied > 0  # the revocations did bite
    assert report.stale_calls == 0
    assert report.stale_effects == 0


def test_a_role_taken_away_denies_the_next_run_of_its_principal(plane: Plane) -> None:
    plane.env["EMBER_EFFECT_SECONDS"] = "0"
    plane.token("bob", "ops", "staff")
    plane.policy(RUNS + OPS_RECORD)
    assert plane.ember("--as", "bob", *plane.run_args("one"), token="bob").returncode == 0
    taken = plane.ember("tokens", "revoke", "bob", "--role", "ops")
    assert taken.returncode == 0, taken.stderr
    assert "roles: staff" in plane.ember("tokens", "list").stdout
    denied = plane.ember("--as", "bob", *plane.run_args("one"), token="bob")
    assert denied.returncode == 1
    assert "no rule of policy v3 permits bob (staff) to call record" in denied.stderr
    assert plane.effects() == [1]
    assert [e["kind"] for e in plane.audit()].count("role.remove") == 1
