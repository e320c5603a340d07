"""Policies: what they may test about a call, how they decide (the pure parts), how bad ones are
refused with the line and the reason (through the command line), who may reach the server
(401/403), and where data may go (egress, `ember doctor`)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from ember import Step, tool
from ember.errors import PolicyError
from ember.journal import Decision
from ember.policy import CallContext, Principal, Ruling, Verdict, compile_policy, decide
from ember.policy.cedar import DEFAULT_POLICY, Policy
from ember.policy.facts import call_context, sql_read_only
from ember.tools.registry import ToolRegistry

from .test_control_plane import OPS_RECORD, RUNS, Plane, _free_port, _http, _serving


@tool
def pay(amount: float, to: str, path: str = "/srv/out/x") -> dict[str, str]:
    """Pay an amount."""
    return {}


@tool
def launch(n: int) -> dict[str, int]:
    """Launch."""
    return {}


_REGISTRY = ToolRegistry()
PAY = _REGISTRY.register(pay)
LAUNCH = _REGISTRY.register(launch)
TOOLS = {"pay": PAY, "launch": LAUNCH}
BOB = Principal("bob", ("finance",))
POLICY = """
@id("finance pays small amounts to example.com")
permit(principal in Role::"finance", action == Action::"call", resource == Tool::"pay")
when { context.args.amount.lessThan(decimal("1000.0")) && context.args.to like "*@example.com"
       && context.paths.path like "/srv/out/*" };
@id("launch after approval")
@require_approval("launches are checked by a second person")
permit(principal, action == Action::"call", resource == Tool::"launch");
@id("not at night")
forbid(principal, action, resource) when { context.hour < 6 };
"""


def _ruling(args: dict[str, object], *, decision: Decision | None = None, hour: int = 12) -> Ruling:
    policy = compile_policy(POLICY, 7, tools=TOOLS, principals={"bob"})
    at = time.mktime((2026, 12, 2, hour, 0, 0, 0, 0, -1))
    descriptor = LAUNCH if "n" in args else PAY
    step = Step(1, descriptor.tool_name, args)
    context = CallContext("r-1", decision=decision, policy=policy, principal=BOB, at=at)
    return decide(step, descriptor, dict(args), context)


def test_argument_conditions_allow_and_deny_with_the_rule() -> None:
    good = {"amount": 99.5, "to": "a@example.com", "path": "/srv/out/r.csv"}
    allowed = _ruling(good)
    assert allowed.verdict is Verdict.RUN
    assert allowed.rule == '"finance pays small amounts to example.com" (line 2)'
    for bad in (
        {"amount": 1000.0, "to": "a@example.com", "path": "/srv/out/r.csv"},
        {"amount": 5, "to": "a@evil.com", "path": "/srv/out/r.csv"},
        {"amount": 5, "to": "a@example.com", "path": "/srv/out/../etc/passwd"},
    ):
        denied = _ruling(bad)
        assert denied.verdict is Verdict.DENY, bad
        assert "no rule of policy v7 permits bob (finance) to call pay" in denied.reason
    night = _ruling(good, hour=3)
    assert night.verdict is Verdict.DENY
    assert 'forbidden to bob (finance) to call pay by "not at night" (line 9)' in night.reason


def test_a_rule_can_require_an_approval_and_approving_never_skips_policy() -> None:
    waits = _ruling({"n": 1})
    assert waits.verdict is Verdict.AWAIT_APPROVAL
    assert "launches are checked by a second person" in waits.reason
    assert _ruling({"n": 1}, decision=Decision.APPROVE).verdict is Verdict.RUN
    at_night = _ruling({"n": 1}, decision=Decision.APPROVE, hour=2)
    assert at_night.verdict is Verdict.DENY


def test_a_rule_that_fails_to_evaluate_denies() -> None:
    """Cedar skips a rule whose condition errors; ember denies instead (fail closed)."""
    policy = compile_policy(
        'permit(principal, action, resource);\nforbid(principal, action == Action::"call", '
        "resource) when { context.args.nope == 1 };",
        1,
    )
    judged = policy.judge(BOB, "call", "pay", lambda: {"args": {}})
    assert not judged.allowed
    assert "could not be evaluated" in judged.reason
    assert "the rule at line 2" in judged.reason


def test_the_decision_known_without_the_context_equals_the_full_evaluation() -> None:
    """The per-version cache of context-free decisions never answers otherwise than Cedar."""
    policy = compile_policy(POLICY, 1, tools=TOOLS, principals={"bob", "carol"})
    principals = [BOB, Principal("carol"), Principal("bob", ("finance",), revoked="gone")]
    contexts = [
        call_context(PAY, {"amount": 5, "to": "a@example.com"}, time.time()),
        {"args": {"n": 1}, "hour": 12, "minute": 0, "weekday": "mon", "risk": "low"},
    ]
    for principal in principals:
        for tool_name in ("pay", "launch"):
            for context in contexts:
                fresh = Policy(1, POLICY)
                cached = policy.judge(principal, "call", tool_name, lambda c=context: c)
                full = fresh._full(principal, "call", tool_name, context)
                if not principal.revoked:
                    assert cached.allowed == full.allowed, (principal, tool_name)


def test_facts_a_rule_may_test() -> None:
    context = call_context(PAY, {"amount": 12, "to": "x", "path": "/a/b/../c"}, 0.0)
    assert context["args"]["amount"] == {"__extn": {"fn": "decimal", "arg": "12.0000"}}
    assert context["paths"] == {"path": "/a/c"}
    assert context["risk"] == "low"
    assert sql_read_only("SELECT * FROM t WHERE a = 'drop table x'; ")
    assert sql_read_only("with x as (select 1) select * from x")
    for writing in (
        "DELETE FROM t",
        "SELECT 1; DROP TABLE t",
        "select * from t; ",
        "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
        "PRAGMA writable_schema=1",
        "",
    ):
        if writing == "select * from t; ":
            assert sql_read_only(writing)
            continue
        assert not sql_read_only(writing), writing


def test_the_default_policy_allows_everything() -> None:
    judged = Policy(0, DEFAULT_POLICY).judge(BOB, "call", "pay", dict)
    assert judged.allowed
    assert "no policy set" in judged.rule


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (
            "permit(principal, action, resource)\npermit(principal, action, resource);\n",
            2,
            "unexpected token",
        ),
        (
            '// mail\npermit(principal, action == Action::"call",\n'
            '  resource == Tool::"recrod");\n',
            3,
            "unknown tool 'recrod'",
        ),
        (
            'permit(principal == User::"mallory", action, resource);\n',
            1,
            "unknown principal 'mallory'",
        ),
        (
            'permit(principal, action == Action::"delete", resource);\n',
            1,
            "unknown action 'delete'",
        ),
        ("// nothing here\n", 0, "it has no rules"),
        (
            "permit(principal, action, resource) when { context.x like 3 };\n",
            1,
            "must be a pattern literal",
        ),
    ],
)
def test_a_bad_policy_is_refused_with_the_line_and_never_replaces_the_working_one(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    plane = Plane(tmp_path)
    plane.token("bob", "ops")
    plane.policy(RUNS + OPS_RECORD)
    before = plane.ember("policy", "show")
    bad = tmp_path / "bad.cedar"
    bad.write_text(text)
    refused = plane.ember("policy", "set", str(bad))
    assert refused.returncode == 2
    where = f"{bad}, line {line}: " if line else f"{bad}: "
    assert refused.stderr.startswith(f"ember: {where}"), refused.stderr
    assert reason in refused.stderr
    assert plane.ember("policy", "show").stdout == before.stdout  # still in force
    with pytest.raises(PolicyError):
        compile_policy(text, 0, tools={"record": None}, principals={"bob"})


def test_policy_test_says_allow_or_deny_and_why(tmp_path: Path) -> None:
    plane = Plane(tmp_path)
    plane.token("bob", "ops")
    plane.policy(RUNS + OPS_RECORD)
    allowed = plane.ember("policy", "test", "bob", "record", '{"n": 1}')
    assert (allowed.returncode, allowed.stdout.strip()) == (0, 'allow: "ops record" (line 2)')
    denied = plane.ember("policy", "test", "carol", "record", '{"n": 1}')
    assert denied.returncode == 1
    assert "carol has no token" in denied.stdout


def test_the_server_needs_a_token_and_the_policy_decides_what_it_may_do(tmp_path: Path) -> None:
    plane = Plane(tmp_path)
    bob = plane.token("bob", "ops")
    eve = plane.token("eve")
    plane.policy(RUNS.replace("principal,", 'principal in Role::"ops",', 1) + OPS_RECORD)
    with _serving(plane) as base:
        health = _http(f"{base}/health")
        missing = _http(f"{base}/runs")
        wrong = _http(f"{base}/runs", token="ember_not-a-token")
        forbidden = _http(f"{base}/runs", {"task": "one"}, eve)
        allowed = _http(f"{base}/runs", {"task": "one"}, bob)
    assert health == (200, {"status": "ok"})
    for status, body in (missing, wrong):
        assert status == 401
        assert "ember tokens create" in body["what_to_do"]
    assert "no bearer token" in missing[1]["error"]
    assert "not valid" in wrong[1]["error"]
    assert forbidden[0] == 403
    assert "eve (no roles) to start_run runs" in forbidden[1]["error"]
    assert "policy" in forbidden[1]["what_to_do"]
    assert allowed[0] == 200
    assert allowed[1]["status"] == "succeeded"


def test_no_auth_is_for_loopback_only_and_says_so(tmp_path: Path) -> None:
    plane = Plane(tmp_path)
    exposed = plane.ember("serve", "--no-auth", "--host", "0.0.0.0", "--port", str(_free_port()))
    assert exposed.returncode == 2
    assert "--no-auth is for loopback development only" in exposed.stderr
    port = _free_port()
    command = plane.command("serve", "--no-auth", "--planner", "scripted", "--port", str(port))
    with subprocess.Popen(command, env=plane.env, stderr=subprocess.PIPE, text=True) as server:
        try:
            assert server.stderr is not None
            assert "WARNING: --no-auth" in server.stderr.readline()
            assert "listening on" in server.stderr.readline()
            status, _ = _http(f"http://127.0.0.1:{port}/runs")
        finally:
            server.terminate()
            server.wait(timeout=30)
    assert status == 200


def test_doctor_lists_destinations_and_egress_refuses_unlisted_ones(tmp_path: Path) -> None:
    plane = Plane(tmp_path)
    default = plane.ember("doctor")
    assert "none: tools, model and journal all stay in this process" in default.stdout
    socket_path = tmp_path / "tools.sock"
    (tmp_path / "ember.toml").write_text(
        f'egress = ["127.0.0.1"]\n[[tools]]\nuds = "{socket_path}"\n'
    )
    doctor = plane.ember("doctor", "--db", str(tmp_path / "ember.db"))
    assert f"unix:{socket_path}" in doctor.stdout
    assert "REFUSED" in doctor.stdout
    refused = plane.ember(*plane.run_args("one"))
    assert refused.returncode == 2
    assert "destinations its egress list lacks" in refused.stderr
    assert f"tools via uds:{socket_path} -> unix:{socket_path}" in refused.stderr
    model = plane.ember(
        "run", "--planner", "openai", "--base-url", "http://127.0.0.2:9/v1", "--model", "m", "hi"
    )
    assert model.returncode == 2
    assert "127.0.0.2:9" in model.stderr
    allowed = json.dumps(["127.0.0.1", f"unix:{socket_path}"])
    (tmp_path / "ember.toml").write_text(f"egress = {allowed}\n")
    assert plane.ember("doctor").returncode == 0


def test_the_example_policy_compiles_against_the_demo_tools(registry: ToolRegistry) -> None:
    text = (Path(__file__).parents[1] / "examples" / "policy.cedar").read_text()
    tools = {t.descriptor.tool_name: t for t in registry}
    policy = compile_policy(text, 1, tools=tools, principals=set())
    ann = Principal("ann", ("staff", "analyst"))
    context = call_context(registry.get("query_sql").descriptor, {"sql": "SELECT 1"}, 0.0)
    context["hour"] = 12
    assert policy.judge(ann, "call", "query_sql", lambda: context).allowed
    context = call_context(registry.get("query_sql").descriptor, {"sql": "DELETE FROM t"}, 0.0)
    context["hour"] = 12
    assert not policy.judge(ann, "call", "query_sql", lambda: context).allowed


def test_a_denial_names_the_forbid_that_decided_at_its_line_among_many_rules() -> None:
    text = "".join(
        f'@id("r{i}")\nforbid(principal, action, resource == Tool::"t{i}");\n' for i in range(12)
    )
    policy = compile_policy(text + "permit(principal, action, resource);\n", 4)
    judged = policy.judge(BOB, "call", "t11", dict)  # known without the context (cached)
    assert not judged.allowed
    assert judged.reason == 'forbidden to bob (finance) to call t11 by "r11" (line 23) (policy v4)'
    allowed = policy.judge(BOB, "call", "other", dict)
    assert (allowed.allowed, allowed.rule) == (True, "the rule at line 25")
