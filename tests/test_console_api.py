"""The console's API through httpx against the app (its lifespan open, a real journal): bad
input of every kind gets the right 4xx and a message that says what to do; runs are accepted
at once, cancelled, decided; a token cannot probe another principal's runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason='ember serve needs the server extra: pip install ".[dev]"')

from .console.support import (
    bearer,
    client_of,
    console_settings,
    make_token,
    problem,
    set_policy,
    wait_for_status,
)


def test_bad_input_gets_the_right_4xx_and_says_what_to_do(tmp_path: Path) -> None:
    settings = console_settings(tmp_path, max_body_bytes=2048, max_task_chars=100)
    token = make_token(settings, "ann")
    auth = bearer(token)

    async def main() -> None:
        async with client_of(settings) as client:

            async def post(body: bytes, path: str = "/v1/runs", **headers: str) -> dict:  # type: ignore[type-arg]
                answer = await client.post(path, content=body, headers={**auth, **headers})
                return {"status": answer.status_code, **problem(answer)}

            assert (await post(b"{not json"))["status"] == 400
            wrong = await post(b'{"task": 5}')
            assert (wrong["status"], wrong["field"]) == (422, "task")
            assert "Expected `str`" in wrong["error"]
            assert (await post(b'{"task": "quick", "colour": 1}'))["status"] == 422
            assert (await post(b"[1, 2]"))["status"] == 422
            empty = await post(b'{"task": "   "}')
            assert (empty["status"], empty["field"]) == (422, "task")
            long = await post(b'{"task": "%s"}' % (b"x" * 101))
            assert (long["status"], long["field"]) == (422, "task")
            assert "max_task_chars" in long["what_to_do"]
            today = await post(b'{"task": "quick", "today": "tomorrow"}')
            assert (today["status"], today["field"]) == (422, "today")
            planner = await post(b'{"task": "quick", "planner": "llama"}')
            assert (planner["status"], planner["field"]) == (422, "planner")
            huge = await post(b'{"task": "%s"}' % (b"x" * 50_000))
            assert huge["status"] == 413
            assert "max_body_bytes" in huge["what_to_do"]
            resolve = await post(b'{"decision": "maybe"}', "/v1/runs/r-x/steps/1/resolve")
            assert resolve["status"] in (404, 422)

            for path, field in [
                ("/v1/runs?status=lost", "status"),
                ("/v1/runs?limit=0", "limit"),
                ("/v1/runs?limit=ten", "limit"),
                ("/v1/runs?since=yesterday", "since"),
                ("/v1/runs?before=-3", "before"),
                ("/v1/runs?before=17419292649068732416", "before"),  # past int64: was a 500
            ]:
                answer = await client.get(path, headers=auth)
                assert (answer.status_code, problem(answer)["field"]) == (400, field), path

            unknown = await client.get("/v1/runs/r-000000000000", headers=auth)
            assert unknown.status_code == 404
            assert problem(unknown)["field"] == "run_id"
            assert (await client.get("/v1/runs/r-0/events", headers=auth)).status_code == 404
            assert (await client.post("/v1/runs/r-0/cancel", headers=auth)).status_code == 404
            assert (await client.get("/v1/nowhere", headers=auth)).status_code == 404
            problem(await client.get("/v1/nowhere", headers=auth))
            assert (await client.delete("/v1/runs", headers=auth)).status_code == 405

            missing = await client.get("/v1/runs")
            assert missing.status_code == 401
            assert missing.headers["www-authenticate"].startswith("Bearer")
            assert "ember tokens create" in problem(missing)["what_to_do"]
            wrong_token = await client.get("/v1/runs", headers=bearer("not-a-token"))
            assert wrong_token.status_code == 401
            problem(wrong_token)
            assert (await client.get("/health")).status_code == 200  # no token needed

            prefill = await client.post(
                "/v1/prefill", json={"session": "s", "text": "plan a"}, headers=auth
            )
            assert prefill.status_code == 409
            assert "scripted planner cannot" in problem(prefill)["error"]

    asyncio.run(main())


def test_too_many_runs_or_requests_is_429_with_retry_after(tmp_path: Path) -> None:
    settings = console_settings(tmp_path, max_concurrent_runs=2, rate_per_s=1000.0)
    auth = bearer(make_token(settings, "ann"))

    async def main() -> None:
        async with client_of(settings) as client:
            for _ in range(2):
                answer = await client.post(
                    "/v1/runs", json={"task": "plan a slow trip"}, headers=auth
                )
                assert answer.status_code == 202
            full = await client.post("/v1/runs", json={"task": "quick"}, headers=auth)
            assert full.status_code == 429
            assert full.headers["retry-after"] == "1"
            assert "max_concurrent_runs" in problem(full)["what_to_do"]

    asyncio.run(main())

    settings = console_settings(tmp_path / "rate", rate_per_s=1.0, rate_burst=3)
    auth = bearer(make_token(settings, "ann"))

    async def burst() -> None:
        async with client_of(settings) as client:
            codes = [(await client.get("/v1/tools", headers=auth)).status_code for _ in range(4)]
            assert codes == [200, 200, 200, 429]
            limited = await client.get("/v1/tools", headers=auth)
            assert int(limited.headers["retry-after"]) >= 1
            problem(limited)

    asyncio.run(burst())


def test_a_run_is_accepted_at_once_and_cancelled_with_its_steps_recorded(tmp_path: Path) -> None:
    settings = console_settings(tmp_path)
    auth = bearer(make_token(settings, "ann"))

    async def main() -> None:
        async with client_of(settings) as client:
            answer = await client.post("/v1/runs", json={"task": "plan a slow trip"}, headers=auth)
            assert answer.status_code == 202
            accepted = answer.json()
            run_id = accepted["run_id"]
            assert accepted["events"] == f"/v1/runs/{run_id}/events"
            await asyncio.sleep(0.3)  # steps 1 and 2 are running
            cancelled = await client.post(f"/v1/runs/{run_id}/cancel", headers=auth)
            assert cancelled.json() == {"run_id": run_id, "status": "cancelled"}
            run = (await client.get(f"/v1/runs/{run_id}", headers=auth)).json()["run"]
            assert run["status"] == "cancelled"
            assert all(step["status"] != "running" for step in run["steps"].values())
            again = await client.post(f"/v1/runs/{run_id}/cancel", headers=auth)
            assert again.status_code == 409
            assert "already finished" in problem(again)["error"]

            waited = await client.post("/v1/runs?wait=true", json={"task": "quick"}, headers=auth)
            assert waited.status_code == 200
            assert waited.json()["status"] == "succeeded"
            page = (await client.get("/v1/runs?status=succeeded", headers=auth)).json()
            assert [r["run_id"] for r in page["runs"]] == [waited.json()["run_id"]]
            assert page["next"] is None
            first = (await client.get("/v1/runs?limit=1", headers=auth)).json()
            older = (await client.get(f"/v1/runs?before={first['next']}", headers=auth)).json()
            assert [r["run_id"] for r in first["runs"] + older["runs"]] == [
                waited.json()["run_id"],
                run_id,
            ]

    asyncio.run(main())


def test_a_step_is_approved_from_the_inbox_and_the_run_goes_on(tmp_path: Path) -> None:
    settings = console_settings(tmp_path)
    ann = bearer(make_token(settings, "ann"))
    bob = bearer(make_token(settings, "bob"))

    async def main() -> None:
        async with client_of(settings) as client:
            run_id = (
                await client.post("/v1/runs", json={"task": "pay bob 40"}, headers=ann)
            ).json()["run_id"]
            await wait_for_status(client, run_id, {"waiting"}, ann)
            items = (await client.get("/v1/inbox", headers=ann)).json()["items"]
            assert [(i["run_id"], i["step"], i["status"]) for i in items] == [
                (run_id, 2, "awaiting_approval")
            ]
            wrong = await client.post(f"/v1/runs/{run_id}/steps/1/approve", headers=ann)
            assert wrong.status_code == 409
            assert "not waiting" in problem(wrong)["error"]
            approved = await client.post(f"/v1/runs/{run_id}/steps/2/approve", headers=bob)
            assert approved.status_code == 202  # no policy: anyone may approve, bob included
            assert approved.json()["by"] == "bob"
            run = await wait_for_status(client, run_id, {"succeeded", "failed"}, ann)
            assert run["run"]["status"] == "succeeded"
            assert run["run"]["steps"]["2"]["result"] == {"sent": 40, "to": "bob"}
            assert (await client.get("/v1/inbox", headers=ann)).json()["items"] == []
            audit = (await client.get("/v1/audit", headers=ann)).json()
            assert audit["ok"] is True
            assert audit["entries"] > 0

    asyncio.run(main())


def test_a_token_cannot_probe_other_principals_runs(tmp_path: Path) -> None:
    settings = console_settings(tmp_path)
    ann = bearer(make_token(settings, "ann"))
    bob = bearer(make_token(settings, "bob"))

    async def main() -> None:
        async with client_of(settings) as client:
            answer = await client.post("/v1/runs?wait=true", json={"task": "quick"}, headers=ann)
            run_id = answer.json()["run_id"]
            assert (await client.get(f"/v1/runs/{run_id}", headers=ann)).status_code == 200
            theirs = await client.get(f"/v1/runs/{run_id}", headers=bob)
            nobody = await client.get("/v1/runs/r-ffffffffffff", headers=bob)
            assert theirs.status_code == nobody.status_code == 404
            assert theirs.json()["error"].replace(run_id, "X") == nobody.json()["error"].replace(
                "r-ffffffffffff", "X"
            )
            assert (await client.get(f"/v1/runs/{run_id[:4]}", headers=bob)).status_code == 404
            assert (await client.get(f"/v1/runs/{run_id}/events", headers=bob)).status_code == 404
            assert (await client.post(f"/v1/runs/{run_id}/cancel", headers=bob)).status_code == 404
            assert (await client.get("/v1/runs", headers=bob)).json()["runs"] == []
            listed = await client.get("/v1/runs?principal=ann", headers=bob)
            assert listed.json()["runs"] == []

    asyncio.run(main())
    set_policy(
        settings,
        'permit(principal, action, resource);\nforbid(principal == User::"bob", '
        'action == Action::"read_runs", resource);\n',
    )

    async def denied() -> None:
        async with client_of(settings) as client:
            answer = await client.get("/v1/runs", headers=bob)
            assert answer.status_code == 403
            assert "policy" in problem(answer)["what_to_do"]
            assert (await client.get("/v1/runs", headers=ann)).status_code == 200

    asyncio.run(denied())


def test_the_openapi_document_describes_every_route(tmp_path: Path) -> None:
    from starlette.routing import Route

    from ember.server import create_app

    app = create_app(console_settings(tmp_path))
    document = app.routes  # the routes the app serves ...
    served = {
        (method.lower(), route.path.replace(":int", ""))
        for route in document
        if isinstance(route, Route)
        for method in (route.methods or ()) - {"HEAD"}
    }

    async def main() -> dict:  # type: ignore[type-arg]
        async with client_of(console_settings(tmp_path)) as client:
            answer = await client.get("/openapi.json")
            assert answer.status_code == 200
            return dict(answer.json())

    described = asyncio.run(main())  # ... and the document, without a token
    listed = {(m, path) for path, ops in described["paths"].items() for m in ops}
    assert served == listed
    schemas = described["components"]["schemas"]
    assert {"RunRequest", "RunAccepted", "Problem", "RunDocument", "RunPage"} <= set(schemas)
    assert schemas["RunRequest"]["required"] == ["task"]


def test_an_internal_error_is_a_500_problem_without_a_trace(tmp_path: Path) -> None:
    """A journal record damaged outside ember: reading its run fails inside the server; the
    client gets a JSON problem, never the trace (that goes to the server's log)."""
    import sqlite3

    import httpx

    from ember.server import create_app

    settings = console_settings(tmp_path)
    auth = bearer(make_token(settings, "ann"))

    async def start() -> str:
        async with client_of(settings) as client:
            answer = await client.post("/v1/runs?wait=true", json={"task": "quick"}, headers=auth)
            return str(answer.json()["run_id"])

    run_id = asyncio.run(start())
    with sqlite3.connect(settings.db) as db:
        db.execute(  # a step's record: the run is still listed (its start and end are whole)
            "UPDATE events SET body = CAST('{}' AS BLOB) WHERE run_id = ? AND kind NOT IN "
            "('run.started', 'run.done')",
            (run_id,),
        )

    async def read() -> httpx.Response:
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://e") as client:
                return await client.get(f"/v1/runs/{run_id}", headers=auth)

    answer = asyncio.run(read())
    assert answer.status_code == 500
    body = problem(answer)
    assert "internal error" in body["error"]
    assert "CorruptRecordError" not in answer.text
