"""The endpoints of people's work beside the runs: decide a waiting step (approve, deny;
retry, skip or fail one in doubt) and see which wait (the inbox), verify the audit log, list
the tools and where they live, and prefill the planner while a task is typed."""

from __future__ import annotations

import collections
import json
from typing import TYPE_CHECKING

from ember.errors import PermissionDeniedError, UserError
from ember.journal import Decision, RunStatus, StepStatus, fold
from ember.server.api import Console, denied
from ember.server.errors import ApiError, decode_body, json_response
from ember.server.schema import (
    AuditEntry,
    AuditView,
    Decided,
    Health,
    Inbox,
    InboxItem,
    PrefillRequest,
    ResolveRequest,
    ToolInfo,
    ToolList,
)

if TYPE_CHECKING:
    from pathlib import Path

    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["Desk"]

_WAITING = (StepStatus.AWAITING_APPROVAL, StepStatus.IN_DOUBT)


class Desk:
    """People's endpoints, over the `console`'s runtime and runs."""

    def __init__(self, console: Console, signing_key: Path) -> None:
        self.console = console
        self.signing_key = signing_key

    async def approve(self, request: Request) -> Response:
        """Approve a step awaiting approval; the run goes on in the server."""
        return await self._decide(request, Decision.APPROVE)

    async def deny(self, request: Request) -> Response:
        """Deny a step awaiting approval: it fails, the run goes on without it."""
        return await self._decide(request, Decision.DENY)

    async def resolve(self, request: Request) -> Response:
        """Decide about a step in doubt: retry it (same key), skip it, or fail it."""
        body = decode_body(await request.body(), ResolveRequest)
        return await self._decide(request, Decision(body.decision))

    async def _decide(self, request: Request, decision: Decision) -> Response:
        console = self.console
        run_id, state = console.visible_run(request)
        principal = str(request.state.principal)
        step = int(request.path_params["step"])
        runtime = console.runtime
        try:
            await runtime.resolve(run_id, step, decision, by=principal)
        except PermissionDeniedError as exc:
            raise denied(exc) from None
        except UserError as exc:
            what = "see GET /v1/inbox for the steps that wait"
            raise ApiError(409, str(exc), what, "step") from None
        if console.tasks.owner(run_id) is not None or state.status is RunStatus.WAITING:
            started_by = state.principal or principal
            console.tasks.adopt(run_id, started_by, lambda: runtime.resume(run_id))
        return json_response(Decided(run_id, step, decision.value, principal), 202)

    async def inbox(self, request: Request) -> Response:
        """The steps waiting for a person that this principal may decide, oldest run first."""
        console = self.console
        principal = console.allow(request, "read_runs")
        journal = console.runtime.journal
        summaries = journal.runs(200, status=RunStatus.WAITING) + journal.runs(
            200, status=RunStatus.RUNNING
        )
        items = []
        for summary in sorted(summaries, key=lambda s: s.seq):
            state = fold(summary.run_id, journal.read(summary.run_id))
            if not console.sees(principal, state):
                continue
            for step_id, step in state.steps.items():
                if step.status in _WAITING:
                    items.append(
                        InboxItem(
                            state.run_id,
                            step_id,
                            step.step.tool,
                            step.intent_args or step.step.args,
                            step.status.value,
                            step.error or "",
                            state.principal,
                            state.task,
                        )
                    )
        return json_response(Inbox(items))

    async def audit(self, request: Request) -> Response:
        """The audit chain verified now, and its latest entries this principal may read."""
        from ember.policy.signing import load_public_key, verify_audit

        console = self.console
        principal = console.allow(request, "read_runs")
        control = console.runtime.control
        if control is None:
            raise ApiError(409, "this runtime keeps no audit log", "run ember serve")
        key = self.signing_key
        public = load_public_key(key) if key.exists() else None
        outside = key.with_name(key.name + ".checkpoint")
        found = verify_audit(control.store, public, outside)
        recent: collections.deque[AuditEntry] = collections.deque(maxlen=50)
        for row in control.store.audit():
            entry = json.loads(row.body)
            if console.local or entry.get("principal") == principal:
                kind = str(entry.get("kind", ""))
                recent.append(AuditEntry(row.seq, row.at, kind, entry, row.hash.hex()))
        broken = None
        if found.broken is not None:
            broken = f"entry {found.broken.seq}: {found.broken.problem}"
        view = AuditView(
            found.broken is None,
            found.entries,
            found.checkpoints,
            public is not None,
            broken,
            list(reversed(recent)),
        )
        return json_response(view)

    async def tools(self, request: Request) -> Response:
        """The registered tools and where each lives."""
        self.console.allow(request, "read_runs")
        tools = [
            ToolInfo(
                t.descriptor.tool_name,
                t.descriptor.description,
                t.descriptor.execution_mode.value,
                t.descriptor.risk.value,
                t.descriptor.idempotent,
                t.source,
                t.descriptor.parameters,
            )
            for t in self.console.runtime.registry
        ]
        return json_response(ToolList(tools))

    async def prefill(self, request: Request) -> Response:
        """Let the planner read the task being typed: 204 (read, or overtaken by a newer
        text of the session); 409 when the planner cannot."""
        from starlette.responses import Response

        console = self.console
        console.allow(request, "start_run")
        body = decode_body(await request.body(), PrefillRequest)
        if len(body.text) > console.limits.max_task_chars:
            raise ApiError(
                422,
                f"the text has {len(body.text)} characters, over {console.limits.max_task_chars}",
                "a task is shorter: stop prefilling",
                "text",
            )
        if not console.runtime.can_prefill:
            planner = console.runtime.planner
            name = planner.name if planner is not None else "no"
            raise ApiError(
                409,
                f"the {name} planner cannot read a task while it is typed",
                "just submit the task (only the embedded llama planner prefills)",
            )
        await console.prefiller.prefill(body.session, body.text)
        return Response(status_code=204)

    async def health(self, _: Request) -> Response:
        return json_response(Health("ok"))
