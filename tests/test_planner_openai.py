"""The openai planner against a real OpenAI-compatible server on loopback: llama-cpp-python's
own server with the shipped model."""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date

import pytest

from ember.errors import PlannerError
from ember.plan import Step
from ember.planner.base import FirstToken, PlanningTask
from ember.planner.openai import OpenAIPlanner
from ember.tools.demo import demo_catalog

from .test_planner_llama import _model_available

CATALOGUE = tuple(demo_catalog())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _plan(planner: OpenAIPlanner, request: str) -> list[object]:
    async def collect() -> list[object]:
        try:
            return [
                item
                async for item in planner.plan(PlanningTask(request, date(2026, 3, 2), CATALOGUE))
            ]
        finally:
            await planner.aclose()

    return asyncio.run(collect())


@pytest.mark.parametrize("response_format", ["json_schema", "driven"])
def test_an_unreachable_server_is_a_clear_error(response_format: str) -> None:
    planner = OpenAIPlanner(
        f"http://127.0.0.1:{_free_port()}/v1", "m", timeout_s=5, response_format=response_format
    )
    with pytest.raises(PlannerError, match="cannot reach the model server at http://127.0.0.1"):
        _plan(planner, "hi")


def test_the_openai_planner_needs_neither_numpy_nor_llama_cpp() -> None:
    """`pip install ember[remote]` has neither: the driven mode's decoder must not import them
    (its vocabulary, which needs numpy, is the embedded planner's)."""
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('numpy', 'llama_cpp'):\n"
        "            raise ImportError(f'{name} is not installed')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from ember.planner.openai import OpenAIPlanner\n"
        "OpenAIPlanner('http://127.0.0.1:1/v1', 'm', response_format='driven')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocker], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_rules_are_switched_off_only_where_the_decoder_runs() -> None:
    with pytest.raises(PlannerError, match="only with response_format 'driven'"):
        OpenAIPlanner("http://127.0.0.1:1/v1", "m", rules_off=frozenset({"numbers"}))
    with pytest.raises(PlannerError, match="no decoding rule named nope"):
        OpenAIPlanner(
            "http://127.0.0.1:1/v1", "m", response_format="driven", rules_off=frozenset({"nope"})
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    problem = _model_available()
    if problem is None and importlib.util.find_spec("uvicorn") is None:
        problem = "llama-cpp-python[server] is not installed (the dev extra installs it)"
    if problem:
        pytest.skip(problem)
    from ember.planner.models import resolve_model

    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("wb") as sink:  # a pipe would fill with the model's metadata and stall it
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(resolve_model()),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "4096",
                "--model_alias",
                "qwen",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 180
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise RuntimeError(f"the server did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.5)
    yield f"http://127.0.0.1:{port}/v1"
    process.terminate()
    process.wait(timeout=30)


@pytest.mark.model
def test_plans_through_a_real_openai_compatible_server(server: str) -> None:
    planner = OpenAIPlanner(server, "qwen", response_format="json_object")
    items = _plan(planner, "What's the weather in Tokyo on 2026-03-03?")
    assert isinstance(items[0], FirstToken)
    steps = [item for item in items if isinstance(item, Step)]
    assert [(s.tool, s.args) for s in steps] == [
        ("get_weather", {"city": "Tokyo", "date": "2026-03-03"})
    ]
    bad = OpenAIPlanner(server.replace("/v1", "/nope"), "qwen")
    with pytest.raises(PlannerError, match="answered HTTP 404"):
        _plan(bad, "hi")


@pytest.mark.model
def test_the_driven_decoder_plans_through_a_real_server(server: str) -> None:
    """`driven`: the embedded planner's decoder steers the server a choice at a time, so the
    request's values are grounded as they are in process (an address the request gives)."""
    planner = OpenAIPlanner(server, "qwen2.5-coder-1.5b", response_format="driven")
    items = _plan(planner, "Convert 100 USD to EUR and email the result to bob@example.com")
    assert isinstance(items[0], FirstToken)
    steps = [item for item in items if isinstance(item, Step)]
    assert [s.tool for s in steps] == ["convert_currency", "send_email"]
    assert steps[0].args == {"amount": 100, "from_currency": "USD", "to_currency": "EUR"}
    assert steps[1].args["to"] == "bob@example.com"
    assert "$1" in str(steps[1].args)  # the conversion's result goes into the mail
    assert planner.last_passes
    assert planner.last_margin is not None
