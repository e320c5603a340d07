"""The run endpoints: start a run (202 at once, or the whole answer with `?wait=true`), list
and read runs, follow one as Server-Sent Events, cancel one.

Who sees which run: a principal sees the runs it started, and a run with a step waiting for
an approval it may give (the inbox); without tokens (`--no-auth`) the OS user sees every run.
Any other run answers 404 exactly as an unknown one does, so a token cannot probe for other
principals' runs; 403 means the policy denies the action itself (`start_run`, `read_runs`,
`approve`), whatever the run.
"""

from __future__ import annotations

import asyncio
import math
import os
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from ember.errors import JournalError, PermissionDeniedError, RunNotFoundError
from ember.journal import RunState, RunStatus, StepStatus, fold
from ember.server.errors import ApiError, decode_body, json_response
from ember.server.events import EventHub, parse_last_event_id, stream
from ember.server.runs import Prefiller, RunTasks
from ember.server.schema import Cancelled, RunAccepted, RunDocument, RunPage, RunRequest

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ember.config import ServerSettings
    from ember.executor import Runtime
    from ember.journal.leases import Leases

__all__ = ["QUEUE_POLL_S", "Console"]

_FINAL = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
QUEUE_POLL_S = 0.25  # a cluster's event streams read the journal this often (workers write it)


class Console:
    """The API over one runtime (attached by the app's lifespan) and the runs it owns."""

    def __init__(self, limits: ServerSettings, hub: EventHub, *, local: bool) -> None:
        self.limits = limits
        self.hub = hub
        self.local = local  # --no-auth: the one principal is the OS user, who sees every run
        self.tasks = RunTasks(limits.max_concurrent_runs, limits.retry_after_s)
        # a cluster (a PostgreSQL journal): new runs go to the workers' queue, and the runs
        # this server queued, by principal, until a worker makes them durable
        self.queue: Leases | None = None
        self.queued: dict[str, str] = {}
        self._runtime: Runtime | None = None
        self._prefiller: Prefiller | None = None

    @property
    def runtime(self) -> Runtime:
        assert self._runtime is not None, "the lifespan opens the runtime before requests"
        return self._runtime

    @property
    def prefiller(self) -> Prefiller:
        assert self._prefiller is not None
        return self._prefiller

    def attach(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._prefiller = Prefiller(runtime)

    # -- who may do what ------------------------------------------------------------------

    def authenticate(self, header: str | None) -> str:
        """The principal a request's `Authorization` header stands for (AuthenticationError)."""
        from ember.policy.tokens import authenticate, bearer

        assert self.runtime.control is not None
        return authenticate(self.runtime.control.store, bearer(header)).name

    def allow(self, request: Request, action: str) -> str:
        """The request's principal, if the policy in force lets it do `action` on the runs."""
        principal = str(request.state.principal)
        control = self.runtime.control
        if control is not None:
            try:
                control.refresh().require(principal, action, "runs")
            except PermissionDeniedError as exc:
                raise denied(exc) from None
        return principal

    def may_approve(self, principal: str, state: RunState, tool: str) -> bool:
        control = self.runtime.control
        if control is None:
            return True
        started_by = state.principal or control.local
        context = {"run_principal": {"__entity": {"type": "User", "id": started_by}}}
        try:
            control.refresh().require(principal, "approve", tool, context)
        except PermissionDeniedError:
            return False
        return True

    def sees(self, principal: str, state: RunState) -> bool:
        """Whether `principal` may see the run `state` (see the module docstring)."""
        control = self.runtime.control
        started_by = state.principal or (control.local if control is not None else "")
        if self.local or started_by == principal:
            return True
        return any(
            step.status is StepStatus.AWAITING_APPROVAL
            and self.may_approve(principal, state, step.step.tool)
            for step in state.steps.values()
        )

    def visible_run(self, request: Request, action: str = "read_runs") -> tuple[str, RunState]:
        """The run the path names, as the request's principal may see it, else 404."""
        principal = self.allow(request, action)
        reference = str(request.path_params["run_id"])
        owner = self.tasks.owner(reference) or self.queued.get(reference)
        journal = self.runtime.journal
        if owner is not None and (self.local or owner == principal):
            try:
                return reference, fold(reference, journal.read(reference))
            except RunNotFoundError:  # started, nothing durable yet
                return reference, RunState(reference, principal=owner)
        try:
            run_id = journal.find_run(reference)
        except (RunNotFoundError, JournalError):  # unknown, or an ambiguous prefix
            state = None
        else:  # a damaged record is an internal error (500), not an unknown run
            state = fold(run_id, journal.read(run_id))
        if state is None or not self.sees(principal, state):
            raise ApiError(
                404,
                f"no run {reference}",
                "list the runs you may see with GET /v1/runs",
                "run_id",
            )
        return state.run_id, state

    # -- endpoints ------------------------------------------------------------------------

    async def submit(self, request: Request) -> Response:
        """Start a run: 202 with its id and events URL; `?wait=true`: the run's result."""
        principal = self.allow(request, "start_run")
        body = decode_body(await request.body(), RunRequest)
        text = body.task.strip()
        if not text:
            raise ApiError(422, "the task is empty", 'send {"task": "what to do"}', "task")
        if len(body.task) > self.limits.max_task_chars:
            raise ApiError(
                422,
                f"the task has {len(body.task)} characters, over {self.limits.max_task_chars}",
                "send a shorter task (max_task_chars in the [server] table of ember.toml)",
                "task",
            )
        if self.queue is not None:  # a cluster's server: the workers plan and run it
            return await self._enqueue(request, f"r-{os.urandom(6).hex()}", text, principal)
        runtime = self.runtime
        if runtime.planner is None:
            raise ApiError(409, "this server has no planner", "start it with --planner")
        if body.planner is not None and body.planner != runtime.planner.name:
            raise ApiError(
                422,
                f"this server plans with {runtime.planner.name}, not {body.planner}",
                f'leave "planner" out, or send "{runtime.planner.name}"',
                "planner",
            )
        run_id = f"r-{os.urandom(6).hex()}"
        task = self.tasks.start(
            run_id,
            principal,
            lambda: runtime.run(text, today=body.today, run_id=run_id, principal=principal),
        )
        if request.query_params.get("wait") in ("true", "1"):
            result = await asyncio.shield(task)  # a client gone does not cancel the run
            if result is None:
                raise ApiError(500, f"run {run_id} could not finish", "see the server's log")
            return json_response(result, 200)
        events = f"/v1/runs/{run_id}/events"
        return json_response(RunAccepted(run_id, events), 202, {"Location": f"/v1/runs/{run_id}"})

    async def list_runs(self, request: Request) -> Response:
        """Runs newest first, filtered by status, principal and start time, a page at a time."""
        principal = self.allow(request, "read_runs")
        query = request.query_params
        limit = _whole(query.get("limit", "20"), "limit", 1, 500)
        before = _whole(query["before"], "before", 1, _SEQ_MAX) if "before" in query else None
        status = _status(query.get("status"))
        wanted = query.get("principal") or None
        if not self.local and wanted not in (None, principal):
            return json_response(RunPage([]))  # another principal's runs: none to see
        runs = self.runtime.journal.runs(
            limit,
            before=before,
            status=status,
            principal=wanted if self.local else principal,
            since=_since(query.get("since")),
        )
        more = len(runs) == limit
        return json_response(RunPage(runs, runs[-1].seq if runs and more else None))

    async def show_run(self, request: Request) -> Response:
        """A run (an id prefix is enough): its folded state and its events."""
        run_id, state = self.visible_run(request)
        try:
            events = self.runtime.journal.read(run_id)
        except RunNotFoundError:
            events = []
        return json_response(RunDocument(state, events))

    async def _enqueue(self, request: Request, run_id: str, text: str, principal: str) -> Response:
        """A cluster's server: the run goes to the queue, for a worker to plan and run."""
        assert self.queue is not None
        if request.query_params.get("wait") in ("true", "1"):
            raise ApiError(
                422,
                "this server queues runs for workers: it cannot wait for one here",
                "leave ?wait out and follow the run's events (GET /v1/runs/ID/events)",
                "wait",
            )
        await self.queue.enqueue(run_id, text, principal)
        self.queued[run_id] = principal
        events = f"/v1/runs/{run_id}/events"
        return json_response(RunAccepted(run_id, events), 202, {"Location": f"/v1/runs/{run_id}"})

    async def events(self, request: Request) -> Response:
        """The run's journal events as Server-Sent Events, from `Last-Event-ID` on."""
        from starlette.responses import StreamingResponse

        run_id, state = self.visible_run(request)
        header = request.headers.get("last-event-id") or request.query_params.get("after")
        after = parse_last_event_id(header)
        finished = state.status in _FINAL
        poll = QUEUE_POLL_S if self.queue is not None else None  # workers write it elsewhere
        body = stream(self.hub, self.runtime.journal, run_id, after, finished=finished, poll_s=poll)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

    async def cancel(self, request: Request) -> Response:
        """Cancel a run this server is executing: each step's final state is recorded."""
        run_id, state = self.visible_run(request, "start_run")
        principal = str(request.state.principal)
        if not self.local and (state.principal or "") not in (principal, ""):
            raise ApiError(403, "only who started a run may cancel it", "ask them to")
        if await self.tasks.cancel(run_id):
            return json_response(Cancelled(run_id, RunStatus.CANCELLED.value))
        state = fold(run_id, self.runtime.journal.read(run_id))
        if state.status in _FINAL:
            what = f"run {run_id} already finished ({state.status.value})"
            raise ApiError(409, what, "nothing to cancel")
        if state.status is RunStatus.WAITING:
            raise ApiError(
                409,
                f"run {run_id} is waiting for a decision, not running",
                "deny (or fail) its waiting steps: POST /v1/runs/ID/steps/N/deny",
            )
        raise ApiError(
            409,
            f"run {run_id} is not running in this server (another process owns it)",
            "cancel it where it runs",
        )


def denied(exc: PermissionDeniedError) -> ApiError:
    return ApiError(
        403,
        f"forbidden: {exc}",
        "ask whoever keeps the policy for a rule that permits this "
        "(`ember policy show`; `ember policy test PRINCIPAL TOOL` to check one)",
    )


_SEQ_MAX = 2**63 - 1  # a journal position: SQLite's and PostgreSQL's largest integer


def _whole(text: str, name: str, low: int, high: int | None = None) -> int:
    if not text.isdigit() or int(text) < low or (high is not None and int(text) > high):
        top = f" and {high}" if high is not None else ""
        raise ApiError(
            400, f"{name}={text!r} is not a whole number between {low}{top}", "fix it", name
        )
    return int(text)


def _status(text: str | None) -> RunStatus | None:
    if not text:
        return None
    try:
        return RunStatus(text)
    except ValueError:
        known = ", ".join(s.value for s in RunStatus)
        raise ApiError(
            400, f"status={text!r} is not a run status", f"use one of {known}", "status"
        ) from None


def _since(text: str | None) -> float | None:
    """`since` as epoch seconds: a date, a date and time (ISO 8601), or a number."""
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds):
            return seconds
    try:
        when: Any = datetime.fromisoformat(text)
    except ValueError:
        raise ApiError(
            400,
            f"since={text!r} is not a date or time",
            "send e.g. 2026-12-01 or 2026-12-01T09:00 (or epoch seconds)",
            "since",
        ) from None
    if isinstance(when, date) and not isinstance(when, datetime):
        when = datetime.combine(when, datetime.min.time())
    return float(when.timestamp())
