"""The control plane's commands: tokens, policy, approvals (approve, deny), audit."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ember.app import open_control, open_runtime, open_tools
from ember.cli.commands import acting, report, say, settings
from ember.config import PlannerSettings, Settings
from ember.errors import UserError

if TYPE_CHECKING:
    from ember.tools.registry import RegisteredTool

__all__ = [
    "approvals",
    "approve",
    "audit_export",
    "audit_key",
    "audit_verify",
    "deny",
    "policy_set",
    "policy_show",
    "policy_test",
    "tokens_create",
    "tokens_list",
    "tokens_revoke",
]


def tokens_create(args: argparse.Namespace) -> int:
    from ember.policy.tokens import check_name, new_token, token_digest

    name = check_name(args.name)
    roles = tuple(dict.fromkeys(check_name(role, "role") for role in args.role or []))
    token = new_token()
    with open_control(settings(args)) as control:
        version = control.store.add_token(name, roles, token_digest(token), acting(args, control))
    say(f"token for {name} (roles: {', '.join(roles) or 'none'}), control version {version}.")
    say("It is shown once and only its hash is kept: store it now.")
    print(token)
    return 0


def tokens_list(args: argparse.Namespace) -> int:
    with open_control(settings(args)) as control:
        records = control.store.tokens()
    if not records:
        say("no tokens: `ember tokens create NAME --role ROLE`")
    for record in records:
        state = "live" if record.revoked_at is None else f"revoked {_when(record.revoked_at)}"
        print(f"{record.name:<20} {state:<28} roles: {', '.join(record.roles) or '-'}")
    return 0


def tokens_revoke(args: argparse.Namespace) -> int:
    with open_control(settings(args)) as control:
        by = acting(args, control)
        version = control.store.revoke(args.name, by, args.role)
    what = f"role {args.role} of {args.name}" if args.role else f"the token of {args.name}"
    say(f"revoked {what} (control version {version}): it bites at the next call of every run")
    return 0


def policy_show(args: argparse.Namespace) -> int:
    with open_control(settings(args)) as control:
        stored = control.store.policy()
    if stored is None:
        say("no policy set: every principal may do everything (`ember policy set FILE`)")
        return 0
    say(f"policy v{stored.version}, set {_when(stored.at)} by {stored.by}")
    print(stored.text, end="" if stored.text.endswith("\n") else "\n")
    return 0


def policy_set(args: argparse.Namespace) -> int:
    """Check the file against the tools and principals, then store it (never a bad one)."""
    from ember.policy.cedar import compile_policy

    path = Path(args.file)
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    config = settings(args)
    with open_control(config) as control:
        catalogue = asyncio.run(_tool_names(config))
        principals = {record.name for record in control.store.tokens()} | {control.local}
        compile_policy(text, 0, tools=catalogue, principals=principals, source=str(path))
        version = control.store.set_policy(text, acting(args, control))
    say(f"policy v{version} is in force: it decides the next call of every run")
    return 0


async def _tool_names(config: Settings) -> dict[str, RegisteredTool]:
    async with open_tools(config) as registry:
        return {tool.descriptor.tool_name: tool for tool in registry}


def policy_test(args: argparse.Namespace) -> int:
    """What the policy in force says about PRINCIPAL calling TOOL with ARGS, now."""
    from ember.policy.facts import call_context

    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise UserError(f'ARGS must be a JSON object, e.g. \'{{"to": "a@b.c"}}\': {exc}') from None
    config = settings(args)
    tools = asyncio.run(_tool_names(config))
    if args.tool not in tools:
        raise UserError(f"unknown tool {args.tool!r}: `ember tools` lists them")
    descriptor = tools[args.tool].descriptor
    with open_control(config) as control:
        snapshot = control.refresh()
        judged = snapshot.policy.judge(
            snapshot.principal(args.principal),
            "call",
            args.tool,
            lambda: call_context(descriptor, call_args, time.time()),
        )
    verdict = "allow" if judged.allowed else "deny"
    if judged.allowed and judged.require_approval:
        verdict = f"allow after approval ({judged.require_approval})"
    print(f"{verdict}: {judged.rule if judged.allowed else judged.reason}")
    return 0 if judged.allowed else 1


def approvals(args: argparse.Namespace) -> int:
    from ember.app import open_journal
    from ember.journal import RunStatus, StepStatus, fold

    found = 0
    with open_journal(settings(args)) as journal:
        for summary in journal.runs(args.limit):
            if summary.status is not RunStatus.WAITING:
                continue
            state = fold(summary.run_id, journal.read(summary.run_id))
            for step_id, step in state.steps.items():
                if step.status is StepStatus.AWAITING_APPROVAL:
                    found += 1
                    print(
                        f"{summary.run_id} {step_id}  {step.step.tool:<18} by {state.principal}"
                        f"  {json.dumps(step.step.args, ensure_ascii=False)[:80]}"
                    )
    if not found:
        say("no calls wait for approval")
    return 0


def approve(args: argparse.Namespace) -> int:
    return _decide(args, "approve")


def deny(args: argparse.Namespace) -> int:
    return _decide(args, "deny")


def _decide(args: argparse.Namespace, decision: str) -> int:
    """Record the decision (the policy must allow the principal to approve), then continue the
    run: an approved call is decided again, against the policy in force, before it runs."""
    from ember.journal import Decision

    config = settings(args)
    bare = msgspec.structs.replace(config, planner=PlannerSettings(backend=None))

    async def main() -> int:
        async with open_runtime(bare) as runtime:
            assert runtime.control is not None
            run_id = runtime.journal.find_run(args.run_id)
            by = acting(args, runtime.control)
            await runtime.resolve(run_id, args.step_id, Decision(decision), by)
            say(f"step {args.step_id} of {run_id}: {decision}d by {by}; continuing the run")
            return report(args, config, await runtime.resume(run_id))

    return asyncio.run(main())


def audit_verify(args: argparse.Namespace) -> int:
    from ember.policy.signing import load_public_key, verify_audit

    config = settings(args)
    key = Path(args.public_key) if args.public_key else config.signing_key
    public = load_public_key(key) if key.exists() else None
    outside = config.signing_key.with_name(config.signing_key.name + ".checkpoint")
    with open_control(config) as control:
        found = verify_audit(control.store, public, outside)
    signed = "" if public is not None else " (no key found: signatures not checked)"
    if found.broken is None:
        print(f"ok: {found.entries} entries chained, {found.checkpoints} checkpoints{signed}")
        return 0
    print(f"BROKEN at entry {found.broken.seq}: {found.broken.problem}")
    return 1


def audit_export(args: argparse.Namespace) -> int:
    since = _since(args.since) if args.since else None
    out = open(args.out, "w") if args.out else sys.stdout  # noqa: SIM115
    try:
        with open_control(settings(args)) as control:
            for row in control.store.audit(since):
                entry = json.loads(row.body)
                line = {"seq": row.seq, "at": row.at, "kind": entry.get("kind"), "entry": entry}
                line["hash"] = row.hash.hex()
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def audit_key(args: argparse.Namespace) -> int:
    from ember.policy.signing import AuditSigner

    print(AuditSigner(settings(args).signing_key).public_pem(), end="")
    return 0


def _since(text: str) -> float:
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise UserError(f"--since {text!r}: give a date or time, e.g. 2026-12-01T09:00") from None


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
