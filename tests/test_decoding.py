"""The driven decoder's rules, each on a fake model: a function from the context to logits.

`WishfulModel` wants to write a given plan text (its "wish") and continues it from wherever the
context so far matches it; the decoder decides what it may actually write. So each test states
what a model would like to plan and asserts what the decoder's rule let through.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ember.plan import Step
from ember.planner import grounding
from ember.planner.compact import (
    clashing_paths,
    coded_paths,
    field_paths,
    render_step,
    value_kind,
)
from ember.planner.decoding import PlanDecoder
from ember.planner.vocabulary import Cursor, Logits, Vocabulary, _common_prefix
from ember.tools.demo import demo_catalog
from ember.tools.descriptor import ToolDescriptor

CATALOGUE = tuple(demo_catalog())
TODAY = date(2026, 3, 2)  # a Monday
PLAN = "\nPLAN:\n"  # ends every prompt; each wish starts after it
# Every byte, so any text can be spelled; and some longer pieces, so choices walk a real trie.
PIECES = [bytes([b]) for b in range(256)] + [
    piece.encode()
    for piece in (
        *(tool.tool_name for tool in CATALOGUE),
        "1. ",
        "2. ",
        "3. ",
        '="',
        '")\n',
        ")\n",
        ", ",
        "done",
        "{$",
        "hotel",
        "_id",
        "Oslo",
        "2026",
        "-03-",
        "example.com",
        '."',
    )
]


class WishfulModel:
    """A `LanguageModel` that prefers, at every point, the longest token continuing its wish.
    Where the decoder made it write something else, it picks the wish up again where the end
    of what was written (three bytes, or a closing quote, bracket, comma or line) comes next."""

    def __init__(self, wish: str) -> None:
        self.vocab = Vocabulary(PIECES)
        self.wish = (PLAN + wish).encode()
        self.context = b""
        self.at = 0  # how far into the wish the context has come
        self.longest = max(map(len, PIECES))
        self.before: list[tuple[bytes, int]] = []  # (context, at) before each token evaluated

    def rewind(self, count: int) -> None:
        for _ in range(count):
            self.context, self.at = self.before.pop()

    def tokenize(self, text: bytes, *, special: bool) -> list[int]:
        tokens, at = [], 0
        while at < len(text):
            size = next(
                n
                for n in range(min(self.longest, len(text) - at), 0, -1)
                if text[at : at + n] in self.vocab.ids
            )
            tokens.append(self.vocab.ids[text[at : at + size]])
            at += size
        return tokens

    def eval(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            self.before.append((self.context, self.at))
            piece = self.vocab.pieces[token]
            self.context += piece
            if self.at == 0:  # still reading the prompt: the wish starts after it
                self.at = len(PLAN) if self.context.endswith(PLAN.encode()) else 0
            elif self.wish.startswith(piece, self.at):
                self.at += len(piece)
            else:
                self._pick_up()

    def _pick_up(self) -> None:
        structural = self.context[-1:] in (b'"', b")", b",", b"]", b"\n")
        for size in range(min(len(self.context), 24), 0 if structural else 2, -1):
            found = self.wish.find(self.context[-size:], self.at)
            if found >= 0:
                self.at = found + size
                return

    def logits(self) -> Logits:
        """Tokens that continue the wish score their length; where that is not allowed, its
        next preference is a token that starts one of the wish's later lines."""
        rest = self.wish[self.at :]
        later = rest.split(b"\n")[1:]
        scores = np.full(len(self.vocab.pieces), -10.0, dtype=np.float32)
        for token, piece in enumerate(self.vocab.pieces):
            if piece and rest.startswith(piece):
                scores[token] = len(piece)
            elif piece and any(line.startswith(piece) for line in later):
                scores[token] = 0.5
        return scores


def plan(
    request: str,
    wish: str,
    *,
    abstain: tuple[float, float] | None = None,
    catalogue: tuple[ToolDescriptor, ...] = CATALOGUE,
    earlier: Sequence[Step] = (),
    prompt_extra: str = "",
    failed: Sequence[Step] = (),
    off: frozenset[str] = frozenset(),
    on_step: Callable[[Step], None] = lambda _: None,
) -> list[Step]:
    """The steps the decoder lets a model that wishes `wish` write for `request` (after
    `earlier` steps, which the wish repeats, in a round of planning on; `failed`: calls that
    failed before it; `off`: rules switched off; `on_step`: gets each step handed on)."""
    model = WishfulModel(wish)
    decoder = PlanDecoder(
        Cursor(model, model.vocab),
        catalogue,
        today=TODAY,
        request=request,
        abstain=abstain,
        off=off,
    )
    so_far = "".join(f"{render_step(step)}\n" for step in earlier)
    prompt = f"Request: {request}\n{prompt_extra}{PLAN}{so_far}"
    return decoder.decode(prompt, on_step=on_step, earlier=earlier, failed=failed)


def test_a_plan_whose_every_value_is_grounded_is_written_as_the_model_prefers() -> None:
    steps = plan(
        "What's the weather in Oslo on 2026-03-05?",
        '1. get_weather(city="Oslo", date="2026-03-05")\ndone',
    )
    assert steps == [Step(1, "get_weather", {"city": "Oslo", "date": "2026-03-05"})]


def test_an_email_address_is_one_the_request_names() -> None:
    steps = plan(
        "Email 'All good' to ann@example.com",
        '1. send_email(to="bob@evil.example", subject="All good", body="All good")\ndone',
    )
    assert [step.args["to"] for step in steps] == ["ann@example.com"]


def test_a_step_that_needs_an_address_nobody_gave_ends_the_plan() -> None:
    steps = plan(
        "Send an email saying hi",
        '1. send_email(to="someone@example.com", subject="Hi", body="hi")\ndone',
    )
    assert steps == []


def test_a_path_is_one_the_request_spells_out() -> None:
    steps = plan("Read /srv/notes/a.txt please", '1. read_file(path="/etc/passwd")\ndone')
    assert [step.args for step in steps] == [{"path": "/srv/notes/a.txt"}]


def test_an_identifier_is_a_code_the_request_gives() -> None:
    steps = plan(
        "Which tier is customer C-20417 on?", '1. lookup_customer(customer_id="C-99999")\ndone'
    )
    assert [step.args for step in steps] == [{"customer_id": "C-20417"}]


def test_a_value_documented_to_come_from_a_tool_waits_for_that_tool() -> None:
    request = "Book the Grand in Paris for 2 nights from 2026-03-05"
    alone = plan(request, '1. book_hotel(hotel_id="grand", check_in="2026-03-05", nights=2)\ndone')
    assert alone  # not offered, rather than begun and abandoned (which ends the plan)
    assert alone[0].tool != "book_hotel"
    steps = plan(
        request,
        '1. search_hotels(city="Paris", check_in="2026-03-05", nights=2)\n'
        "2. book_hotel(hotel_id=$1.hotels.0.price_per_night, check_in=$1.hotels.0.name, "
        "nights=2)\ndone",
    )
    assert [step.tool for step in steps] == ["search_hotels", "book_hotel"]
    # a reference goes only to a field of the source tool that can be the thing asked for
    assert re.fullmatch(r"\$1\.hotels\.\d\.hotel_id", steps[1].args["hotel_id"])


def test_a_currency_code_is_one_that_exists() -> None:
    steps = plan(
        "Convert 100 RMB to euros",
        '1. convert_currency(amount=100, from_currency="RMB", to_currency="EUR")\ndone',
    )
    codes = grounding.standard_codes({"description": "ISO 4217 currency code"})
    assert steps[0].args["from_currency"] in codes
    assert steps[0].args["from_currency"] != "RMB"
    assert steps[0].args["to_currency"] == "EUR"


def test_a_date_is_a_real_calendar_day() -> None:
    steps = plan("Weather in Oslo on the 30th", '1. get_weather(city="Oslo", date="2026-02-30")\n')
    day = steps[0].args["date"]
    assert day in grounding.calendar_dates(TODAY)
    assert day.startswith("2026-0")


def test_an_optional_number_the_request_never_states_is_left_out() -> None:
    steps = plan(
        "Summarize 'The quick brown fox jumps over the lazy dog'",
        '1. summarize_text(text="The quick brown fox jumps over the lazy dog", max_words=50)\ndone',
    )
    assert steps[0].args == {"text": "The quick brown fox jumps over the lazy dog"}
    stated = plan(
        "Summarize 'The quick brown fox' in 5 words",
        '1. summarize_text(text="The quick brown fox", max_words=5)\ndone',
    )
    assert stated[0].args["max_words"] == 5


def test_the_plan_goes_on_while_an_address_the_user_gave_is_unused() -> None:
    steps = plan(
        "Look up customer C-1 and email their tier to a@example.com",
        '1. lookup_customer(customer_id="C-1")\ndone\n'
        '2. send_email(to="a@example.com", subject="Tier", body="Tier: {$1.tier}")\ndone',
    )
    assert [step.tool for step in steps] == ["lookup_customer", "send_email"]
    assert steps[1].args["to"] == "a@example.com"
    assert "{$1.tier}" in steps[1].args["body"]  # an embedded reference the model opened


def test_a_repeated_call_ends_the_plan() -> None:
    call = 'get_weather(city="Oslo", date="2026-03-05")\n'
    steps = plan("Weather in Oslo on 2026-03-05", f"1. {call}2. {call}done")
    assert len(steps) == 1


def test_a_call_made_again_on_its_own_output_ends_the_plan() -> None:
    steps = plan(
        "Summarize /a.txt",
        '1. read_file(path="/a.txt")\n2. summarize_text(text=$1.content)\n'
        "3. summarize_text(text=$2.summary)\ndone",
    )
    assert [step.tool for step in steps] == ["read_file", "summarize_text"]


def test_a_weak_preference_for_any_step_is_an_empty_plan() -> None:
    chat = plan("Tell me a joke", "done", abstain=(0.5, 1.0))
    assert chat == []
    weather = plan(
        "Weather in Oslo on 2026-03-05",
        '1. get_weather(city="Oslo", date="2026-03-05")\ndone',
        abstain=(0.5, 1.0),
    )
    assert [step.tool for step in weather] == ["get_weather"]


def test_in_doubt_a_first_call_is_kept_only_if_the_request_gives_its_values() -> None:
    doubtful = (-50.0, 50.0)  # every first choice is in the band: the values decide
    flight = plan(
        "Book me a flight from Paris to New York on 2026-07-20",
        '1. search_hotels(city="Paris", check_in="2026-07-20", nights=1)\ndone',
        abstain=doubtful,
    )
    assert flight == []  # one night: a number nobody said
    capital = plan(
        "What's the capital of Australia?",
        '1. get_weather(city="Canberra", date="2026-03-02")\ndone',
        abstain=doubtful,
    )
    assert capital == []  # a city the request does not name
    miles = plan(
        "Convert 26 miles into kilometres",
        '1. convert_currency(amount=26, from_currency="MUR", to_currency="EUR")\ndone',
        abstain=doubtful,
    )
    assert miles == []  # currencies the request names neither by code nor by name
    francs = plan(
        "How much is 1,250 Swiss francs in euros?",
        '1. convert_currency(amount=1250, from_currency="CHF", to_currency="EUR")\ndone',
        abstain=doubtful,
    )
    assert [step.tool for step in francs] == ["convert_currency"]
    pizza = plan(
        "Order me a large pepperoni pizza to the office, please.",
        "1. query_sql(sql=\"SELECT * FROM orders WHERE customer_id = 'your_customer_id'\")\n",
        abstain=doubtful,
    )
    assert pizza == []  # nothing in the call comes from the request
    platinum = plan(
        "How many platinum customers do we have?",
        "1. query_sql(sql=\"SELECT COUNT(*) FROM customers WHERE tier = 'platinum'\")\ndone",
        abstain=doubtful,
    )
    assert [step.tool for step in platinum] == ["query_sql"]
    weather = plan(
        "Should I pack an umbrella for Oslo on 2026-03-05?",
        '1. get_weather(city="Oslo", date="2026-03-05")\ndone',
        abstain=doubtful,
    )
    assert [step.tool for step in weather] == ["get_weather"]


def test_in_doubt_a_first_call_is_kept_only_if_the_request_names_its_tool() -> None:
    doubtful = (-50.0, 50.0)  # every first choice is in the band
    # a near miss the values check lets through: the text and the number are the request's
    roots = (
        "Solve 2x + 3 = 0 for x: the numbers are 2 and 3",
        '1. summarize_text(text="2x + 3 = 0", max_words=3)\ndone',
    )
    assert plan(*roots, abstain=doubtful) == []  # "summarize" and "text" are never said
    assert [s.tool for s in plan(*roots, abstain=doubtful, off=frozenset({"names-tool"}))] == [
        "summarize_text"
    ]
    forecast = plan(
        "Friday's forecasts for Madrid, please",
        '1. get_weather(city="Madrid", date="2026-03-06")\ndone',
        abstain=doubtful,
    )
    assert [step.tool for step in forecast] == ["get_weather"]  # a field of its result
    exports = plan(
        "What's sitting in /srv/exports right now?",
        '1. list_files(directory="/srv/exports")\ndone',
        abstain=doubtful,
    )
    assert [step.tool for step in exports] == ["list_files"]  # a path it takes
    confident = plan(*roots, abstain=(-100.0, -50.0))  # above the band: no check
    assert [step.tool for step in confident] == ["summarize_text"]


def test_in_doubt_an_unnamed_first_call_is_kept_if_a_named_step_uses_its_result() -> None:
    """The lookup a request implies without naming it: "customer" is never said, but the
    mail the request asks for goes to the address the lookup finds. Held until then, the
    lookup is handed on (to the executor) with the mail; alone, it is dropped as before,
    never handed on; with the rule off, too."""
    doubtful = (-50.0, 50.0)  # every first choice is in the band
    request = "Email C-20417 that their order has shipped"
    lookup = '1. lookup_customer(customer_id="C-20417")\n'
    mail = '2. send_email(to=$1.email, subject="Shipped", body="Your order has shipped.")\n'
    handed: list[str] = []
    steps = plan(
        request, f"{lookup}{mail}done", abstain=doubtful, on_step=lambda s: handed.append(s.tool)
    )
    assert handed == ["lookup_customer", "send_email"]
    assert [(s.tool, s.args.get("to")) for s in steps] == [
        ("lookup_customer", None),
        ("send_email", "$1.email"),
    ]
    handed.clear()  # held, the lookup is handed to no one: it never runs
    assert (
        plan(request, f"{lookup}done", abstain=doubtful, on_step=lambda s: handed.append(s.tool))
        == []
    )
    assert handed == []
    off = plan(request, f"{lookup}{mail}done", abstain=doubtful, off=frozenset({"feeds-named"}))
    assert off == []
    # only the next step may use it: a lookup held while the model writes on is not judged
    # at the end of a plan no tool fits, after every pass it cost
    later = "Email C-20417 that their order has shipped and put it in my calendar on 2026-03-05"
    event = '2. create_calendar_event(title="Shipped", date="2026-03-05")\n'
    wish = f"{lookup}{event}{mail.replace('2.', '3.')}done"
    assert plan(later, wish, abstain=doubtful) == []
    assert len(plan(later, wish, abstain=doubtful, off=frozenset({"names-tool"}))) == 3


def test_a_held_first_call_the_next_named_step_does_not_use_is_dropped_not_the_plan() -> None:
    """The customer looked up in doubt ("customer" is never said), then the calendar entry the
    request asks for, which uses nothing of it: the plan begins again without the lookup and
    keeps the entry. Before (and with the rule off) the whole plan was dropped. A next step
    that only looks something up, or whose action the request does not say, is no such
    request: the plan stays empty (a request no tool fits read as a search by its values)."""
    doubtful = (-50.0, 50.0)  # every first choice is in the band
    request = "Create a calendar entry 'Dentist' on 2026-03-05, ref C-20417"
    event = 'create_calendar_event(title="Dentist", date="2026-03-05")\n'
    wish = f'1. lookup_customer(customer_id="C-20417")\n2. {event}{event}done'
    handed: list[str] = []
    steps = plan(request, wish, abstain=doubtful, on_step=lambda s: handed.append(s.tool))
    assert steps == [Step(1, "create_calendar_event", {"title": "Dentist", "date": "2026-03-05"})]
    assert handed == ["create_calendar_event"]  # the lookup given up was never handed on
    assert plan(request, wish, abstain=doubtful, off=frozenset({"held-replaced"})) == []
    unsaid = "Put 'Dentist' in my calendar on 2026-03-05, ref C-20417"  # "create" never said
    assert plan(unsaid, wish, abstain=doubtful) == []
    weather = 'get_weather(city="Oslo", date="2026-03-05")\n'
    lookups = f'1. lookup_customer(customer_id="C-20417")\n2. {weather}{weather}done'
    asked = "What's the weather in Oslo on 2026-03-05 for C-20417?"
    assert plan(asked, lookups, abstain=doubtful) == []  # a lookup replaces no lookup


def test_a_tool_is_named_by_its_name_its_result_or_a_value_only_some_tools_take() -> None:
    weather = next(tool for tool in CATALOGUE if tool.tool_name == "get_weather")
    hotels = next(tool for tool in CATALOGUE if tool.tool_name == "search_hotels")
    call = Step(id=1, tool="get_weather", args={"city": "Oslo", "date": "2026-03-05"})
    named = functools.partial(grounding.names_tool, call, weather, days=["2026-03-05"])
    assert named("Weather in Oslo, please")
    assert named("any forecasting for Oslo?")  # the result's `forecast`, another form
    assert named("how warm will Oslo be on March 5?")  # a date it names
    assert not grounding.names_tool(call, weather, "how warm is Oslo?", days=[])
    quoted = "Tell me about the city of 'weather' in Oslo"
    assert not grounding.names_tool(call, weather, quoted, days=[])  # quotes are not read
    assert named("天气怎么样")  # Chinese: not judged
    search = Step(id=1, tool="search_hotels", args={"city": "Oslo", "check_in": "2026-03-05"})
    assert grounding.names_tool(search, hotels, "two hotels in Oslo", days=[])
    assert not grounding.names_tool(search, hotels, "search Oslo for me", days=[])  # any verb
    written = grounding.Grounds(CATALOGUE, "Block out March 3, 2027 and next Friday", TODAY)
    assert written.stated_days == ["2027-03-03", "2026-03-13"]  # written in full, and relative
    assert written.named_dates == ["2026-03-13"]  # a date written in full is left as written
    summarize = next(tool for tool in CATALOGUE if tool.tool_name == "summarize_text")
    passage = "the venue moved to Porto and the dates stay the same"
    shorten = Step(id=1, tool="summarize_text", args={"text": passage, "max_words": 10})
    asked = f'Shorten this for the chat: "{passage}"'
    assert grounding.names_tool(shorten, summarize, asked, days=[])  # a passage it quotes
    equation = Step(id=1, tool="summarize_text", args={"text": "y = 3x + 2", "max_words": 3})
    assert not grounding.names_tool(equation, summarize, "slope of y = 3x + 2?", days=[])
    metric = ToolDescriptor(
        tool_name="query_metric",
        parameters={
            "type": "object",
            "properties": {"metric": {"type": "string", "enum": ["latency_p95_ms", "cpu_percent"]}},
        },
    )
    latency = Step(id=1, tool="query_metric", args={"metric": "latency_p95_ms"})
    assert grounding.names_tool(latency, metric, "p95 latency on checkout-web?", days=[])
    assert not grounding.names_tool(latency, metric, "is checkout-web slow?", days=[])
    files = next(tool for tool in CATALOGUE if tool.tool_name == "list_files")
    exports = Step(id=1, tool="list_files", args={"directory": "/srv/exports"})
    assert grounding.names_tool(exports, files, "What's in /srv/exports?", days=[])  # a path
    code = Step(id=1, tool="list_files", args={"directory": "C-20417"})
    assert not grounding.names_tool(code, files, "Email C-20417 about it", days=[])  # no path


def test_dates_are_chosen_among_real_days_around_today() -> None:
    days = grounding.calendar_dates(date(2026, 3, 2))
    assert (days[0], days[-1]) == ("2024-01-01", "2029-12-31")
    assert "2028-02-29" in days
    assert "2026-02-29" not in days
    assert "2026-02-30" not in days


def test_common_prefixes_end_on_whole_characters() -> None:
    assert _common_prefix([b"1. get_weather(", b"1. get_time("]) == b"1. get_"
    assert _common_prefix(["é1".encode(), "é2".encode()]) == "é".encode()
    assert _common_prefix(["é".encode(), "ê".encode()]) == b""  # same first byte, not same char
    assert _common_prefix([b"done", b"1. x("]) == b""


def test_a_saved_vocabulary_loads_back_and_a_broken_file_is_rebuilt(tmp_path: Path) -> None:
    vocab = Vocabulary([b"", b'"', b"2026", b"-", b"EUR", b" {$", b"Paris", b'",'])
    path = tmp_path / "vocab" / "v.npz"
    vocab.save(path)
    loaded = Vocabulary.load(path)
    assert loaded is not None
    assert loaded.pieces == vocab.pieces
    assert {k: v.tolist() for k, v in loaded.masks.items()} == {
        k: v.tolist() for k, v in vocab.masks.items()
    }
    assert loaded.masks["opener"].tolist() == [False] * 5 + [True, False, False]
    assert loaded.starting_with(b'"') == [1, 7]
    path.write_bytes(path.read_bytes()[:100])  # torn write: load says so, the caller rebuilds
    assert Vocabulary.load(path) is None


def test_grounded_values_come_from_the_request_or_a_result_of_the_same_format() -> None:
    tools = {tool.tool_name: tool for tool in CATALOGUE}
    email = {"type": "string", "format": "email"}
    assert field_paths(tools["lookup_customer"].returns, email) == [".email"]
    assert ".check_in" in field_paths(
        tools["book_hotel"].returns, {"type": "string", "format": "date"}
    )
    assert ".hotel_name" not in field_paths(
        tools["book_hotel"].returns, {"format": "date", "type": "string"}
    )
    # a field whose pattern starts with another literal is another kind of code: an
    # appointment id is no phone number; a field with no pattern, or one a class starts, may be
    found = {
        "type": "object",
        "properties": {
            "appointment_id": {"type": "string", "pattern": "^A[0-9]{7}$"},
            "phone": {"type": "string", "pattern": r"^\+[1-9][0-9]{7,14}$"},
            "day": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
            "note": {"type": "string"},
        },
    }
    phone = {"type": "string", "pattern": r"^\+[1-9][0-9]{6,14}$"}
    assert clashing_paths(found, phone) == {".appointment_id"}
    assert coded_paths(found, phone) == [".phone"]
    assert clashing_paths(found, {"type": "string"}) == set()
    # a class, an escape class ("\d") or an optional first letter starts with no literal
    for pattern in (r"^\d{6}$", "^A?[0-9]{6}$", "^[0-9]{6}$"):
        assert coded_paths(found, {"type": "string", "pattern": pattern}) == []
    # codes of two kinds may start with the same letter: all of the literal start tells them
    # apart (a tenant's id is no tenancy's), where one begins the other they may be one kind
    tenant = {
        "type": "object",
        "properties": {
            "tenant_id": {"type": "string", "pattern": "^TN[0-9]{6}$"},
            "tenancy_ref": {"type": "string", "pattern": "^TCY-[0-9]{6}$"},
            "quote": {"type": "string", "pattern": "^QT-2026-[0-9]{4}$"},
        },
    }
    tenancy = {"type": "string", "pattern": "^TCY-[0-9]{6}$"}
    assert coded_paths(tenant, tenancy) == [".tenancy_ref"]
    assert clashing_paths(tenant, tenancy) == {".tenant_id", ".quote"}
    assert coded_paths(tenant, {"type": "string", "pattern": "^QT-[0-9]{4}-[0-9]{4}$"}) == [
        ".quote"
    ]
    # rule `code-prefix` off: the first letter alone, as before
    assert coded_paths(tenant, tenancy, whole=False) == [".tenant_id", ".tenancy_ref"]
    assert clashing_paths(tenant, tenancy, whole=False) == {".quote"}
    link = {"type": "string", "pattern": "^https?://"}
    page = {"type": "object", "properties": {"url": {"type": "string", "pattern": "^http://x"}}}
    assert coded_paths(page, link) == [".url"]
    request = "Email anna.berg@example.com. Then 发邮件给 wang.fang@example.cn。"
    assert grounding.EMAIL.findall(request) == ["anna.berg@example.com", "wang.fang@example.cn"]


def test_what_a_request_gives_is_found_and_measures_are_not_codes() -> None:
    request = (
        "Look up customer C-20417 and put a 30-minute call at 15:00 on 2026-03-02 titled "
        "'Renewal', then email 3,200 NOK at 12.5 % to a.b@example.com and save it to "
        "/data/out/c.txt. It's the users' call."
    )
    assert grounding.givens(request) == [
        ("Renewal",),
        ("a.b@example.com",),
        ("/data/out/c.txt",),
        ("C-20417",),
        ("30",),
        ("3200",),
        ("12.5",),
    ]
    assert grounding.givens("生成一份标题为「2026年制度摘要」的报告") == [("2026年制度摘要",)]
    # numbers in words or with a unit, in each form a plan may use them; none inside quotes
    spoken = "Block two hours for 'three tasks', then three hundred and fifty USD, the two cities"
    assert grounding.givens(spoken) == [("three tasks",), ("2", "120"), ("350",)]
    assert grounding.stated_numbers(spoken) == {2, 120, 350}


def test_a_call_made_again_on_its_own_output_is_recognised() -> None:
    read = Step(1, "read_file", {"path": "/a.txt"})
    summary = Step(2, "summarize_text", {"text": "$1.content", "max_words": 50})
    again = Step(3, "summarize_text", {"text": "$2.summary", "max_words": 50})
    shorter = Step(3, "summarize_text", {"text": "$2.summary", "max_words": 10})
    converted = Step(
        1, "convert_currency", {"amount": 200, "from_currency": "GBP", "to_currency": "EUR"}
    )
    onward = Step(
        2, "convert_currency", {"amount": "$1.amount", "from_currency": "EUR", "to_currency": "USD"}
    )
    assert grounding.reapplies(again, [read, summary])
    assert not grounding.reapplies(shorter, [read, summary])
    assert not grounding.reapplies(summary, [read])
    assert not grounding.reapplies(onward, [converted])
    wrote = Step(3, "write_file", {"path": "/out/s.txt", "content": "$2.summary"})
    over = Step(4, "write_file", {"path": "$3.path", "content": "$3.path"})
    assert grounding.reapplies(over, [read, summary, wrote])  # nothing but its own output
    page = Step(1, "search", {"query": "bug", "cursor": ""})
    onward = Step(2, "search", {"query": "$1.query", "cursor": "$1.next_cursor"})
    assert not grounding.reapplies(onward, [page])  # the next page: a field of its output


def test_sources_and_standard_codes_are_read_from_the_catalogue() -> None:
    tools = {tool.tool_name: tool for tool in CATALOGUE}
    hotel_id = tools["book_hotel"].parameters["properties"]["hotel_id"]
    assert grounding.source_of(hotel_id, tools, "book_hotel") == "search_hotels"
    assert grounding.source_of({"description": "Customer id."}, tools, "lookup_customer") is None
    currency = tools["convert_currency"].parameters["properties"]["to_currency"]
    codes = grounding.standard_codes(currency)
    assert {"CNY", "NOK", "USD"} <= set(codes)
    assert "RMB" not in codes
    assert grounding.standard_codes({"description": "IATA airport code."}) == []


def test_the_fake_model_spells_any_text() -> None:
    model = WishfulModel("x")
    text = "Weather in 北京\non 2026-03-05".encode()
    assert b"".join(model.vocab.pieces[t] for t in model.tokenize(text, special=False)) == text


def test_a_number_in_words_or_with_a_unit_may_be_used_in_any_of_its_forms() -> None:
    request = "Block out two hours on 2026-03-05 for 'Tax review'"
    steps = plan(
        request,
        '1. create_calendar_event(title="Tax review", date="2026-03-05", duration_minutes=120)\n'
        "done",
    )
    assert steps[0].args["duration_minutes"] == 120  # stated, as two hours: kept
    assert len(steps) == 1  # and "two" counts as used: the plan may end


def test_a_plan_made_to_go_on_stops_after_two_steps_that_use_nothing_given() -> None:
    # 7731 is given and a tool could take a number, but the model wants to stop after each
    # step, and none of the steps it writes instead uses it
    weather = 'get_weather(city="{}", date="2026-03-05")\ndone\n'
    wish = '1. lookup_customer(customer_id="C-1")\ndone\n' + "".join(
        f"{n}. " + weather.format(city) for n, city in enumerate(["Oslo", "Rome", "Lima"], 2)
    )
    # (`detours` off: each weather lookup nobody asked for, using nothing given, would be
    # chosen again; the bound is what is measured here)
    steps = plan("Look up customer C-1, my PIN is 7731", wish, off=frozenset({"detours"}))
    assert [step.args.get("city") for step in steps] == [None, "Oslo", "Rome"]


def test_an_optional_address_nobody_gave_is_left_out() -> None:
    steps = plan(
        "Which tier is customer C-20417 on?",
        '1. lookup_customer(customer_id="C-20417", email="c20417@example.com")\ndone',
    )
    assert steps == [Step(1, "lookup_customer", {"customer_id": "C-20417"})]


def test_an_identifier_may_be_the_text_an_earlier_result_holds() -> None:
    steps = plan(
        "The file /srv/ticket.txt holds nothing but a customer id. Look that customer up.",
        '1. read_file(path="/srv/ticket.txt")\n2. lookup_customer(customer_id=$1.content)\ndone',
    )
    assert [step.args for step in steps] == [
        {"path": "/srv/ticket.txt"},
        {"customer_id": "$1.content"},
    ]


def test_a_folder_the_request_gave_is_not_read_as_a_file_once_its_files_are_listed() -> None:
    steps = plan(
        "There are 2 files in /home/ravi/minutes: read the first",
        '1. list_files(directory="/home/ravi/minutes")\n2. read_file(path="/home/ravi/minutes")\n'
        "done",
    )
    assert steps[0].args == {"directory": "/home/ravi/minutes"}
    assert steps[1].args["path"].startswith("$1.files.")  # not the folder again


def test_a_text_takes_a_whole_result_but_only_embeds_one_item_of_a_list() -> None:
    steps = plan(
        "Save the paid orders to /reports/paid.txt",
        "1. query_sql(sql=\"SELECT * FROM orders WHERE status = 'paid'\")\n"
        '2. write_file(path="/reports/paid.txt", content=$1.columns.0)\ndone',
    )
    assert steps[1].args["content"] != "$1.columns.0"


def test_a_text_may_end_with_a_token_that_also_closes_its_quote() -> None:
    """`up."` is one token to the model: refused as text, the text ran on (`up. after 2`)."""

    pieces = [b"", b"Hi", b" there", b'."', b" after", b".", b'"']
    ranks = {b'."': 10.0, b" after": 9.0, b".": 1.0}

    class Preferring:
        def __init__(self) -> None:
            self.text = b""

        def tokenize(self, text: bytes, *, special: bool) -> list[int]:
            return [pieces.index(piece) for piece in (b"Hi", b" there") if piece in text][:1]

        def eval(self, tokens: Sequence[int]) -> None:
            self.text += b"".join(pieces[t] for t in tokens)

        def logits(self) -> Logits:
            wanted = b" there" if self.text == b"Hi" else None
            return np.array(
                [20.0 if p == wanted else ranks.get(p, -10.0) for p in pieces], dtype=np.float32
            )

    cursor = Cursor(Preferring(), Vocabulary(pieces))
    cursor.tokens.append(pieces.index(b"Hi"))
    text, _ = cursor.sample("text", b'"', 10)
    assert text == " there."
    assert cursor.text == b"."  # held back, to be read again with the closing quote


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> ToolDescriptor:
    return ToolDescriptor.from_json(
        {
            "tool_name": name,
            "description": f"{name} (a tool of another catalogue)",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
            "execution_mode": "sync",
            "returns": {
                "type": "object",
                "properties": {
                    "prs": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"pr_number": {"type": "integer"}},
                        },
                    },
                    "title": {"type": "string"},
                },
            },
        }
    )


OPS = (
    _tool(
        "post_message",
        {
            "channel": {"type": "string", "pattern": "^#[a-z0-9][a-z0-9_-]*$"},
            "text": {"type": "string"},
        },
        ["channel", "text"],
    ),
    _tool(
        "get_on_call",
        {
            "team": {"type": "string"},
            "rotation": {"type": "string", "enum": ["primary", "secondary"]},
        },
        ["team"],
    ),
    _tool(
        "list_prs",
        {"repo": {"type": "string"}, "state": {"type": "string", "enum": ["open", "merged"]}},
        ["repo", "state"],
    ),
    _tool(
        "get_pr",
        {
            "repo": {"type": "string"},
            "pr_number": {"type": "integer", "description": "A pr_number from list_prs results."},
        },
        ["repo", "pr_number"],
    ),
)


def test_an_optional_choice_the_request_never_states_is_left_out() -> None:
    asked = plan(
        "who is on the secondary rotation for payments",
        '1. get_on_call(team="payments", rotation="secondary")\ndone',
        catalogue=OPS,
    )
    assert asked[0].args == {"team": "payments", "rotation": "secondary"}
    habit = plan(
        "who is on call for payments",
        '1. get_on_call(team="payments", rotation="primary")\ndone',
        catalogue=OPS,
    )
    assert habit[0].args == {"team": "payments"}


SEARCH = _tool(
    "search_files",
    {
        "directory": {"type": "string"},
        "text": {"type": "string"},
        "pattern": {"type": "string", "description": 'Only names matching this glob, e.g. "*.md".'},
        "note": {"type": "string"},
    },
    ["directory", "text"],
)


def test_an_optional_short_text_the_request_never_says_is_left_out() -> None:
    wish = '1. search_files(directory="/srv/data", text="ACME", pattern=".*")\ndone'
    habit = plan("Search /srv/data for files that mention ACME", wish, catalogue=(SEARCH,))
    assert habit[0].args == {"directory": "/srv/data", "text": "ACME"}
    glob = '1. search_files(directory="/srv/data", text="ACME", pattern="*.pdf")\ndone'
    asked = plan("Search the PDF files in /srv/data for ACME", glob, catalogue=(SEARCH,))
    assert asked[0].args["pattern"] == "*.pdf"  # each of its words is the request's
    off = plan(
        "Search /srv/data for ACME", wish, catalogue=(SEARCH,), off=frozenset({"optional-text"})
    )
    assert off[0].args["pattern"] == ".*"


def test_an_optional_text_the_model_composed_is_kept_only_where_the_request_asks_for_it() -> None:
    """A longer optional text is the model's to compose where the request asks for one (it
    says the parameter's name, or quotes the passage); else it is the model's habit (a reason
    nobody gave) and is left out. With the rule off, kept."""
    long = '1. search_files(directory="/srv/data", text="ACME", note="asked by the finance team")\n'
    unasked = plan("Search /srv/data for ACME", long, catalogue=(SEARCH,))
    assert "note" not in unasked[0].args
    off = frozenset({"unasked-text"})
    kept = plan("Search /srv/data for ACME", long, catalogue=(SEARCH,), off=off)
    assert kept[0].args["note"] == "asked by the finance team"
    for request in (
        "Search /srv/data for ACME, with a note that finance asked",
        "Search /srv/data for ACME: 'asked by the finance team'",
    ):
        asked = plan(request, long, catalogue=(SEARCH,))
        assert asked[0].args["note"] == "asked by the finance team"


LISBON = '1. search_hotels(city="Lisbon", check_in="2026-03-10", nights=2)\n'
BOOK = '2. book_hotel(hotel_id=$1.hotels.0.hotel_id, check_in="2026-03-10", nights=2)\ndone'


def test_a_question_gets_no_step_that_acts_unless_it_names_the_action() -> None:
    question = "What is the cheapest hotel in Lisbon for 2 nights from 2026-03-10?"
    asked = plan(question, LISBON + BOOK)
    assert "book_hotel" not in [step.tool for step in asked]  # to know is not to book
    assert asked[0].tool == "search_hotels"
    named = "What is the cheapest hotel in Lisbon for 2 nights from 2026-03-10? Book it."
    assert [step.tool for step in plan(named, LISBON + BOOK)] == ["search_hotels", "book_hotel"]
    action = "Can you book the cheapest hotel in Lisbon for 2 nights from 2026-03-10?"
    assert [step.tool for step in plan(action, LISBON + BOOK)] == ["search_hotels", "book_hotel"]
    off = plan(question, LISBON + BOOK, off=frozenset({"questions-read"}))
    assert [step.tool for step in off] == ["search_hotels", "book_hotel"]


def test_a_tool_that_does_not_say_whether_it_acts_is_read_by_its_name() -> None:
    # the demo tools as a catalogue in JSON has them: no `read_only`, as no MCP hint
    unsaid = tuple(msgspec.structs.replace(tool, read_only=None) for tool in CATALOGUE)
    question = "What is the cheapest hotel in Lisbon for 2 nights from 2026-03-10?"
    asked = plan(question, LISBON + BOOK, catalogue=unsaid)
    assert asked[0].tool == "search_hotels"
    assert "book_hotel" not in [step.tool for step in asked]  # to know is not to book
    off = plan(question, LISBON + BOOK, catalogue=unsaid, off=frozenset({"acts-by-name"}))
    assert [step.tool for step in off] == ["search_hotels", "book_hotel"]


def _coded_tool(name: str, takes: dict[str, Any], gives: dict[str, Any]) -> ToolDescriptor:
    return ToolDescriptor.from_json(
        {
            "tool_name": name,
            "description": f"{name}.",
            "parameters": {"type": "object", "properties": takes, "required": list(takes)},
            "returns": {"type": "object", "properties": gives},
        }
    )


def test_a_code_no_word_of_the_request_is_comes_from_a_result_of_its_kind() -> None:
    tenancy = {"type": "string", "pattern": "^TCY-[0-9]{6}$"}
    lettings = (
        _coded_tool(
            "get_tenancy",
            {"property_ref": {"type": "string", "pattern": "^PRP-[0-9]{5}$"}},
            {"tenancy_ref": tenancy, "address": {"type": "string"}},
        ),
        _coded_tool("get_rent_ledger", {"tenancy_ref": tenancy}, {"balance": {"type": "number"}}),
    )
    request = "What does the tenant at PRP-15508 owe? Pull up the tenancy and its rent ledger."
    wish = (
        '1. get_tenancy(property_ref="PRP-15508")\n'
        '2. get_rent_ledger(tenancy_ref="PRP-15508")\ndone'  # the property's code, refused
    )
    steps = plan(request, wish, catalogue=lettings)
    assert [step.args for step in steps] == [
        {"property_ref": "PRP-15508"},
        {"tenancy_ref": "$1.tenancy_ref"},
    ]
    off = plan(request, wish, catalogue=lettings, off=frozenset({"result-codes"}))
    assert [step.tool for step in off] == ["get_tenancy"]  # a value its tool would refuse
    # a code the request gives is the request's to give
    given = "Pull up the rent ledger of TCY-002291 and the tenancy at PRP-15508."
    wish = (
        '1. get_tenancy(property_ref="PRP-15508")\n'
        '2. get_rent_ledger(tenancy_ref="TCY-002291")\ndone'
    )
    assert plan(given, wish, catalogue=lettings)[1].args == {"tenancy_ref": "TCY-002291"}
    # an optional code stays the model's to give or not: no filter by the first one's phone
    phone = {"type": "string", "pattern": r"^\+[1-9][0-9]{7,14}$"}
    customers = {"type": "array", "items": {"type": "object", "properties": {"phone": phone}}}
    find = ToolDescriptor.from_json(
        {
            "tool_name": "find_customer",
            "description": "Customers by name.",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "phone": phone},
                "required": ["name"],
            },
            "returns": {"type": "object", "properties": {"customers": customers}},
        }
    )
    wish = (
        '1. find_customer(name="Ahmed Karimi")\n2. find_customer(name="Jo Pike", phone="+44")\ndone'
    )
    steps = plan("phone numbers for Ahmed Karimi and Jo Pike", wish, catalogue=(find,))
    assert steps[1].args == {"name": "Jo Pike"}


def test_a_tool_that_needs_a_code_nobody_holds_is_not_offered() -> None:
    tenancy = {"type": "string", "pattern": "^TCY-[0-9]{6}$"}
    found = {"type": "object", "properties": {"tenancy_ref": tenancy}}
    lettings = (
        _coded_tool(
            "search_properties",
            {"address": {"type": "string"}},
            {"properties": {"type": "array", "items": found}},
        ),
        _coded_tool("get_deposit", {"tenancy_ref": tenancy}, {"amount": {"type": "number"}}),
    )
    request = "How much deposit are we holding for 27 Redland Grove?"
    wish = (
        '1. get_deposit(tenancy_ref="TCY-000001")\n'  # a code made up
        '1. search_properties(address="27 Redland Grove")\n'
        "2. get_deposit(tenancy_ref=$1.properties.0.tenancy_ref)\ndone"
    )
    steps = plan(request, wish, catalogue=lettings)
    assert [step.tool for step in steps] == ["search_properties", "get_deposit"]
    assert steps[1].args == {"tenancy_ref": "$1.properties.0.tenancy_ref"}
    off = plan(request, wish, catalogue=lettings, off=frozenset({"code-sources"}))
    assert off[0].args == {"tenancy_ref": "TCY-000001"}  # a code made up to fit the pattern


def test_a_lookup_nobody_asked_for_that_uses_nothing_given_is_a_detour() -> None:
    tenancy = {"type": "string", "pattern": "^TCY-[0-9]{6}$"}
    # (the fake model's next choice among tools it does not wish for is the first by name)
    lettings = (
        _coded_tool(
            "issue_notice",
            {"tenancy_ref": tenancy, "new_rent": {"type": "integer"}},
            {"notice_id": {"type": "string"}},
        ),
        _coded_tool(
            "lookup_tenancy",
            {"property_ref": {"type": "string", "pattern": "^PRP-[0-9]{5}$"}},
            {"tenancy_ref": tenancy},
        ),
        _coded_tool("get_deposit", {"tenancy_ref": tenancy}, {"amount": {"type": "number"}}),
    )
    request = "Pull up the tenancy at PRP-15508 and serve a notice taking the rent to 1395"
    wish = (
        '1. lookup_tenancy(property_ref="PRP-15508")\n'
        "2. get_deposit(tenancy_ref=$1.tenancy_ref)\n"  # 1395 still unused
        "2. issue_notice(tenancy_ref=$1.tenancy_ref, new_rent=1395)\ndone"
    )
    steps = plan(request, wish, catalogue=lettings)
    assert [step.tool for step in steps] == ["lookup_tenancy", "issue_notice"]
    off = plan(request, wish, catalogue=lettings, off=frozenset({"detours"}))
    assert [step.tool for step in off][:2] == ["lookup_tenancy", "get_deposit"]


def test_an_address_comes_from_a_result_nothing_uses_yet() -> None:
    email = {"type": "string", "format": "email"}
    landlord = {"type": "string", "pattern": "^LL[0-9]{5}$"}
    lettings = (
        _coded_tool(
            "get_tenancy",
            {"property_ref": {"type": "string", "pattern": "^PRP-[0-9]{5}$"}},
            {"tenant_email": email, "landlord_id": landlord},
        ),
        _coded_tool("get_landlord", {"landlord_id": landlord}, {"email": email}),
        _coded_tool("send_email", {"to": email, "body": {"type": "string"}}, {}),
    )
    request = "Drop the landlord at PRP-20417 an email that the boiler is fixed"
    wish = (
        '1. get_tenancy(property_ref="PRP-20417")\n'
        "2. get_landlord(landlord_id=$1.landlord_id)\n"
        '3. send_email(to=$1.tenant_email, body="The boiler is fixed.")\ndone'
    )
    steps = plan(request, wish, catalogue=lettings)
    assert steps[2].args["to"] == "$2.email"  # the landlord just looked up
    off = plan(request, wish, catalogue=lettings, off=frozenset({"fresh-addresses"}))
    assert off[2].args["to"] == "$1.tenant_email"


def test_a_request_that_declines_an_action_gets_no_step_that_takes_it() -> None:
    declined = "Find hotels in Lisbon for 2 nights from 2026-03-10, but don't book anything."
    kept = plan(declined, LISBON + BOOK)
    assert kept[0].tool == "search_hotels"
    assert "book_hotel" not in [step.tool for step in kept]  # to find is not to book
    off = plan(declined, LISBON + BOOK, off=frozenset({"declined"}))
    assert [step.tool for step in off] == ["search_hotels", "book_hotel"]


def test_a_recipients_address_is_no_key_to_look_a_record_up_by() -> None:
    request = "Extract the invoice at /data/in/inv-1.pdf and email the vendor to ap@example.com"
    wish = (
        '1. extract_invoice(path="/data/in/inv-1.pdf")\n'
        '2. lookup_customer(email="ap@example.com")\n'
        '3. send_email(to="ap@example.com", subject="Vendor", body="{$1.vendor}")\ndone'
    )
    steps = plan(request, wish)
    assert steps[0].tool == "extract_invoice"
    assert "lookup_customer" not in [step.tool for step in steps]
    off = plan(request, wish, off=frozenset({"recipients"}))
    assert [step.tool for step in off] == ["extract_invoice", "lookup_customer", "send_email"]
    sent = Step(3, "send_email", {"to": "ap@example.com", "subject": "V", "body": "{$1.vendor}"})
    held = grounding.Grounds(CATALOGUE, request, TODAY)
    assert held.repair(sent, steps[:1]) == sent  # a tool that sends takes the recipient
    looked_up = Step(2, "lookup_customer", {"email": "ap@example.com"})
    assert held.repair(looked_up, steps[:1]) is None  # one that only reads does not
    assert grounding.recipients("Email it to me at jo@example.se, cc ann@example.com") == {
        "jo@example.se",
        "ann@example.com",
    }
    assert grounding.recipients("Look up maria@example.com's tier") == set()


def test_the_step_over_a_list_hint_copied_into_a_text_is_left_out() -> None:
    request = "Look up customers C-2201 and C-2202 and email both names to team@example.com"
    wish = (
        '1. lookup_customer(customer_id="C-2201")\n2. lookup_customer(customer_id="C-2202")\n'
        '3. send_email(to="team@example.com", subject="Names", body="{$1.name} and {$2.name}.'
        ' for each item in 1.list: read_file(path={$1.name})")\ndone'
    )
    body = plan(request, wish)[2].args["body"]
    assert body == "{$1.name} and {$2.name}."


def test_a_numeric_id_the_user_gives_is_taken_as_a_number() -> None:
    steps = plan(
        "Show me PR 388 in payments-api",
        '1. get_pr(repo="payments-api", pr_number=388)\n',
        catalogue=OPS,
    )
    assert steps[0].args == {"repo": "payments-api", "pr_number": 388}


def test_a_value_a_selective_pattern_constrains_is_a_span_of_the_request() -> None:
    steps = plan(
        "Tell #deploys we are done",
        '1. post_message(channel="#deploy", text="We are done")\ndone',
        catalogue=OPS,
    )
    assert steps[0].args["channel"] == "#deploys"


def test_a_number_given_counts_as_used_by_its_value() -> None:
    steps = plan(
        "Weather in Oslo on March 8, please",
        '1. get_weather(city="Oslo", date="2026-03-08")\ndone',
    )
    assert len(steps) == 1  # "8" is held by 2026-03-08


def test_a_text_that_has_copied_a_quoted_sentence_whole_ends_there() -> None:
    """The model ran on past the quote's end into plan syntax (`... 09:00. after 1`)."""
    request = 'Email ann@example.com, subject "Freeze", body "No deploys until Monday 09:00."'
    wish = (
        '1. send_email(to="ann@example.com", subject="Freeze", '
        'body="No deploys until Monday 09:00. after 1")\ndone'
    )
    assert plan(request, wish)[0].args["body"] == "No deploys until Monday 09:00."
    ran_on = plan(request, wish, off=frozenset({"quote-ends"}))[0].args["body"]
    assert ran_on == "No deploys until Monday 09:00. after 1"
    # a quote that is no whole sentence may begin a longer text: "Freeze" is not cut
    longer = plan(request, wish.replace('subject="Freeze"', 'subject="Freeze ahead"'))
    assert longer[0].args["subject"] == "Freeze ahead"


def test_a_quoted_text_counts_as_used_without_its_full_stop() -> None:
    request = "Write 'Demo project. Keep it.' to /projects/demo/README.txt"
    steps = plan(
        request,
        '1. write_file(path="/projects/demo/README.txt", content="Demo project. Keep it")\ndone',
    )
    assert len(steps) == 1  # the text is used, so the plan may end: no step pushed after it
    assert grounding.givens(request)[0] == ("Demo project. Keep it.", "Demo project. Keep it")


def test_a_tool_that_needs_one_of_its_optional_values_waits_for_one() -> None:
    # lookup_customer takes an id or an address (minProperties 1): the request gives neither
    assert plan("Look up the customer please", "1. lookup_customer(email=$1.email)\ndone") == []
    steps = plan(
        "Weather in Oslo on 2026-03-05, and look up the customer",
        '1. get_weather(city="Oslo", date="2026-03-05")\n2. lookup_customer(email=$1.email)\n',
    )
    assert steps[0].tool == "get_weather"
    assert all(step.args.get("customer_id") != "$1.vendor" for step in steps)


def test_a_date_is_one_the_request_names_when_it_names_any() -> None:
    steps = plan("Weather in Oslo tomorrow?", '1. get_weather(city="Oslo", date="2026-03-05")\n')
    assert steps[0].args["date"] == "2026-03-03"  # tomorrow, on 2026-03-02
    assert grounding.named_dates("From March 18 to 2026-03-20, or tomorrow", TODAY) == [
        "2026-03-18",
        "2026-03-20",
        "2026-03-03",
    ]


def test_after_each_step_the_wish_to_go_on_over_done_is_measured() -> None:
    model = WishfulModel('1. get_weather(city="Oslo", date="2026-03-05")\ndone')
    decoder = PlanDecoder(
        Cursor(model, model.vocab), CATALOGUE, today=TODAY, request="Oslo 2026-03-05"
    )
    decoder.decode(f"Request: Oslo{PLAN}", on_step=lambda _: None)
    assert len(decoder.end_margins) == 1
    assert decoder.end_margins[0] < 0  # it wanted `done`


def test_a_field_of_a_richer_result_is_not_taken_for_an_id() -> None:
    steps = plan(
        "Extract /inbox/inv-7.pdf and email the vendor to ap@example.com",
        '1. extract_invoice(path="/inbox/inv-7.pdf")\n2. lookup_customer(customer_id=$1.vendor)\n',
    )
    assert all(step.args.get("customer_id") != "$1.vendor" for step in steps)


def test_a_value_its_tool_would_refuse_is_never_written() -> None:
    # no span of the request fits the channel's pattern: the model's own value breaks it
    steps = plan(
        "Tell the payments channel we are done",
        '1. post_message(channel="payments", text="We are done")\ndone',
        catalogue=OPS,
    )
    assert steps == []


def test_a_code_the_request_gives_is_no_identifier_its_pattern_refuses() -> None:
    tickets = (
        _tool(
            "update_ticket",
            {
                "ticket_id": {"type": "string", "pattern": "^[A-Z]{2,6}-[0-9]+$"},
                "status": {"type": "string", "enum": ["todo", "done"]},
            },
            ["ticket_id", "status"],
        ),
    )
    refused = plan(
        "Mark ticket 412 as done",
        '1. update_ticket(ticket_id="412", status="done")\ndone',
        catalogue=tickets,
    )
    assert refused == []  # "412" breaks the pattern: the required id is not grounded
    given = plan(
        "Mark ticket PAY-412 as done",
        '1. update_ticket(ticket_id="PAY-412", status="done")\ndone',
        catalogue=tickets,
    )
    assert given == [Step(1, "update_ticket", {"ticket_id": "PAY-412", "status": "done"})]


def test_a_round_after_a_failure_offers_no_tool_whose_only_call_is_the_one_that_failed() -> None:
    """The request gives one path; extract_invoice failed on it (a contract is no invoice):
    the only call of that tool the rules allow is the failed one, so it is not offered.
    Without the failure it is; and a tool whose values are free (SQL) is offered again."""
    request = (
        "Read /srv/shared/contracts/acme-2026.txt, extract the invoice and email its fee to "
        "finance@example.com"
    )
    read = Step(1, "read_file", {"path": "/srv/shared/contracts/acme-2026.txt"})
    extract = Step(2, "extract_invoice", {"path": "/srv/shared/contracts/acme-2026.txt"})
    wish = (
        '1. read_file(path="/srv/shared/contracts/acme-2026.txt")\n'
        '2. extract_invoice(path="/srv/shared/contracts/acme-2026.txt")\ndone'
    )
    assert "extract_invoice" not in [
        s.tool for s in plan(request, wish, earlier=[read], failed=[extract])
    ]
    assert [s.tool for s in plan(request, wish, earlier=[read])][:1] == ["extract_invoice"]
    question = "How many orders are there?"
    bad = Step(1, "query_sql", {"sql": "SELECT COUNT(*) FROM order"})
    fixed = plan(question, '1. query_sql(sql="SELECT COUNT(*) FROM orders")\ndone', failed=[bad])
    assert [s.args for s in fixed] == [{"sql": "SELECT COUNT(*) FROM orders"}]


def test_files_a_request_names_inside_a_folder_are_paths_and_whole_results_feed_a_list() -> None:
    """The competitor-analysis flagship over the packs' tools: each statement file is a path
    inside the folder the request names (a choice, not free text), and the outline takes each
    step's whole result."""
    from .test_grounding import COMPETITORS, PACKS

    wish = (
        '1. docs_financials(path="statements/acme.csv")\n'
        '2. docs_financials(path="statements/borealis.xlsx")\n'
        '3. docs_financials(path="statements/cobalt.pdf")\n'
        '4. docs_slide_outline(statements=[$1, $2, $3], folder="out/competitors")\ndone'
    )
    steps = plan(COMPETITORS, wish, catalogue=PACKS)
    assert [(s.tool, s.args) for s in steps] == [
        ("docs_financials", {"path": "statements/acme.csv"}),
        ("docs_financials", {"path": "statements/borealis.xlsx"}),
        ("docs_financials", {"path": "statements/cobalt.pdf"}),
        ("docs_slide_outline", {"statements": ["$1", "$2", "$3"], "folder": "out/competitors"}),
    ]


def test_a_call_on_a_path_an_earlier_step_changes_is_written_to_run_after_it() -> None:
    write = '1. write_file(path="/var/log/ops/status.txt", content="done")\n'
    request = "Write 'done' to /var/log/ops/status.txt, then list /var/log/ops and /srv/drop"
    wish = write + '2. list_files(directory="/var/log/ops")\ndone'
    assert plan(request, wish)[1].after == [1]  # the folder it wrote into
    off = plan(request, wish, off=frozenset({"write-order"}))
    assert off[1].after == []  # what this model wishes, left to itself
    apart = plan(request, write + '2. list_files(directory="/srv/drop")\ndone')
    assert apart[1].after == []  # another folder: the two may run together


def test_a_value_that_may_be_null_is_decoded_as_its_other_type() -> None:
    """`int | None` is `["integer", "null"]`: an integer, never free text ("unit": "°C")."""
    reader = _tool(
        "read_registers",
        {
            "address": {"type": "integer"},
            "unit": {"type": ["integer", "null"], "description": "The device id."},
        },
        ["address"],
    )
    request = "Read register 7 of device 3"
    steps = plan(request, "1. read_registers(address=7, unit=3)\ndone", catalogue=(reader,))
    assert steps[0].args == {"address": 7, "unit": 3}
    assert value_kind({"type": ["number", "null"]}) == "number"
    assert value_kind({"type": ["string", "integer"]}) == "text"
    # msgspec writes `Annotated[int, Meta(ge=0)] | None` as anyOf (the plc pack's `unit`)
    any_of = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": "Id"}
    assert value_kind(any_of) == "integer"
    wrapped = msgspec.structs.replace(
        reader,
        parameters={
            **reader.parameters,
            "properties": {"address": {"type": "integer"}, "unit": any_of},
        },
    )
    steps = plan(request, "1. read_registers(address=7, unit=3)\ndone", catalogue=(wrapped,))
    assert steps[0].args == {"address": 7, "unit": 3}
    wishes_text = plan(
        request, '1. read_registers(address=7, unit="°C")\ndone', catalogue=(wrapped,)
    )
    assert not isinstance(wishes_text[0].args.get("unit", 0), str)


def test_only_a_step_that_acts_on_the_same_path_or_around_it_orders_a_later_one() -> None:
    tools = {tool.tool_name: tool for tool in CATALOGUE}
    wrote = Step(id=1, tool="write_file", args={"path": "/srv/drop/README.txt", "content": "x"})
    read = Step(id=2, tool="read_file", args={"path": "/srv/drop/README.txt"})
    lists = tools["list_files"]
    assert grounding.writes_before(lists, {"directory": "/srv/drop/"}, [wrote], tools) == [1]
    assert grounding.writes_before(lists, {"directory": "/srv/dropbox"}, [wrote], tools) == []
    assert grounding.writes_before(lists, {"directory": "/srv/drop"}, [read], tools) == []
    reader = tools["read_file"]
    assert grounding.writes_before(reader, {"path": "/srv/drop/README.txt"}, [wrote], tools) == [1]
    assert grounding.writes_before(reader, {"path": "$1.files.0"}, [wrote], tools) == []
    unknown = {**tools, "write_file": msgspec.structs.replace(tools["write_file"], read_only=None)}
    assert grounding.writes_before(reader, {"path": "/srv/drop/README.txt"}, [wrote], unknown) == []


def test_an_optional_value_equal_to_its_default_is_left_out() -> None:
    """The call is the same without it, and a plan that spells it differs from one that
    does not (`to_column="email"` where "email" is the default)."""
    merge = _tool(
        "merge_mail",
        {
            "to": {"type": "string", "format": "email"},
            "to_column": {"type": "string", "default": "email"},
            "retries": {"type": "integer", "default": 2},
        },
        ["to"],
    )
    request = "Send the merge to ann@example.com (email column), with 2 retries"
    wish = '1. merge_mail(to="ann@example.com", to_column="email", retries=2)\ndone'
    assert plan(request, wish, catalogue=(merge,))[0].args == {"to": "ann@example.com"}
    other = '1. merge_mail(to="ann@example.com", to_column="address", retries=3)\ndone'
    said = "Send the merge to ann@example.com (address column), with 3 retries"
    assert plan(said, other, catalogue=(merge,))[0].args == {
        "to": "ann@example.com",
        "to_column": "address",
        "retries": 3,
    }


def test_an_optional_value_that_repeats_another_argument_s_reference_is_left_out() -> None:
    """`previous=$1.pr_number` beside `value=$1.pr_number`: the same result twice in one call."""
    alert = _tool(
        "alert",
        {"value": {"type": "number"}, "previous": {"type": ["number", "null"]}},
        ["value"],
    )
    listed = Step(1, "list_prs", {})
    catalogue = (*OPS, alert)
    wish = "1. list_prs()\n2. alert(value=$1.prs.0.pr_number, previous=$1.prs.0.pr_number)\ndone"
    steps = plan("Alert on the first PR above 5", wish, catalogue=catalogue, earlier=[listed])
    assert steps[0].args == {"value": "$1.prs.0.pr_number"}
    other = "1. list_prs()\n2. alert(value=$1.prs.0.pr_number, previous=$1.prs.1.pr_number)\ndone"
    steps = plan("Alert on the first PR above 5", other, catalogue=catalogue, earlier=[listed])
    assert steps[0].args == {"value": "$1.prs.0.pr_number", "previous": "$1.prs.1.pr_number"}


def test_an_optional_text_that_repeats_another_argument_is_left_out() -> None:
    """`cc` the very address `to` already is: the one the request gives, written twice."""
    email = {"type": "string", "format": "email"}
    mail = _tool("mail", {"to": email, "cc": email, "body": {"type": "string"}}, ["to", "body"])
    request = "Email ann@example.com that the boiler is fixed"
    wish = '1. mail(to="ann@example.com", cc="ann@example.com", body="The boiler is fixed.")\ndone'
    assert plan(request, wish, catalogue=(mail,))[0].args == {
        "to": "ann@example.com",
        "body": "The boiler is fixed.",
    }
    both = "Email ann@example.com, copying bob@example.com, that the boiler is fixed"
    wish = '1. mail(to="ann@example.com", cc="bob@example.com", body="The boiler is fixed.")\ndone'
    assert plan(both, wish, catalogue=(mail,))[0].args["cc"] == "bob@example.com"
    # a name the request says, written again in another role: the applicant is no negotiator
    viewing = _tool(
        "view", {"applicant": {"type": "string"}, "agent": {"type": "string"}}, ["applicant"]
    )
    wish = '1. view(applicant="Tomasz Wójcik", agent="Tomasz Wójcik")\ndone'
    steps = plan("Book Tomasz Wójcik in for a viewing", wish, catalogue=(viewing,))
    assert steps[0].args == {"applicant": "Tomasz Wójcik"}
    # a day is no text said twice: a one-day list runs from that day to that day
    day = {"type": "string", "format": "date"}
    listing = _tool("list_bookings", {"date_from": day, "date_to": day}, [])
    wish = '1. list_bookings(date_from="2026-03-05", date_to="2026-03-05")\ndone'
    steps = plan("List the bookings on 2026-03-05", wish, catalogue=(listing,))
    assert steps[0].args == {"date_from": "2026-03-05", "date_to": "2026-03-05"}


def test_an_optional_time_of_day_the_request_never_states_is_left_out() -> None:
    event = (
        '1. create_calendar_event(title="Submit VAT return", date="2027-02-28", time="{}")\ndone'
    )
    all_day = "Put 'Submit VAT return' in my calendar on 2027-02-28, as an all-day thing."
    assert "time" not in plan(all_day, event.format("23:59"))[0].args
    off = plan(all_day, event.format("23:59"), off=frozenset({"times"}))
    assert off[0].args["time"] == "23:59"
    said = "Put 'Submit VAT return' in my calendar on 2027-02-28 at 2pm."
    assert plan(said, event.format("14:00"))[0].args["time"] == "14:00"
    quoted = "Put 'Submit VAT return at 09:00' in my calendar on 2027-02-28."
    assert "time" not in plan(quoted, event.format("09:00"))[0].args  # the title's own words
    for said in ("from 2 to 3pm", "at 14.30", "15:00h", "2 o'clock", "half past two", "3点"):
        assert grounding.states_a_time(f"Call Ann {said}."), said
    assert not grounding.states_a_time("Call Ann on 2027-02-28 for 30 minutes, 'at 09:00'.")


def test_a_list_of_statements_is_earlier_results_never_paths_written_in_their_place() -> None:
    """docs_slide_outline's statements are objects (docs_financials results): it is not
    offered before a step has such a result, and then takes results, not the files' paths
    a model wishes to write in their place."""
    from .test_grounding import PACKS

    request = (
        "slide outline comparing peers/northwind.pdf vs peers/halcyon.xlsx, charts too, "
        "output to decks/peer-review"
    )
    outline = (
        'docs_slide_outline(statements=["peers/northwind.pdf", "peers/halcyon.xlsx"], '
        'folder="decks/peer-review")\ndone'
    )
    first = plan(request, f"1. {outline}", catalogue=PACKS)
    assert "docs_slide_outline" not in [s.tool for s in first[:1]]
    off = plan(request, f"1. {outline}", catalogue=PACKS, off=frozenset({"object-items"}))
    assert off[0].args["statements"] == ["peers/northwind.pdf", "peers/halcyon.xlsx"]
    read = [
        Step(1, "docs_financials", {"path": "peers/northwind.pdf"}),
        Step(2, "docs_financials", {"path": "peers/halcyon.xlsx"}),
    ]
    wish = "".join(f"{render_step(s)}\n" for s in read) + f"3. {outline}"
    [third] = plan(request, wish, catalogue=PACKS, earlier=read)
    assert third.tool == "docs_slide_outline"
    assert third.args["statements"]
    assert all(item in ("$1", "$2") for item in third.args["statements"])


def test_a_timer_is_offered_only_to_a_request_that_asks_to_wait() -> None:
    """A model that ends a plan with a wait nobody asked for (`sleep` after the batch) is
    not offered the timers; a request that asks for a delay is."""
    from .test_grounding import PACKS

    batch = '1. docs_invoice_batch(folder="in/", ledger="out/ledger.csv")\n'
    wish = batch + "2. sleep(seconds=10)\ndone"
    asked = "Book the invoices in in/ into out/ledger.csv"
    kept = [s.tool for s in plan(asked, wish, catalogue=PACKS)]
    assert kept[0] == "docs_invoice_batch"
    assert "sleep" not in kept  # (this fake model then writes whatever starts with "s")
    # (a wait nobody named after all that was asked is also a step `named-later` gives up)
    off = plan(asked, wish, catalogue=PACKS, off=frozenset({"waits", "named-later"}))
    assert [s.tool for s in off] == ["docs_invoice_batch", "sleep"]
    delayed = "Wait 10 seconds, then book the invoices in in/ into out/ledger.csv"
    first = plan(delayed, "1. sleep(seconds=10)\n" + batch.replace("1.", "2.") + "done",
                 catalogue=PACKS)  # fmt: skip
    assert [s.tool for s in first] == ["sleep", "docs_invoice_batch"]


def test_a_path_is_given_only_in_the_role_its_parameter_names() -> None:
    """A file's name is no folder to list; a CSV ledger is no Markdown summary: a model that
    wishes either gets the path that fits (or the step ends), and with the rule off it gets
    what it wished."""
    from .test_grounding import PACKS

    request = "Book the invoices in in/ into out/ledger.csv and summarise them to out/sum.md"
    wish = (
        '1. docs_invoice_batch(folder="in/", ledger="out/ledger.csv", summary="out/ledger.csv")\n'
    )
    [step] = plan(request, wish + "done", catalogue=PACKS)
    assert step.args["summary"] == "out/sum.md"
    off = plan(request, wish + "done", catalogue=PACKS, off=frozenset({"path-roles"}))
    assert "summary" not in off[0].args  # the ledger's path again: left out (`_repeats`)
    listing = plan(
        "List what is in /srv/q3 and read /srv/q3/report.pdf",
        '1. list_files(directory="/srv/q3/report.pdf")\ndone',
    )
    assert listing[0].args == {"directory": "/srv/q3"}
    # the request names a file and no folder: no folder is written in (its parent, a prefix
    # of the path given, would pass for one the request spells)
    parent = plan("Summarise /exports/platinum_de.txt", '1. list_files(directory="/exports")\ndone')
    assert "list_files" not in [step.tool for step in parent]


def test_a_first_step_on_a_file_nobody_named_is_chosen_again() -> None:
    """ "Summarize this: '...'" read as a file to read: the path is invented, so the model
    chooses again among the other tools (from where it chose), and keeps that step only if
    the request gives its values. With the rule off the plan ends before it began."""
    tools = tuple(t for t in CATALOGUE if t.tool_name in ("read_file", "summarize_text"))
    weather = tuple(t for t in CATALOGUE if t.tool_name in ("read_file", "get_weather"))
    request = "Summarize this in 10 words: 'The warehouse in Rotterdam closes from July 6 to 8.'"
    text = "The warehouse in Rotterdam closes from July 6 to 8."
    wish = f'1. read_file(path="notes.txt")\nsummarize_text(text="{text}", max_words=10)\ndone'
    expected = [Step(1, "summarize_text", {"text": text, "max_words": 10})]
    assert plan(request, wish, catalogue=tools) == expected
    off = frozenset({"retry-first", "retry-ungrounded"})  # (the second covers it too)
    assert plan(request, wish, catalogue=tools, off=off) == []
    # the second choice must be one the request gives values for: a city nobody named is not
    junk = '1. read_file(path="notes.txt")\nget_weather(city="Lisbon", date="2026-03-03")\n'
    assert plan(request, junk, catalogue=weather) == []


def test_a_later_step_that_cannot_be_grounded_is_chosen_again_while_a_given_is_unused() -> None:
    """The model chose a chat message to "SRCH-77" for "comment on SRCH-77": the value fits
    no parameter of that tool, so the step is chosen again among the others; the plan ends
    there only when nothing the user gave is left unused, or with the rule off."""
    request = "What's the weather in Oslo on 2026-03-05? Email it to ann@example.com"
    wish = (
        '1. get_weather(city="Oslo", date="2026-03-05")\n'
        '2. write_file(path="/tmp/ann@example.com", content=$1.forecast)\n'
        'send_email(to="ann@example.com", subject="Oslo", body=$1.forecast)\n'
        "done"
    )
    steps = plan(request, wish)
    assert [s.tool for s in steps] == ["get_weather", "send_email"]
    assert steps[1].args["to"] == "ann@example.com"
    assert [s.tool for s in plan(request, wish, off=frozenset({"retry-later"}))] == ["get_weather"]
    # nothing given is left unused after the forecast: an ungrounded step still ends the plan
    summary = "summarize_text(text=$1.forecast)\n"
    wish = wish.replace(
        'send_email(to="ann@example.com", subject="Oslo", body=$1.forecast)\n', summary
    )
    alone = plan("What's the weather in Oslo on 2026-03-05?", wish)
    assert [s.tool for s in alone] == ["get_weather"]
    # (with the gate gone, the summary would be chosen in the write's place)


def test_a_lookup_nobody_named_after_all_that_was_asked_is_chosen_again() -> None:
    """When every value the user gave is used, a further lookup must be one the request names:
    a database query nobody asked for after the mail is given up and the plan ends (`done` is
    the model's next choice); asked for, it is kept; with the rule off, the model's wish is."""
    request = "Email /srv/q1.txt to ann@example.com"
    wish = (
        '1. read_file(path="/srv/q1.txt")\n'
        '2. send_email(to="ann@example.com", subject="Q1", body=$1.content)\n'
        '3. query_sql(sql="SELECT 1")\n'
        "done"
    )
    assert [s.tool for s in plan(request, wish)] == ["read_file", "send_email"]
    off = plan(request, wish, off=frozenset({"named-later"}))
    assert [s.tool for s in off] == ["read_file", "send_email", "query_sql"]
    asked = plan("Email /srv/q1.txt to ann@example.com, then run an SQL query", wish)
    assert [s.tool for s in asked] == ["read_file", "send_email", "query_sql"]
    # a step that acts is not a lookup: the rule leaves it to the others
    write = wish.replace(
        '3. query_sql(sql="SELECT 1")',
        '3. write_file(path="/srv/q1.txt", content=$1.content)',
    )
    assert [s.tool for s in plan(request, write)] == ["read_file", "send_email", "write_file"]
    # the same lookup again, for another thing, is the request's (two cities' weather)
    sql = 'Email ann@example.com the result of "SELECT COUNT(*) FROM orders"'
    again = (
        '1. query_sql(sql="SELECT COUNT(*) FROM orders")\n'
        '2. send_email(to="ann@example.com", subject="Count", body="{$1.rows}")\n'
        '3. query_sql(sql="SELECT 1")\n'
        "done"
    )
    assert [s.tool for s in plan(sql, again)] == ["query_sql", "send_email", "query_sql"]
    # and so is a round's repair of a lookup that failed: made before, not given up
    earlier = [
        Step(1, "read_file", {"path": "/srv/q1.txt"}),
        Step(2, "send_email", {"to": "ann@example.com", "subject": "Q1", "body": "$1.content"}),
    ]
    assert plan(request, wish, earlier=earlier) == []
    failed = [Step(3, "query_sql", {"sql": "SELECT 0"})]
    repair = plan(request, wish, earlier=earlier, failed=failed)
    assert [s.tool for s in repair] == ["query_sql"]


def test_a_step_that_uses_what_is_said_after_a_listed_name_still_to_do_is_chosen_again() -> None:
    """For "Lyon and Bordeaux" the model searches Lyon, mails it, and only then goes on to
    Bordeaux (two mails where one was asked for both). The mail uses the address, said after
    "Bordeaux", which no step has used while "Lyon" has: it is chosen again (the search of
    Bordeaux), and the mail comes after both. With the rule off, the model's order is kept."""
    request = (
        "Find the cheapest hotel in Lyon and in Bordeaux for 2 nights from 2026-03-06 "
        "and email both to ann@example.com"
    )
    wish = (
        '1. search_hotels(city="Lyon", check_in="2026-03-06", nights=2)\n'
        '2. send_email(to="ann@example.com", subject="Lyon", body="{$1.hotels.0.name}")\n'
        'search_hotels(city="Bordeaux", check_in="2026-03-06", nights=2)\n'
        '3. send_email(to="ann@example.com", subject="Hotels", body="{$1.hotels.0.name} '
        '{$2.hotels.0.name}")\n'
        "done"
    )
    steps = plan(request, wish)
    assert [(s.tool, s.args.get("city")) for s in steps] == [
        ("search_hotels", "Lyon"),
        ("search_hotels", "Bordeaux"),
        ("send_email", None),
    ]
    assert steps[2].args["body"] == "{$1.hotels.0.name} {$2.hotels.0.name}"
    off = plan(request, wish, off=frozenset({"said-order"}))
    assert [s.tool for s in off[:2]] == ["search_hotels", "send_email"]


def test_a_step_chosen_again_for_coming_early_is_one_of_the_tools_that_took_its_like() -> None:
    """The mail after the weather in Lyon skips Bordeaux: it is chosen again among the tools
    that took a listed name (the weather's), not the model's next wish (a hotel search), and
    without `done` (the end would drop what the request said before). Where no such step can
    be made, the mail as first chosen is kept: the order is not worth a step asked for. A
    mail whose text says "a nice hotel" has not said "Nice"."""
    request = (
        "Get the weather in Lyon and in Bordeaux on 2026-03-06 and email both to ann@example.com"
    )
    wish = (
        '1. get_weather(city="Lyon", date="2026-03-06")\n'
        '2. send_email(to="ann@example.com", subject="Lyon", body="{$1.summary}")\n'
        'search_hotels(city="Bordeaux", check_in="2026-03-06", nights=2)\n'
        "done"
    )
    assert [(s.tool, s.args.get("city")) for s in plan(request, wish)[:2]] == [
        ("get_weather", "Lyon"),
        ("get_weather", "Bordeaux"),
    ]
    assert [s.tool for s in plan(request, wish, off=frozenset({"said-order"}))][:2] == [
        "get_weather",
        "send_email",
    ]
    # the model has no city of its own to write: the weather chosen again is no call
    ends = wish.replace('search_hotels(city="Bordeaux", check_in="2026-03-06", nights=2)\n', "")
    steps = plan(request, ends)
    assert [s.tool for s in steps] == ["get_weather", "send_email"]
    assert steps[1].args["to"] == "ann@example.com"
    nice = request.replace("Bordeaux", "Nice")
    a_nice_hotel = wish.replace("{$1.summary}", "A nice hotel: {$1.summary}").replace(
        "Bordeaux", "Nice"
    )
    assert [(s.tool, s.args.get("city")) for s in plan(nice, a_nice_hotel)[:2]] == [
        ("get_weather", "Lyon"),
        ("get_weather", "Nice"),
    ]


def test_each_of_the_names_a_request_lists_is_done_once_a_step_used_every_one() -> None:
    """ "Hotels in Lyon and Bordeaux ... email each": once both are searched, the request's
    "each" is done; the hotels found are no list it asked to go through (a mail a hotel)."""
    request = (
        "Find hotels in Lyon and Bordeaux for 2 nights from 2026-03-06 and email each to "
        "ann@example.com"
    )
    wish = (
        '1. search_hotels(city="Lyon", check_in="2026-03-06", nights=2)\n'
        '2. search_hotels(city="Bordeaux", check_in="2026-03-06", nights=2)\n'
        '3. for each item in $2.hotels: send_email(to="ann@example.com", subject="Hotel", '
        'body="{$item.name}")\n'
        "done"
    )
    steps = plan(request, wish)
    assert [s.each for s in steps] == [None, None, None]
    one_city = (
        '1. search_hotels(city="Lyon", check_in="2026-03-06", nights=2)\n'
        '2. for each item in $1.hotels: send_email(to="ann@example.com", subject="Hotel", '
        'body="{$item.name}")\n'
        "done"
    )
    for_each = plan(request.replace("Lyon and Bordeaux", "Lyon"), one_city)
    assert [s.each for s in for_each] == [None, "$1.hotels"]  # no name listed: its hotels


def test_a_step_that_skips_a_given_the_plan_came_to_in_order_is_chosen_again() -> None:
    """Milan from the 16th, Turin from the 18th, then one mail: the mail after Milan's
    booking uses the address, said after "18", which the plan (begun on "2" and "16") has
    skipped: it is chosen again. A number said before any the plan used ("the 3 cheapest") is
    no step skipped, nor is what the request says after the mail's address."""
    request = (
        "Book the cheapest hotel in Milan for 2 nights from March 16 and in Turin for 2 "
        "nights from March 18, then email both booking IDs to ann@example.com"
    )
    wish = (
        '1. search_hotels(city="Milan", check_in="2026-03-16", nights=2)\n'
        '2. book_hotel(hotel_id=$1.hotels.0.hotel_id, check_in="2026-03-16", nights=2)\n'
        '3. send_email(to="ann@example.com", subject="Milan", body="{$2.booking_id}")\n'
        'search_hotels(city="Turin", check_in="2026-03-18", nights=2)\n'
        '4. book_hotel(hotel_id=$3.hotels.0.hotel_id, check_in="2026-03-18", nights=2)\n'
        '5. send_email(to="ann@example.com", subject="Both", body="{$2.booking_id} '
        '{$4.booking_id}")\n'
        "done"
    )
    steps = plan(request, wish)
    assert [s.tool for s in steps] == [
        "search_hotels",
        "book_hotel",
        "search_hotels",
        "book_hotel",
        "send_email",
    ]
    assert steps[2].args["check_in"] == "2026-03-18"
    off = plan(request, wish, off=frozenset({"said-order"}))
    assert [s.tool for s in off[:3]] == ["search_hotels", "book_hotel", "send_email"]
    # said before everything the plan used: not skipped, the mail is the model's
    three = "Find the 3 cheapest hotels in Milan for 2 nights from March 16, email ann@example.com"
    mail = (
        '1. search_hotels(city="Milan", check_in="2026-03-16", nights=2)\n'
        '2. send_email(to="ann@example.com", subject="Milan", body="{$1.hotels}")\n'
        "done"
    )
    assert [s.tool for s in plan(three, mail)] == ["search_hotels", "send_email"]


def test_a_lookup_of_a_file_the_plan_wrote_ends_the_plan() -> None:
    """After the report is written, the model reads an invoice from the report's own path and
    would go on (a summary, the report again): a lookup of a file the plan wrote ends the plan.
    A step that acts on it is not a lookup (a mail citing the report's path), and with the rule
    off the model's run-away plan is kept."""
    request = "Pull the total from /ap/inv-881.pdf and produce a markdown report called 'Q4'"
    wish = (
        '1. extract_invoice(path="/ap/inv-881.pdf")\n'
        '2. generate_report(title="Q4", sections=["{$1.total}"], format="markdown")\n'
        "3. extract_invoice(path=$2.path)\n"
        "4. summarize_text(text=$3.invoice_id)\n"
        "done"
    )
    assert [s.tool for s in plan(request, wish)] == ["extract_invoice", "generate_report"]
    off = plan(request, wish, off=frozenset({"read-back"}))
    assert [s.tool for s in off][:3] == ["extract_invoice", "generate_report", "extract_invoice"]
    mailed = wish.replace(
        "3. extract_invoice(path=$2.path)\n4. summarize_text(text=$3.invoice_id)\n",
        '3. send_email(to="ann@example.com", subject="Q4", body="{$2.path}")\n',
    )
    to_ann = f"{request}, and email it to ann@example.com"
    assert [s.tool for s in plan(to_ann, mailed)][-1] == "send_email"


TICKETS = ToolDescriptor(
    "search_tickets",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for."},
            "project": {"type": "string", "pattern": "^[A-Z]{2,6}$"},
            "status": {"type": "string", "enum": ["open", "blocked"]},
        },
        "minProperties": 1,
    },
    description="Search tickets.",
    read_only=True,
)


def test_a_free_text_that_another_parameter_s_pattern_takes_is_moved_to_it() -> None:
    """The model writes the project key the request gives as the words to look for
    (`query="SRCH"`); `project` takes `^[A-Z]{2,6}$` and has no value: the key is the
    project's. A text that is no such word stays; with the rule off, the model's is kept."""
    request = "List the open urgent SRCH tickets about the reindex"
    wish = '1. search_tickets(query="SRCH", status="open")\ndone'
    steps = plan(request, wish, catalogue=(TICKETS,))
    assert steps[0].args == {"project": "SRCH", "status": "open"}
    off = plan(request, wish, catalogue=(TICKETS,), off=frozenset({"pattern-place"}))
    assert off[0].args == {"query": "SRCH", "status": "open"}
    words = plan(
        request, '1. search_tickets(query="reindex", status="open")\ndone', catalogue=(TICKETS,)
    )
    assert words[0].args == {"query": "reindex", "status": "open"}
    # a key the request says as the subject searched for, not beside "tickets" or "project"
    topic = plan(
        "Find tickets about SSO login failures",
        '1. search_tickets(query="SSO")\ndone',
        catalogue=(TICKETS,),
    )
    assert topic[0].args == {"query": "SSO"}
    keyed = plan(
        "Search the project SSO for login failures",
        '1. search_tickets(query="SSO")\ndone',
        catalogue=(TICKETS,),
    )
    assert keyed[0].args == {"project": "SSO"}


def test_the_same_call_for_the_values_in_another_order_is_no_step_skipped() -> None:
    """ "100, 200 and 300": the model converts 300 before 200. Only the step's own tool took
    the like of the skipped "200", so the plan is in order enough: kept as the model wants
    it (with one tool in the catalogue there would be nothing else to choose)."""
    convert = next(t for t in CATALOGUE if t.tool_name == "convert_currency")
    wish = "".join(
        f'{i}. convert_currency(amount={amount}, from_currency="USD", to_currency="EUR")\n'
        for i, amount in enumerate((100, 300, 200), start=1)
    )
    steps = plan("Convert 100, 200 and 300 USD to EUR", f"{wish}done", catalogue=(convert,))
    assert [s.args["amount"] for s in steps] == [100, 300, 200]


def _clinic(
    name: str, properties: dict[str, Any], required: list[str], *, acts: bool = False
) -> ToolDescriptor:
    """A tool of a clinic's catalogue, which the demo's examples never show."""
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolDescriptor(name, schema, description=f"{name} (a clinic's)", read_only=not acts)


DOCTORS = _clinic(
    "find_doctor",
    {"name": {"type": "string"}, "available_on": {"type": "string", "format": "date"}},
    ["name"],
)
PATIENTS = _clinic("find_patient", {"name": {"type": "string"}}, ["name"])
CANCEL = _clinic(
    "cancel_appointment",
    {
        "appointment_id": {"type": "string", "pattern": "^A[0-9]{7}$"},
        "reason": {"type": "string"},
    },
    ["appointment_id"],
    acts=True,
)


def test_a_name_given_a_code_another_tool_takes_is_chosen_again_among_its_takers() -> None:
    """The model looks the request's appointment id up as a patient's name, the first lookup
    listed: `cancel_appointment` takes the code by its pattern, so the first step is chosen
    again among the tools that take it (not the other lookup the model wants next), in the
    no-tool band too, held to the band's checks. A name the request gives stays a name; with
    the rule off, the lookup is dropped in the band (the request does not name it)."""
    request = "Please cancel appointment A2604417"
    wish = (
        '1. find_patient(name="A2604417")\n'
        'find_doctor(name="Petrova", available_on="2026-03-04")\n'
        'cancel_appointment(appointment_id="A2604417")\ndone'
    )
    doubtful = (-50.0, 50.0)  # every first choice is in the band
    tools = (PATIENTS, DOCTORS, CANCEL)
    expected = [Step(1, "cancel_appointment", {"appointment_id": "A2604417"})]
    assert plan(request, wish, catalogue=tools, abstain=doubtful) == expected
    assert plan(request, wish, catalogue=tools) == expected
    off = plan(request, wish, catalogue=tools, abstain=doubtful, off=frozenset({"coded-name"}))
    assert off == []
    named = plan(
        "Find the patient Ada Moss", '1. find_patient(name="Ada Moss")\ndone', catalogue=tools
    )
    assert named == [Step(1, "find_patient", {"name": "Ada Moss"})]
    # the lookup given the code is not given up for the steps after: given a name, it is one
    later = plan(
        f"{request}, then find the patient Ada Moss",
        f'{wish.removesuffix("done")}2. find_patient(name="Ada Moss")\ndone',
        catalogue=tools,
    )
    assert later == [*expected, Step(2, "find_patient", {"name": "Ada Moss"})]


def test_an_optional_date_the_request_does_not_name_is_left_out() -> None:
    """A small model fills an optional date from habit (today, or a round date nobody said):
    left out unless the request names that day; with the rule off, kept."""
    wish = '1. find_doctor(name="Petrova", available_on="2026-03-04")\ndone'
    unsaid = plan("Look up Dr Petrova", wish, catalogue=(DOCTORS,))
    assert unsaid == [Step(1, "find_doctor", {"name": "Petrova"})]
    kept = plan("Look up Dr Petrova", wish, catalogue=(DOCTORS,), off=frozenset({"optional-dates"}))
    assert kept[0].args == {"name": "Petrova", "available_on": "2026-03-04"}
    named = plan("Is Dr Petrova free on Wednesday?", wish, catalogue=(DOCTORS,))
    assert named[0].args == {"name": "Petrova", "available_on": "2026-03-04"}
    # a date taken from an earlier result is the result's, not one the request must name
    visit = msgspec.structs.replace(
        _clinic("next_visit", {"patient_id": {"type": "string"}}, []),
        returns={"type": "object", "properties": {"date": {"type": "string", "format": "date"}}},
    )
    chained = plan(
        "Find the next visit of P123456, then the doctor Petrova if free that day",
        '1. next_visit(patient_id="P123456")\n'
        '2. find_doctor(name="Petrova", available_on=$1.date)\ndone',
        catalogue=(visit, DOCTORS),
    )
    assert chained[1].args == {"name": "Petrova", "available_on": "$1.date"}


def _returning(tool: ToolDescriptor, items: str, fields: dict[str, Any]) -> ToolDescriptor:
    """`tool`, returning a list `items` of objects with `fields`."""
    listed = {"type": "array", "items": {"type": "object", "properties": fields}}
    returns = {"type": "object", "properties": {items: listed}}
    return msgspec.structs.replace(tool, returns=returns)


_ID = {"type": "string"}
FOUND_PATIENTS = _returning(PATIENTS, "patients", {"patient_id": _ID, "name": _ID})
FOUND_DOCTORS = _returning(DOCTORS, "doctors", {"doctor_id": _ID, "name": _ID})
UPCOMING = _returning(
    _clinic(
        "get_upcoming_appointments",
        {"patient_id": {"type": "string", "pattern": "^P[0-9]{6}$"}},
        ["patient_id"],
    ),
    "appointments",
    {"appointment_id": _ID, "doctor_id": _ID},
)
SLOTS = _returning(
    _clinic("list_free_slots", {"doctor_id": {"type": "string"}}, ["doctor_id"]),
    "slots",
    {"time": _ID},
)
FRONT_DESK = (FOUND_PATIENTS, FOUND_DOCTORS, UPCOMING, SLOTS, CANCEL)


def test_a_name_looked_up_in_a_role_the_request_does_not_give_it_is_looked_up_again() -> None:
    """The model looks a caller up with the doctors' lookup (a name, an appointment: a doctor
    comes to mind). The patients' lookup takes the same name and leads to more of what the
    request names (the appointments to cancel; a doctor leads to free slots only), so the
    step is chosen again among the lookups of names. With the rule off, the doctor stands."""
    request = "Jonas Brandt can't come, please cancel his next appointment"
    wish = (
        '1. find_doctor(name="Jonas Brandt")\n'
        '1. find_patient(name="Jonas Brandt")\n'
        "2. get_upcoming_appointments(patient_id=$1.patients.0.patient_id)\n"
        "3. cancel_appointment(appointment_id=$2.appointments.0.appointment_id)\ndone"
    )
    expected = [
        Step(1, "find_patient", {"name": "Jonas Brandt"}),
        Step(2, "get_upcoming_appointments", {"patient_id": "$1.patients.0.patient_id"}),
        Step(3, "cancel_appointment", {"appointment_id": "$2.appointments.0.appointment_id"}),
    ]
    assert plan(request, wish, catalogue=FRONT_DESK) == expected
    off = plan(request, wish, catalogue=FRONT_DESK, off=frozenset({"role-lookup"}))
    assert off[0] == Step(1, "find_doctor", {"name": "Jonas Brandt"})


def test_a_name_said_with_a_role_is_looked_up_in_that_role() -> None:
    """A name the request says with a title or role ("Dr. Petrova", "patient Ada Moss") is
    looked up as that; where neither lookup leads further than the other, the model's
    choice stands."""
    titled = plan(
        "Book Tomás Ortega into Dr. Petrova's first free slot",
        '1. find_patient(name="Petrova")\n1. find_doctor(name="Petrova")\ndone',
        catalogue=FRONT_DESK,
    )
    assert titled == [Step(1, "find_doctor", {"name": "Petrova"})]
    said = plan(
        "Mail Dr. Petrova about the broken projector",
        '1. find_doctor(name="Dr. Petrova")\ndone',
        catalogue=FRONT_DESK,
    )
    assert said == [Step(1, "find_doctor", {"name": "Dr. Petrova"})]
    wish = '1. find_doctor(name="Ada Moss")\ndone'
    neither = plan("Look up Ada Moss", wish, catalogue=FRONT_DESK)
    assert neither == [Step(1, "find_doctor", {"name": "Ada Moss"})]


BOOKING = _clinic(
    "book_appointment",
    {
        "patient_id": {"type": "string", "pattern": "^P[0-9]{6}$"},
        "doctor_id": {"type": "string"},
        "time": {"type": "string"},
    },
    ["patient_id", "doctor_id", "time"],
    acts=True,
)


def test_a_later_lookup_the_request_does_not_name_is_kept_where_it_leads_to_what_it_names() -> None:
    """ "Book Tomás Ortega into Dr. Petrova's first free slot": the doctor and the slot found,
    the booking still needs a patient id. The patients' lookup is named nowhere, but without
    it the plan cannot reach the booking the request names, so it stands (with the rule off
    it is given up, and the plan ends without the booking)."""
    request = "Book Tomás Ortega into Dr. Petrova's first free slot"
    wish = (
        '1. find_doctor(name="Petrova")\n'
        "2. list_free_slots(doctor_id=$1.doctors.0.doctor_id)\n"
        '3. find_patient(name="Tomás Ortega")\n'
        "4. book_appointment(patient_id=$3.patients.0.patient_id, "
        "doctor_id=$1.doctors.0.doctor_id, time=$2.slots.0.time)\ndone"
    )
    catalogue = (*FRONT_DESK, BOOKING)
    steps = plan(request, wish, catalogue=catalogue)
    assert [step.tool for step in steps] == [
        "find_doctor",
        "list_free_slots",
        "find_patient",
        "book_appointment",
    ]
    assert steps[3].args["patient_id"] == "$3.patients.0.patient_id"
    off = plan(request, wish, catalogue=catalogue, off=frozenset({"leads-named"}))
    assert "book_appointment" not in [step.tool for step in off]


LAB_RESULTS = _returning(
    _clinic(
        "list_lab_results",
        {"patient_id": {"type": "string", "pattern": "^P[0-9]{6}$"}},
        ["patient_id"],
    ),
    "results",
    {"test_name": _ID, "report_path": _ID},
)
READ_REPORT = msgspec.structs.replace(
    _clinic("read_file", {"path": {"type": "string"}}, ["path"]),
    returns={"type": "object", "properties": {"path": _ID, "content": _ID}},
)
MAIL_REPORT = _clinic(
    "send_mail",
    {
        "to": {"type": "string", "format": "email"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
    ["to", "subject", "body"],
    acts=True,
)
LABS = (LAB_RESULTS, READ_REPORT, MAIL_REPORT)


def test_a_file_a_result_points_to_by_a_field_the_request_names_is_read() -> None:
    """ "Pull up P004127's latest lab report": the lab results hold `report_path`, and the
    request says "report": the plan does not end with the listing, its next step reads the
    report. With the rule off, the model's end stands."""
    request = "Pull up P004127's latest lab report"
    wish = (
        '1. list_lab_results(patient_id="P004127")\ndone\n'
        "2. read_file(path=$1.results.0.report_path)\ndone"
    )
    assert plan(request, wish, catalogue=LABS) == [
        Step(1, "list_lab_results", {"patient_id": "P004127"}),
        Step(2, "read_file", {"path": "$1.results.0.report_path"}),
    ]
    off = plan(request, wish, catalogue=LABS, off=frozenset({"named-file"}))
    assert [step.tool for step in off] == ["list_lab_results"]
    # a request that does not name the file: the listing is the answer
    listed = plan("List P004127's lab results", wish, catalogue=LABS)
    assert [step.tool for step in listed] == ["list_lab_results"]
    # each report read, one step over the list: read, the plan may end
    each = (
        '1. list_lab_results(patient_id="P004127")\n'
        "2. for each item in $1.results: read_file(path=$item.report_path)\ndone\n"
        "3. for each item in $2: read_file(path=$item.path)\ndone"
    )
    steps = plan("Pull up all of P004127's lab reports", each, catalogue=LABS)
    assert [(step.tool, step.each) for step in steps] == [
        ("list_lab_results", None),
        ("read_file", "$1.results"),
    ]


def test_a_text_after_the_read_of_a_named_file_cites_what_was_read() -> None:
    """A mail written after the report is read carries the report's text in its body (its
    last required text), not only its path: the model would send the path, or nothing."""
    request = "Email P004127's latest lab report to ann@example.com"
    wish = (
        '1. list_lab_results(patient_id="P004127")\n'
        "2. read_file(path=$1.results.0.report_path)\n"
        '3. send_mail(to="ann@example.com", subject="Your lab report", body="Here it is.")\n'
        "done"
    )
    steps = plan(request, wish, catalogue=LABS)
    assert steps[2].args == {
        "to": "ann@example.com",
        "subject": "Your lab report",
        "body": "Here it is. {$2.content}",
    }
    # (with `named-file` off the read is a lookup nobody named, using nothing given: a
    # detour, but for `detours` off too)
    off = plan(request, wish, catalogue=LABS, off=frozenset({"named-file", "detours"}))
    assert off[2].args["body"] == "Here it is."


def test_one_result_may_feed_several_calls_an_identifier_no_unused_result_holds() -> None:
    """The patient found feeds both the upcoming appointments' lookup and the lab results':
    the appointments (the one result nothing uses yet) hold no patient id, so the patient's
    is offered again. With the rule off, the lab results cannot be had."""
    request = "Show Maria Keller's upcoming appointments and her lab results"
    wish = (
        '1. find_patient(name="Maria Keller")\n'
        "2. get_upcoming_appointments(patient_id=$1.patients.0.patient_id)\n"
        "3. list_lab_results(patient_id=$1.patients.0.patient_id)\ndone"
    )
    catalogue = (FOUND_PATIENTS, UPCOMING, LAB_RESULTS)
    steps = plan(request, wish, catalogue=catalogue)
    assert steps[2] == Step(3, "list_lab_results", {"patient_id": "$1.patients.0.patient_id"})
    off = plan(request, wish, catalogue=catalogue, off=frozenset({"fan-out"}))
    assert "list_lab_results" not in [step.tool for step in off]


_PHONE = {"type": "string", "pattern": r"^\+[1-9][0-9]{7,14}$"}
SMS = _clinic("send_sms", {"to": _PHONE, "text": {"type": "string"}}, ["to", "text"], acts=True)
PHONES = _returning(PATIENTS, "patients", {"patient_id": _ID, "phone": _PHONE})


def test_a_code_a_pattern_asks_for_comes_from_a_result_field_of_the_same_kind() -> None:
    """A text to a number the pattern `^\\+...` asks for: the patient's phone (the same
    pattern), not the freshest result's doctor id, which the model reaches for. With the
    rule off, only a whole field of the freshest result is offered (none here: an item's is
    no text), the model writes a number of its own, which breaks the pattern: no text."""
    request = "Text Maria Keller the time of her next appointment"
    wish = (
        '1. find_patient(name="Maria Keller")\n'
        "2. get_upcoming_appointments(patient_id=$1.patients.0.patient_id)\n"
        '3. send_sms(to=$2.appointments.0.doctor_id, text="See you soon")\ndone'
    )
    catalogue = (PHONES, UPCOMING, SMS)
    steps = plan(request, wish, catalogue=catalogue)
    assert steps[2].args["to"] == "$1.patients.0.phone"
    both = frozenset({"coded-fields", "code-sources"})
    off = plan(request, wish, catalogue=catalogue, off=both)
    assert [step.tool for step in off] == ["find_patient", "get_upcoming_appointments"]
    # (with `code-sources` on, no number of the kind is held: no text is offered at all)
    off = plan(request, wish, catalogue=catalogue, off=frozenset({"coded-fields"}))
    assert "send_sms" not in [step.tool for step in off]


def test_a_lookup_in_another_role_stands_where_the_step_cannot_be_chosen_again() -> None:
    """Where the decoder cannot choose a later step again (`named-later` off: no go-back
    point), a doctor looked up by a caller's name stands: the plan does not end there."""
    request = "Jonas Brandt can't come, please cancel his next appointment"
    earlier = [Step(1, "list_free_slots", {"doctor_id": "D001"})]
    wish = '1. list_free_slots(doctor_id="D001")\n2. find_doctor(name="Jonas Brandt")\ndone'
    off = frozenset({"named-later"})
    steps = plan(request, wish, catalogue=FRONT_DESK, earlier=earlier, off=off)
    assert steps == [Step(2, "find_doctor", {"name": "Jonas Brandt"})]


def test_in_a_step_over_a_list_the_item_s_own_code_is_the_value() -> None:
    """A text to each patient found: each one's phone (`$item.phone`), not the first
    patient's (`coded-fields` prefers the item's code inside a step over a list)."""
    wish = (
        '1. find_patient(name="Keller")\n'
        '2. for each item in $1.patients: send_sms(to=$item.phone, text="Reminder")\ndone'
    )
    steps = plan("Text every patient named Keller a reminder", wish, catalogue=(PHONES, SMS))
    assert steps[1].each == "$1.patients"
    assert steps[1].args["to"] == "$item.phone"


SLOTS = _clinic(
    "list_free_slots",
    {
        "date": {"type": "string", "format": "date"},
        "service_type": {"type": "string", "enum": ["mot", "tyres", "brakes"]},
    },
    ["date", "service_type"],
)


def test_in_doubt_a_choice_the_request_names_is_a_value_it_gives() -> None:
    """ "anything free for an MOT on thursday?": the call's values are a date and a stated
    choice the request names; in doubt, the call is kept. With the rule off, or where the
    request names no choice, nothing in the call comes from the request: no plan (a day
    named is no sign of the tool)."""
    doubtful = (-50.0, 50.0)  # every first choice is in the band: the values decide
    wish = '1. list_free_slots(date="2026-03-05", service_type="mot")\ndone'
    named = plan(
        "anything free for an MOT on thursday?", wish, catalogue=(SLOTS,), abstain=doubtful
    )
    assert named == [Step(1, "list_free_slots", {"date": "2026-03-05", "service_type": "mot"})]
    off = frozenset({"named-values"})
    request = "anything free for an MOT on thursday?"
    assert plan(request, wish, catalogue=(SLOTS,), abstain=doubtful, off=off) == []
    assert plan("anything on?", wish, catalogue=(SLOTS,), abstain=doubtful) == []
    assert plan("anything free on thursday?", wish, catalogue=(SLOTS,), abstain=doubtful) == []


def _sms(description: str) -> ToolDescriptor:
    to = {"type": "string", "pattern": r"^\+[1-9][0-9]{7,14}$", "description": description}
    return _clinic(
        "send_sms", {"to": to, "message": {"type": "string"}}, ["to", "message"], acts=True
    )


def test_a_phone_number_is_written_in_the_international_form_its_parameter_documents() -> None:
    """A UK mobile given with its trunk 0 ("07700 900461") to a parameter that asks for
    "+44 and drop the leading 0": the number in that form, one choice. Where the parameter
    documents no calling code, or with the rule off, the model's national number breaks the
    pattern: no plan (a country is not the planner's to guess)."""
    request = "text 07700 900461 - the car is ready for collection"
    wish = '1. send_sms(to="07700 900461", message="Your car is ready for collection")\ndone'
    uk = (_sms("Mobile number in international format (UK: +44 and drop the leading 0)."),)
    steps = plan(request, wish, catalogue=uk)
    assert steps == [
        Step(
            1,
            "send_sms",
            {"to": "+447700900461", "message": "Your car is ready for collection"},
        )
    ]
    assert plan(request, wish, catalogue=uk, off=frozenset({"phone-forms"})) == []
    assert plan(request, wish, catalogue=(_sms("Mobile number, international format."),)) == []


ARCHIVE = _clinic(
    "read_file",
    {"path": {"type": "string", "pattern": "^/", "description": "Absolute path."}},
    ["path"],
)
ARCHIVE = msgspec.structs.replace(
    ARCHIVE,
    returns={"type": "object", "properties": {"path": _ID, "content": _ID}},
    description=(
        "Read a document from the archive. Layout: /archive/policies/courtesy-car.md, "
        "/archive/daybook/YYYY-MM-DD.txt (end-of-day notes), /archive/reports/<job_id>.txt."
    ),
)


def test_a_file_the_tool_documents_is_read_where_the_request_names_what_it_is() -> None:
    """ "What does our courtesy car policy say?": the tool's description lists
    /archive/policies/courtesy-car.md; the request names every word of the file's name, so the
    path is offered. A file named by a date is offered for a day the request names and its
    folder ("yesterday's daybook"). A file the description does not list, or one named by
    another placeholder, stays an invented path; with the rule off, so does every one."""
    wish = '1. read_file(path="/archive/policies/courtesy-car.md")\ndone'
    policy = "What does our courtesy car policy say?"
    assert plan(policy, wish, catalogue=(ARCHIVE,)) == [
        Step(1, "read_file", {"path": "/archive/policies/courtesy-car.md"})
    ]
    assert plan(policy, wish, catalogue=(ARCHIVE,), off=frozenset({"documented-paths"})) == []
    daybook = plan(
        "read me yesterday's daybook",
        '1. read_file(path="/archive/daybook/2026-03-01.txt")\ndone',
        catalogue=(ARCHIVE,),
    )
    assert daybook == [Step(1, "read_file", {"path": "/archive/daybook/2026-03-01.txt"})]
    warranty = '1. read_file(path="/archive/policies/warranty.md")\ndone'
    assert plan("What does our warranty say?", warranty, catalogue=(ARCHIVE,)) == []
    report = '1. read_file(path="/archive/reports/J004417.txt")\ndone'
    assert plan("Read the report of job J004417", report, catalogue=(ARCHIVE,)) == []


def _unmarked(tool: ToolDescriptor) -> ToolDescriptor:
    """`tool` as a catalogue that does not say which tools act describes it."""
    return msgspec.structs.replace(tool, read_only=None)


GARAGE = (
    _returning(
        _clinic("find_customer", {"name": {"type": "string"}}, ["name"]),
        "customers",
        {"customer_id": {"type": "string", "pattern": "^C[0-9]{5}$"}},
    ),
    _returning(
        _clinic(
            "list_jobs",
            {"customer_id": {"type": "string", "pattern": "^C[0-9]{5}$"}},
            ["customer_id"],
        ),
        "jobs",
        {"job_id": {"type": "string", "pattern": "^J[0-9]{6}$"}},
    ),
    msgspec.structs.replace(
        _clinic(
            "book_job",
            {"customer_id": {"type": "string", "pattern": "^C[0-9]{5}$"}},
            ["customer_id"],
            acts=True,
        ),
        returns={
            "type": "object",
            "properties": {"job_id": {"type": "string", "pattern": "^J[0-9]{6}$"}},
        },
    ),
    _clinic(
        "cancel_job",
        {
            "job_id": {"type": "string", "pattern": "^J[0-9]{6}$"},
            "reason": {"type": "string", "enum": ["customer_request", "other"]},
        },
        ["job_id", "reason"],
        acts=True,
    ),
)


def test_a_first_lookup_in_doubt_stands_where_the_next_leads_on_to_what_the_request_names() -> None:
    """ "cancel her booking": the customer (a lookup in doubt, not named) feeds her jobs (not
    named either), which lead to the cancellation the request names: the three stand. The
    jobs' lookup counts as leading there only because no plan books a job nobody asked for
    to have one to cancel. With the rule off, the held lookup was no step the request named:
    no plan."""
    request = "lisa brandt is moving away, cancel her booking"
    wish = (
        '1. find_customer(name="lisa brandt")\n'
        "2. list_jobs(customer_id=$1.customers.0.customer_id)\n"
        '3. cancel_job(job_id=$2.jobs.0.job_id, reason="customer_request")\ndone'
    )
    doubtful = (-50.0, 50.0)  # every first choice is in the band
    # (a catalogue that does not say which tools act: their names do)
    unmarked = tuple(_unmarked(tool) for tool in GARAGE)
    steps = plan(request, wish, catalogue=unmarked, abstain=doubtful)
    assert [step.tool for step in steps] == ["find_customer", "list_jobs", "cancel_job"]
    off = frozenset({"lookup-chain"})
    assert plan(request, wish, catalogue=unmarked, abstain=doubtful, off=off) == []


def test_an_action_on_a_thing_the_request_says_another_action_on_is_chosen_again() -> None:
    """ "cancel it": the model books a job first (small models book before they cancel).
    Booking and cancelling act on jobs, the request says "cancel", not "book": the booking is
    chosen again, and the model ends the plan instead. Said, or with the rule off, it stands."""
    wish = '1. list_jobs(customer_id="C01482")\n2. book_job(customer_id="C01482")\ndone'
    cancel = "C01482 can't make it on Friday, cancel it"
    assert [step.tool for step in plan(cancel, wish, catalogue=GARAGE)] == ["list_jobs"]
    # (a lookup by the code given, before an action that takes it: rule `code-lookup`)
    off = plan(cancel, wish, catalogue=GARAGE, off=frozenset({"said-action", "code-lookup"}))
    assert [step.tool for step in off] == ["list_jobs", "book_job"]
    book = "C01482 wants a booking for Friday; what does she have now?"
    assert [step.tool for step in plan(book, wish, catalogue=GARAGE)] == ["list_jobs", "book_job"]


def test_a_first_step_whose_values_cannot_be_had_is_chosen_again() -> None:
    """ "What was the last job on BD66 YTR?": the model lists jobs by a day nobody named (the
    only filter it can give: no vehicle id is at hand, and one is needed); chosen again, it
    looks the vehicle up by the plate, a lookup held in doubt until the jobs' lookup the
    request names uses it. With the rule off, the plan ends before it begins."""
    vehicles = _returning(
        _clinic("find_vehicle", {"registration": {"type": "string"}}, ["registration"]),
        "vehicles",
        {"vehicle_id": {"type": "string", "pattern": "^V[0-9]{5}$"}},
    )
    jobs = _clinic(
        "list_jobs",
        {
            "vehicle_id": {"type": "string", "pattern": "^V[0-9]{5}$"},
            "date": {"type": "string", "format": "date"},
        },
        [],
    )
    jobs = msgspec.structs.replace(jobs, parameters={**jobs.parameters, "minProperties": 1})
    request = "What was the last job on BD66 YTR?"
    wish = (
        '1. list_jobs(date="2026-03-09")\n'
        '1. find_vehicle(registration="BD66 YTR")\n'
        "2. list_jobs(vehicle_id=$1.vehicles.0.vehicle_id)\ndone"
    )
    steps = plan(request, wish, catalogue=(vehicles, jobs))
    assert steps == [
        Step(1, "find_vehicle", {"registration": "BD66 YTR"}),
        Step(2, "list_jobs", {"vehicle_id": "$1.vehicles.0.vehicle_id"}),
    ]
    off = frozenset({"retry-ungrounded"})
    assert plan(request, wish, catalogue=(vehicles, jobs), off=off) == []


MAIL_ATTACHING = _clinic(
    "send_mail",
    {
        "to": {"type": "string", "format": "email"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
        "attachment_path": {
            "type": "string",
            "pattern": "^/archive/",
            "description": 'Archive path of a document to attach, e.g. "/archive/invoices/I1.pdf".',
        },
    },
    ["to", "subject", "body"],
    acts=True,
)


def test_a_file_the_request_names_and_no_step_passed_is_attached_to_the_mail() -> None:
    """ "email our courtesy car policy to ann@example.com": the archive documents the policy's
    path (another tool's description), no step reads it, so the mail attaches it (the model
    wrote "Attached." and attached nothing). Read before, its text is the body's, and nothing
    is attached; with the rule off, the model's mail stands."""
    request = "email our courtesy car policy to ann@example.com"
    wish = '1. send_mail(to="ann@example.com", subject="Policy", body="Attached.")\ndone'
    catalogue = (ARCHIVE, MAIL_ATTACHING)
    steps = plan(request, wish, catalogue=catalogue)
    assert steps[0].args["attachment_path"] == "/archive/policies/courtesy-car.md"
    off = plan(request, wish, catalogue=catalogue, off=frozenset({"sends-named"}))
    assert "attachment_path" not in off[0].args
    read = (
        '1. read_file(path="/archive/policies/courtesy-car.md")\n'
        '2. send_mail(to="ann@example.com", subject="Policy", body=$1.content)\ndone'
    )
    steps = plan(request, read, catalogue=catalogue)
    assert [step.tool for step in steps] == ["read_file", "send_mail"]
    assert "attachment_path" not in steps[1].args


MOVE = _clinic(
    "move_appointment",
    {
        "appointment_id": {"type": "string", "pattern": "^A[0-9]{7}$"},
        "new_date": {"type": "string", "format": "date"},
        "new_time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"},
    },
    ["appointment_id", "new_date", "new_time"],
    acts=True,
)


def test_a_first_step_chosen_again_must_take_a_value_the_user_gave_not_a_composed_one() -> None:
    """ "What's the capital of Australia?": a hotel search nobody asked for is chosen again;
    the model's next choice is a query it composed around the request's words. A text the
    model composes is no value the user gave: the retried step is dropped too, no plan. A
    retried step that takes the request's own code stands ("move A2611093 ...")."""
    doubtful = (-50.0, 50.0)  # every first choice is in the band
    wish = (
        '1. search_hotels(city="Canberra", check_in="2026-03-03", nights=1)\n'
        "1. query_sql(sql=\"SELECT capital FROM countries WHERE name='Australia'\")\ndone"
    )
    assert plan("What's the capital of Australia?", wish, abstain=doubtful) == []
    moved = plan(
        "Can you move A2611093 to the 4th at 14:30?",
        '1. find_doctor(name="Petrova", available_on="2026-03-04")\n'
        '1. move_appointment(appointment_id="A2611093", new_date="2026-03-04", '
        'new_time="14:30")\ndone',
        catalogue=(DOCTORS, MOVE),
        abstain=doubtful,
    )
    assert [step.tool for step in moved] == ["move_appointment"]


def _only(*names: str) -> tuple[ToolDescriptor, ...]:
    """The demo catalogue's tools named `names`."""
    return tuple(tool for tool in CATALOGUE if tool.tool_name in names)


def test_a_value_an_earlier_step_took_names_no_later_lookup() -> None:
    """A hotel search for a day, then the weather of that day: the day named the search, and
    says nothing of the weather, which is chosen again (a search, here). Asked for by
    name, or with the rule off, the lookup stands."""
    wish = (
        '1. search_hotels(city="Oslo", check_in="2026-03-05", nights=2)\n'
        '2. get_weather(city="Oslo", date="2026-03-05")\ndone'
    )
    tools = _only("search_hotels", "get_weather")
    hotels = "Hotels in Oslo for 2 nights from 2026-03-05"
    made = [s.tool for s in plan(hotels, wish, catalogue=tools)]
    assert made[0] == "search_hotels"
    assert "get_weather" not in made
    off = plan(hotels, wish, catalogue=tools, off=frozenset({"spent-values"}))
    assert [s.tool for s in off] == ["search_hotels", "get_weather"]
    asked = "Hotels in Oslo for 2 nights from 2026-03-05, and the forecast"
    assert [s.tool for s in plan(asked, wish, catalogue=tools)] == ["search_hotels", "get_weather"]


_BOOKING_ID = {"type": "string", "pattern": "^EVT-[0-9]{6}$"}
VENUE = (
    msgspec.structs.replace(
        _clinic("get_booking", {"booking_id": _BOOKING_ID}, ["booking_id"]),
        returns={
            "type": "object",
            "properties": {
                "booking_id": _BOOKING_ID,
                "contact_email": {"type": "string", "format": "email"},
            },
        },
    ),
    _clinic(
        "cancel_booking",
        {"booking_id": _BOOKING_ID, "reason": {"type": "string", "enum": ["client_request"]}},
        ["booking_id", "reason"],
        acts=True,
    ),
    *_only("send_email"),
)


def test_a_lookup_whose_codes_the_next_action_only_passes_back_is_dropped() -> None:
    """EVT-261044 looked up, then cancelled by the code the lookup passes back: the lookup was
    not needed, and the plan begins again without it (never handed on). An action that uses
    more of the lookup (the contact's address), a request that asks to know something, or
    the rule off keep it; a lookup that is the whole plan is handed on."""
    cancel = 'cancel_booking(booking_id="EVT-261044", reason="client_request")\n'
    wish = (
        '1. get_booking(booking_id="EVT-261044")\n'
        '2. cancel_booking(booking_id=$1.booking_id, reason="client_request")\n'
        f"{cancel}{cancel}done"
    )
    pulled = "EVT-261044 - client's pulled out, can you cancel it pls"
    handed: list[str] = []
    steps = plan(pulled, wish, catalogue=VENUE, on_step=lambda s: handed.append(s.tool))
    assert steps == [
        Step(1, "cancel_booking", {"booking_id": "EVT-261044", "reason": "client_request"})
    ]
    assert handed == ["cancel_booking"]
    off = plan(pulled, wish, catalogue=VENUE, off=frozenset({"code-lookup"}))
    assert [s.tool for s in off] == ["get_booking", "cancel_booking"]
    asked = "EVT-261044: who's the contact? and cancel it please"
    assert [s.tool for s in plan(asked, wish, catalogue=VENUE)] == ["get_booking", "cancel_booking"]
    mail = (
        '1. get_booking(booking_id="EVT-261044")\n'
        '2. send_email(to=$1.contact_email, subject="Cancelled", body="EVT-261044 is off")\ndone'
    )
    tell = "EVT-261044 is cancelled, let the contact know by email"
    assert [s.tool for s in plan(tell, mail, catalogue=VENUE)] == ["get_booking", "send_email"]
    alone: list[str] = []
    whole = plan(
        "EVT-261044 details please",
        '1. get_booking(booking_id="EVT-261044")\ndone',
        catalogue=VENUE,
        on_step=lambda s: alone.append(s.tool),
    )
    assert [s.tool for s in whole] == alone == ["get_booking"]


def test_a_document_an_earlier_step_made_is_attached_where_a_later_one_sends_files() -> None:
    """The invoice issued, then mailed: the mail attaches the document the invoice step made
    (small models write "please find attached" and attach nothing). A path a lookup points to
    is no document the plan made; with the rule off, the model's mail stands."""
    archive = {"type": "string", "pattern": "^/archive/"}
    issue = _clinic("issue_invoice", {"booking_id": _BOOKING_ID}, ["booking_id"], acts=True)
    issue = msgspec.structs.replace(
        issue,
        returns={
            "type": "object",
            "properties": {
                "document_path": archive,
                "billing_email": {"type": "string", "format": "email"},
            },
        },
    )
    mail = _clinic(
        "send_email",
        {
            "to": {"type": "string", "format": "email"},
            "body": {"type": "string"},
            "attachments": {
                "type": "array",
                "items": archive,
                "description": "Archive paths of documents to attach.",
            },
        },
        ["to", "body"],
        acts=True,
    )
    wish = (
        '1. issue_invoice(booking_id="EVT-261187")\n'
        '2. send_email(to=$1.billing_email, body="Please find the invoice attached.")\ndone'
    )
    request = "raise the invoice for EVT-261187 and send it to their accounts contact"
    steps = plan(request, wish, catalogue=(issue, mail))
    assert steps[1].args["attachments"] == ["$1.document_path"]
    off = plan(request, wish, catalogue=(issue, mail), off=frozenset({"sends-made"}))
    assert "attachments" not in off[1].args
    looked_up = msgspec.structs.replace(issue, read_only=True)
    assert "attachments" not in plan(request, wish, catalogue=(looked_up, mail))[1].args
    both = (
        '1. issue_invoice(booking_id="EVT-261187")\n'
        '2. issue_invoice(booking_id="EVT-261188")\n'
        '3. send_email(to=$1.billing_email, body="Please find both attached.")\ndone'
    )
    two = "raise invoices for EVT-261187 and EVT-261188 and send both to their accounts contact"
    sent = plan(two, both, catalogue=(issue, mail))[2]
    assert sent.args["attachments"] == ["$1.document_path", "$2.document_path"]


def test_a_lookup_by_the_codes_given_stays_for_an_action_on_something_else_or_a_later_need() -> (
    None
):
    """The booking looked up, then a mail to someone else that takes none of its codes: the
    lookup is no habit before acting on the booking, and stays. And where the action only
    passed the code back, the plan begins again without the lookup first, but a later step
    may still look the booking up (the contact to tell)."""
    checked = (
        '1. get_booking(booking_id="EVT-261044")\n'
        '2. send_email(to="ops@example.com", body="EVT-261044 checked")\ndone'
    )
    check = "Check EVT-261044 and email ops@example.com that it's checked"
    assert [s.tool for s in plan(check, checked, catalogue=VENUE)] == ["get_booking", "send_email"]
    cancel = 'cancel_booking(booking_id="EVT-261044", reason="client_request")\n'
    wish = (
        '1. get_booking(booking_id="EVT-261044")\n'
        '2. cancel_booking(booking_id=$1.booking_id, reason="client_request")\n'
        f"{cancel}{cancel}"
        '2. get_booking(booking_id="EVT-261044")\n'
        '3. send_email(to=$2.contact_email, body="EVT-261044 is cancelled")\ndone'
    )
    tell = "Cancel EVT-261044 and tell the contact by email"
    assert [s.tool for s in plan(tell, wish, catalogue=VENUE)] == [
        "cancel_booking",
        "get_booking",
        "send_email",
    ]
