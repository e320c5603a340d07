"""The embedded planner: prompt and grammar (pure), the stream parser, the model file, and one
end-to-end run on the real shipped model."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ember.errors import ModelError
from ember.plan import Step
from ember.planner.compact import field_paths, render_plan
from ember.planner.models import SHIPPED_MODELS, ShippedModel, _assemble, resolve_model
from ember.planner.openai import StepStreamParser
from ember.planner.prompt import (
    build_dated,
    build_prefix,
    build_request,
    build_shared_head,
    calendar_text,
    signature,
)
from ember.tools.demo import demo_catalog
from ember.tools.descriptor import ToolDescriptor

from .conftest import shared_file

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
CATALOGUE = tuple(demo_catalog())


def test_prompt_puts_the_catalogue_first_and_the_request_last() -> None:
    prefix = build_prefix(CATALOGUE)
    assert prefix.startswith("<|im_start|>system\n")
    assert signature(CATALOGUE[0]) in prefix
    assert (
        "search_hotels(city: string, check_in: date, nights: integer, "
        "max_price_per_night?: number) -> {hotels}" in prefix
    )
    today = date(2026, 3, 2)
    # Today's date is in the part cached once a day; a request reads only its own words.
    assert build_dated(today).endswith("<|im_start|>user\nToday: 2026-03-02 (Monday). Request:")
    request = build_request("Weather in Oslo?", today)
    assert request.startswith(" Weather in Oslo?<|im_end|>")
    assert build_prefix(CATALOGUE) == prefix  # stable, so its KV cache can be reused


def test_the_found_not_booked_example_is_shown_only_with_its_tools() -> None:
    """Beside the booking example, one that finds a hotel and mails it without booking: shown
    with the catalogue whose tools it uses, not among the syntax examples another catalogue
    gets (its prefix, and so its plans, stay as they were)."""
    found = "Find the cheapest hotel in Madrid for 3 nights"
    demo = build_prefix(CATALOGUE)
    assert demo.index("Book the cheapest hotel in Berlin") < demo.index(found)
    without = build_prefix(tuple(t for t in CATALOGUE if t.tool_name != "search_hotels"))
    assert found not in without
    ping = ToolDescriptor(
        tool_name="ping", description="Ping a host.", parameters={"type": "object"}
    )
    other = build_prefix((ping,))  # every syntax example, before the tools
    assert "Book the cheapest hotel in Berlin" in other
    assert found not in other


def test_stream_parser_yields_each_step_when_it_closes() -> None:
    text = (
        '{"steps":[{"id":1,"tool":"get_weather","args":{"city":"Par}is {x}","date":"2026-03-03"}},'
        ' {"id":2,"tool":"send_email","args":{"to":"a@b.co","subject":"s","body":"{$1.forecast}"'
        '},"after":[1]}]}'
    )
    parser = StepStreamParser()
    seen: list[tuple[int, list[Step]]] = []
    for index in range(0, len(text), 7):
        steps = parser.feed(text[index : index + 7])
        if steps:
            seen.append((index, steps))
    assert [s.id for _, batch in seen for s in batch] == [1, 2]
    assert seen[0][1][0].args == {"city": "Par}is {x}", "date": "2026-03-03"}
    assert seen[0][0] < len(text) // 2  # step 1 came out long before the plan ended
    assert seen[1][1][0].after == [1]


def test_model_paths_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="neither a shipped model"):
        resolve_model(str(tmp_path / "missing.gguf"))
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"NOPE")
    with pytest.raises(ModelError, match="lacks the GGUF magic"):
        resolve_model(str(fake))
    real = tmp_path / "tiny.gguf"
    real.write_bytes(b"GGUF\x03\x00")
    assert resolve_model(str(real)) == real


def test_assembly_verifies_the_checksum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index in (1, 2):
        package = tmp_path / "site" / f"ember_fake_part{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{index:02d}.bin").write_bytes(b"GGUF" if index == 1 else b"data")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("EMBER_MODEL_DIR", str(tmp_path / "cache"))
    import hashlib

    good = ShippedModel(
        "fake",
        "fake.gguf",
        ("ember_fake_part1", "ember_fake_part2"),
        8,
        hashlib.sha256(b"GGUFdata").hexdigest(),
        "none",
    )
    assert _assemble(good).read_bytes() == b"GGUFdata"
    bad = ShippedModel("bad", "bad.gguf", good.packages, 8, "0" * 64, "none")
    with pytest.raises(ModelError, match="has SHA-256 .* expected 0000"):
        _assemble(bad)
    assert not (tmp_path / "cache" / "models" / "bad.gguf").exists()
    missing = ShippedModel("gone", "gone.gguf", ("ember_no_such_part",), 1, "0" * 64, "none")
    with pytest.raises(ModelError, match="needs the package 'ember-no-such-part'"):
        _assemble(missing)


def _model_available() -> str | None:
    if not HAS_LLAMA:
        return "llama-cpp-python is not installed: run scripts/install"
    try:
        SHIPPED_MODELS["qwen2.5-coder-0.5b"].part_paths()
    except ModelError as exc:
        return str(exc)
    return None


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_todays_line_cached_apart_reads_as_the_same_tokens_as_the_whole_prompt() -> None:
    """The dated part ends with `Request:` and the request starts with a space: split there,
    the model reads exactly the tokens of the whole prompt, so caching the date's line with the
    calendar changes no plan (a request reads ~14 tokens fewer)."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(resolve_model(None)), vocab_only=True, verbose=False)
    dev = shared_file("planner-tasks/dev.jsonl").read_text(encoding="utf-8").splitlines()
    requests = [json.loads(line)["request"] for line in dev if line.strip()]
    requests += ["500 dollars in yen?", "'Dentist' on Friday", "  spaced  ", "«Oslo»", "📅 today"]
    today = date(2026, 3, 2)
    dated = build_prefix(CATALOGUE) + build_dated(today)
    for request in requests:
        whole = llm.tokenize((dated + build_request(request, today)).encode(), False, True)
        apart = llm.tokenize(dated.encode(), False, True) + llm.tokenize(
            build_request(request, today).encode(), False, True
        )
        assert apart == whole, request


def _plan(
    planner: Any,
    request: str,
    today: date = date(2026, 3, 2),
    catalogue: tuple[ToolDescriptor, ...] = CATALOGUE,
) -> list[Step]:
    """The steps `planner` plans for `request` over `catalogue` (the demo one by default)."""
    import asyncio

    from ember.planner.base import PlanningTask

    async def collect() -> list[Step]:
        task = PlanningTask(request, today, catalogue)
        return [step async for step in planner.plan(task) if isinstance(step, Step)]

    return asyncio.run(collect())


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_embedded_model_answers_a_single_tool_request(ember_env: dict[str, str]) -> None:
    """The README's first command, for real: the shipped model plans, the demo tool runs."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ember.cli",
            "run",
            "--json",
            "What's the weather in Tokyo on 2026-03-03?",
        ],
        env=ember_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "succeeded"
    assert [(s["tool"], s["args"]) for s in out["steps"]] == [
        ("get_weather", {"city": "Tokyo", "date": "2026-03-03"})
    ]
    assert out["steps"][0]["result"]["city"] == "Tokyo"
    # a question: the model writes the answer from the result (not the template), checked
    assert not out["answer"].startswith("**Task:**")
    assert "Tokyo" in out["answer"]
    assert isinstance(out["unverified"], list)
    latency = out["latency_ms"]  # measured, not judged: speed is for benchmarks/
    assert latency["l1_ttft"] > 0
    assert latency["l1_plan"] >= latency["l1_ttft"]
    assert latency["l1_answer"] >= latency["l1_answer_ttft"] > 0


def test_compact_syntax_renders_calls_references_and_orderings() -> None:
    steps = [
        Step(
            id=1, tool="search_hotels", args={"city": "Oslo", "check_in": "2026-03-03", "nights": 2}
        ),
        Step(id=2, tool="book_hotel", args={"hotel_id": "$1.hotels.0.hotel_id", "nights": 2}),
        Step(id=3, tool="generate_report", args={"sections": ["a {$2.booking_id}"]}, after=[1]),
    ]
    assert render_plan(steps) == (
        '1. search_hotels(city="Oslo", check_in="2026-03-03", nights=2)\n'
        "2. book_hotel(hotel_id=$1.hotels.0.hotel_id, nights=2)\n"
        '3. generate_report(sections=["a {$2.booking_id}"]) after 1\n'
        "done"
    )
    assert render_plan([]) == "done"


def test_references_offered_are_the_fields_whose_type_fits() -> None:
    tools = {tool.tool_name: tool for tool in CATALOGUE}
    hotels = tools["search_hotels"].returns
    strings = field_paths(hotels, {"type": "string"})
    assert ".hotels.0.hotel_id" in strings
    assert ".hotels.9.name" in strings
    assert ".hotels.0.price_per_night" not in strings
    assert ".hotels" not in strings
    assert ".hotels.0.price_per_night" in field_paths(hotels, {"type": "integer"})
    everything = field_paths(hotels)
    assert {".hotels", ".hotels.0", ".hotels.0.currency"} <= set(everything)


def test_the_calendar_names_the_days_a_request_may_mean() -> None:
    text = calendar_text(date(2026, 3, 2))  # a Monday
    assert "today is Monday 2026-03-02; tomorrow is Tuesday 2026-03-03" in text
    assert "Thursday 2026-03-05" in text
    assert "Next week: Monday 2026-03-09" in text
    assert "Later this week: none" in calendar_text(date(2026, 3, 7))  # a Saturday


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_the_embedded_model_writes_a_valid_multi_step_plan() -> None:
    """The real model, through the driven decoder: a chain whose second step uses the first's
    result. Every reference it writes must point at an earlier step's existing field."""
    from ember.measure import scoring
    from ember.planner.llama import LlamaPlanner

    planner = LlamaPlanner(prefix_cache=False)
    steps = _plan(planner, "Look up customer C-4471 and email their tier to sales@example.com.")
    assert [step.tool for step in steps][:2] == ["lookup_customer", "send_email"]
    assert steps[0].args == {"customer_id": "C-4471"}
    assert steps[1].args["to"] == "sales@example.com"
    catalog = {tool.tool_name: tool.to_json() for tool in CATALOGUE}
    plain = [{k: v for k, v in msgspec.to_builtins(s).items() if k != "each"} for s in steps]
    assert scoring.validate_plan({"steps": plain}, catalog) == []


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_the_embedded_model_goes_through_a_list_item_by_item() -> None:
    """The real model, offered `for each item in $1.files: ` where the request asks about
    each of several files: one step over the list, its item a path."""
    from ember.planner.llama import LlamaPlanner

    planner = LlamaPlanner(prefix_cache=False)
    steps = _plan(planner, "What is the total of each invoice in /data/inbox?")
    assert steps[0].tool == "list_files"
    assert steps[0].args == {"directory": "/data/inbox"}
    assert steps[1].tool == "extract_invoice"
    assert steps[1].each == "$1.files"
    assert steps[1].args == {"path": "$item"}


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_an_identifier_comes_from_the_tool_that_finds_it() -> None:
    """The travel example on the real default model: book_hotel's hotel_id is documented to
    come from search_hotels, so the plan searches first and books what the search found."""
    from ember.planner.llama import LlamaPlanner

    steps = _plan(
        LlamaPlanner(prefix_cache=False),
        "Check the weather in Paris tomorrow, book the cheapest hotel there for 2 nights and "
        "email the booking to alice@example.com",
    )
    tools = [step.tool for step in steps]
    assert "search_hotels" in tools
    assert "book_hotel" in tools
    search, book = tools.index("search_hotels"), tools.index("book_hotel")
    assert search < book
    assert steps[book].args["hotel_id"].startswith(f"${steps[search].id}.hotels.")
    assert steps[-1].tool == "send_email"
    assert steps[-1].args["to"] == "alice@example.com"


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_a_request_typed_ahead_is_read_before_it_is_submitted() -> None:
    """Prefill as the user types: at submit, only the prompt's last token is left to read,
    and the plan is the one the planner makes without a prefill."""
    from ember.planner.base import PlanningTask
    from ember.planner.llama import LlamaPlanner
    from ember.planner.prompt import build_request

    # Without plans by shape: the second plan of the same request would be recalled, not read.
    planner = LlamaPlanner(prefix_cache=False, shapes=False)
    today = date(2026, 3, 2)
    request = "What's the weather in Lisbon on 2026-03-05?"
    plain = _plan(planner, request)
    _plan(planner, "Convert 10 euros to US dollars.")  # the cache now holds another request
    read = [
        planner.prefill("s1", PlanningTask(request[:end], today, CATALOGUE))
        for end in range(1, len(request) + 1)
    ]
    assert sum(read) > 5
    assert read[-1] <= 12  # a keystroke reads the changed end and the prompt's closing
    assert planner.typed_session == "s1"
    assert _plan(planner, request) == plain
    prompt = build_request(request, today).encode()
    assert planner.reused_tokens == len(planner._load().tokenize(prompt, False, True)) - 1


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_the_same_request_gets_the_same_plan_whatever_came_before_it() -> None:
    """The cache may hold a request that starts as this one does, or another day's calendar:
    read after them in other batches, the same tokens gave margins a few tenths apart, and a
    set's plans depended on its order. Each request and each day's calendar is read whole."""
    from ember.planner.llama import LlamaPlanner

    planner = LlamaPlanner(prefix_cache=False, shapes=False)
    request = "What's the weather in Lisbon on 2026-03-05 and the cheapest hotel there?"

    def plan() -> tuple[list[Step], float | None, list[float]]:
        steps = _plan(planner, request)
        return steps, planner.last_margin, planner.last_end_margins

    alone = plan()
    _plan(planner, "What's the weather in Lisbon tomorrow?")  # the same first words
    assert plan() == alone  # margins equal to the last bit, not only the plan
    assert planner.reused_tokens == 0
    _plan(planner, "What's the weather in Lisbon tomorrow?", today=date(2026, 4, 9))
    assert plan() == alone  # the calendar of 2026-03-02 read again after another day's


def _tool(name: str, description: str, **params: str) -> ToolDescriptor:
    properties = {param: {"type": kind} for param, kind in params.items()}
    schema = {"type": "object", "properties": properties, "required": list(params)}
    return ToolDescriptor(tool_name=name, description=description, parameters=schema)


STOCKS = (
    _tool("get_stock_price", "The last traded price of a stock.", symbol="string"),
    _tool("post_message", "Post a message to a chat channel.", channel="string", text="string"),
)
# The same catalogue but for its last words: read on from where the two differ, a few tokens
# in a batch of their own, the tools gave margins 7.46 and 7.55 and two plans.
ROOMS = (
    STOCKS[0],
    _tool("post_message", "Post a message to a chat room.", channel="string", text="string"),
)


def test_catalogues_without_the_examples_tools_share_the_start_of_their_prompt() -> None:
    """Such a catalogue is shown the syntax examples before its tools: that start is the same
    for all of them (read once, then each catalogue's tools after it); the demo catalogue,
    shown its own examples after its tools, has none."""
    head = build_shared_head(STOCKS)
    assert head == build_shared_head(ROOMS)
    assert build_prefix(STOCKS).startswith(head)
    assert build_prefix(STOCKS)[len(head) :].startswith("get_stock_price(symbol: string)")
    assert "Book the cheapest hotel in Berlin" in head
    assert build_shared_head(CATALOGUE) == ""


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_the_same_request_gets_the_same_plan_whatever_catalogue_came_before_it() -> None:
    """A catalogue's tools are read whole after the prompt's shared start, never on from where
    the previous catalogue's differ: BFCL gives every entry its own catalogue, and a run's
    score depended on its entries' order."""
    from ember.planner.llama import LlamaPlanner

    planner = LlamaPlanner(prefix_cache=False, shapes=False)
    request = "What is the stock price of ACME? Post it to #markets."

    def plan() -> tuple[list[Step], float | None, list[float]]:
        steps = _plan(planner, request, catalogue=STOCKS)
        return steps, planner.last_margin, planner.last_end_margins

    alone = plan()
    assert [step.tool for step in alone[0]][:1] == ["get_stock_price"]
    _plan(planner, "What is the stock price of ACME?", catalogue=ROOMS)
    assert plan() == alone  # margins equal to the last bit, not only the plan
    _plan(planner, "What's the weather in Oslo tomorrow?")  # the demo catalogue's prompt
    assert plan() == alone


@pytest.mark.model
@pytest.mark.skipif(_model_available() is not None, reason=str(_model_available()))
def test_a_request_no_tool_fits_gets_an_empty_plan() -> None:
    """The default model prefers some tool for almost any request; how much it prefers one,
    and whether the request gives the values of the call it prefers, tell the requests no tool
    fits apart (the abstain band)."""
    from ember.planner.llama import LlamaPlanner

    planner = LlamaPlanner(prefix_cache=False)
    assert planner.abstain_band is not None
    low, high = planner.abstain_band
    assert _plan(planner, "Play some jazz on the living-room speakers.") == []
    assert planner.last_margin is not None
    assert planner.last_margin < high
    weather = _plan(planner, "What's the weather in Oslo on 2026-03-05?")
    assert [step.tool for step in weather] == ["get_weather"]
    assert planner.last_margin is not None
    assert planner.last_margin >= low


class _CountingLlama:
    """What `LlamaPlanner._prefix_ready` uses of a llama-cpp `Llama`: a token a character, and
    every `eval` recorded as (first position, length): the batches the model would read."""

    def __init__(self) -> None:
        self.input_ids: list[int] = []
        self.n_tokens = 0
        self.batches: list[tuple[int, int]] = []

    def tokenize(self, text: bytes, special: bool = False, add_bos: bool = False) -> list[int]:
        return list(text)

    def eval(self, tokens: list[int]) -> None:
        self.batches.append((self.n_tokens, len(tokens)))
        self.input_ids[self.n_tokens :] = tokens
        self.n_tokens += len(tokens)


def test_a_state_held_inside_a_longer_part_is_read_again_as_its_own(tmp_path: Path) -> None:
    """A catalogue whose prompt is the start of the cached catalogue's is not taken from inside
    that longer part (read in another batch): its tools are read again, whole, after the
    shared start, which is kept."""
    from ember.planner.llama import LlamaPlanner

    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF")
    planner = LlamaPlanner(str(model), prefix_cache=False)
    llm = _CountingLlama()
    head, longer, shorter = "HEAD|", "HEAD|tool_a tool_b", "HEAD|tool_a"
    planner._prefix_ready(llm, [head, longer])
    assert llm.batches == [(0, 5), (5, 13)]
    planner._prefix_ready(llm, [head, shorter])
    assert llm.batches[2:] == [(5, 6)]  # the shared start kept, the tools read anew
    planner._prefix_ready(llm, [head, shorter])
    assert llm.batches[3:] == []  # now a part of its own: kept
