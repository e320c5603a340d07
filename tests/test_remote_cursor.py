"""`ServerCursor` against a scripted server: the completions it asks for (prompt, grammar, stop)
and how it reads the answers. The real server is in tests/test_planner_openai.py."""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ember.errors import PlannerError
from ember.planner.compact import render_step
from ember.planner.decoding import PlanDecoder
from ember.planner.remote import ServerCursor, _joined, gbnf_literal, post_json

from .test_decoding import CATALOGUE, PLAN, TODAY, plan


class Server:
    """Answers each completion with the next scripted text; keeps the requests."""

    def __init__(self, *texts: str, top: dict[str, float] | None = None) -> None:
        self.texts = list(texts)
        self.top = top
        self.requests: list[dict[str, Any]] = []

    def __call__(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        if "logprobs" in body:
            return {"choices": [{"text": "", "logprobs": {"top_logprobs": [self.top]}}]}
        text = self.texts.pop(0)
        return {"choices": [{"text": text}], "usage": {"completion_tokens": max(1, len(text))}}


def _cursor(server: Server, prompt: str = "Plan:\n") -> ServerCursor:
    cursor = ServerCursor(server, "http://127.0.0.1:1/v1/completions", "m")
    cursor.read(prompt)
    return cursor


def test_a_choice_is_walked_a_token_at_a_time_under_a_grammar_of_the_options_left() -> None:
    server = Server(" search", "_hotels")
    cursor = _cursor(server, "Plan:\n1.")
    options = [" get_weather(", " search_flights(", " search_hotels("]
    assert cursor.choose(options) == 2
    assert cursor.text == "Plan:\n1. search_hotels("
    first, second = (request["grammar"] for request in server.requests)
    assert first.startswith('root ::= (" get_weather(" | " search_flights(" | " search_hotels(")')
    assert second.startswith('root ::= ("_flights(" | "_hotels(")')  # " search" was read
    assert server.requests[1]["prompt"] == "Plan:\n1. search"
    assert all(r["temperature"] == 0 and r["max_tokens"] == 1 for r in server.requests)


def test_trailing_spaces_are_written_by_the_model_with_the_word_after_them() -> None:
    """A prompt ending in a lone space token reads as odd text: the weather request was planned
    as a currency conversion until the space was left for the model to write (" get")."""
    server = Server(" get")
    cursor = _cursor(server, "Plan:\n")
    cursor.force("1. ")
    assert cursor.choose(["get_weather(", "convert_currency("]) == 0
    assert server.requests[0]["prompt"] == "Plan:\n1."
    assert server.requests[0]["grammar"].startswith('root ::= (" get_weather(" | " convert')
    assert cursor.text == "Plan:\n1. get_weather("


def test_a_token_past_an_option_s_end_takes_it_and_is_cut_there() -> None:
    server = Server('")\n2')
    cursor = _cursor(server, 'f(x="a')
    cursor.force('"')
    assert cursor.choose([")\n", ") after ", ", y="]) == 0
    assert cursor.text == 'f(x="a")\n'


def test_the_forced_closing_quote_is_written_again_with_what_follows_it() -> None:
    """`"` then `)` is not how the model's tokenizer cuts `")\n`: shown a lone quote, the
    model closed parallel calls with ` after 1` (a dependency nobody asked for)."""
    server = Server('")\n')
    cursor = _cursor(server, 'f(x="a')
    cursor.force('"')
    cursor.choose([")\n", ") after "])
    assert server.requests[0]["prompt"] == 'f(x="a'
    assert server.requests[0]["grammar"].startswith('root ::= ("\\")\\n" | "\\") after ")')


def test_a_server_that_ignores_the_grammar_is_named() -> None:
    cursor = _cursor(Server("Sure! Here is"))
    with pytest.raises(PlannerError, match="does the server take a GBNF `grammar`"):
        cursor.choose(["a(", "b("])


def test_a_value_ends_at_its_closing_which_is_left_to_the_caller() -> None:
    server = Server('Paris", date')  # the closing's token ran on: cut at the stop string
    cursor = _cursor(server, 'get_weather(city="')
    text, opened = cursor.sample("text", b'"', 20)
    assert (text, opened) == ("Paris", False)
    assert cursor.text == 'get_weather(city="Paris'
    request = server.requests[0]
    assert request["stop"] == ['"']
    assert request["max_tokens"] == 20
    assert request["grammar"] == 'root ::= "" [^"\\\\$\\x00-\\x1f]* (["] [^\\x00]*)?'


def test_a_value_that_runs_on_past_a_whole_text_it_may_end_as_is_cut_there() -> None:
    server = Server("All done. after 1")
    cursor = _cursor(server, 'post(text="')
    assert cursor.sample("text", b'"', 20, ends=["All done."]) == ("All done.", False)
    assert cursor.text == 'post(text="All done.'


def test_a_text_may_open_an_embedded_reference() -> None:
    server = Server(" Converted: {$")
    cursor = _cursor(server, 'send_email(body="')
    cursor.force(" ")  # healed: the model writes the space with its word
    text, opened = cursor.sample("text", b'"', 50, openers=True)
    assert opened
    assert text == "Converted: {$"
    assert cursor.text == 'send_email(body=" Converted: {$'
    assert '"{" "$"?' in server.requests[0]["grammar"]
    assert server.requests[0]["grammar"].startswith('root ::= " " [^"\\\\${')


def test_numbers_and_codes_keep_to_their_characters_and_length() -> None:
    server = Server("=120)", "EUR")
    cursor = _cursor(server, "f(amount")
    cursor.force("=")  # healed: written again by the model, with the number
    assert cursor.sample("integer", b",)]", 16) == ("120", False)
    assert server.requests[0]["grammar"] == 'root ::= "=" [0-9]* ([,)\\]] [^\\x00]*)?'
    assert cursor.text == "f(amount=120"
    cursor.force(', code="')
    assert cursor.sample("code3", b'"', 16) == ("EUR", False)
    assert "[A-Z]{0,3}" in server.requests[1]["grammar"]


def test_the_first_choice_margin_is_read_from_the_top_log_probabilities() -> None:
    server = Server(top={"1": -0.1, "done": -4.1, "Done": -6.0})
    cursor = _cursor(server)
    assert cursor.margin(b"1. ", b"done") == pytest.approx(4.0)
    assert cursor.passes == 1
    request = server.requests[0]
    # streamed: llama-cpp-python then computes one position's log-probabilities (not 4k)
    assert request["stream"] is True
    assert request["logprobs"] == 20
    assert request["grammar"].startswith('root ::= ("1. " | "done")')  # never end of text


def test_a_choice_missing_from_the_top_ones_is_bounded_by_the_lowest_of_them() -> None:
    """A request no tool fits has `1` far down: read as "no margin", it was planned."""
    no_step = Server(top={"done": -0.2, "Sure": -3.0, "I": -5.5})
    assert _cursor(no_step).margin(b"1. ", b"done") == pytest.approx(-5.3)  # at most
    no_done = Server(top={"1": -0.1, "2": -7.0})
    assert _cursor(no_done).margin(b"1. ", b"done") == pytest.approx(6.9)  # at least
    assert _cursor(Server(top={"x": -1.0})).margin(b"1. ", b"done") is None
    assert _cursor(Server(top={})).margin(b"1. ", b"done") is None


def test_a_value_the_grammar_would_not_allow_is_named() -> None:
    """A server that ignores the grammar: the value was cut by the healed head's length
    (`aris`) and the number read as 0."""
    cursor = _cursor(Server("Paris"), "f(amount")
    cursor.force("=")
    with pytest.raises(PlannerError, match=r"wrote 'Paris', which its grammar did not allow"):
        cursor.sample("integer", b",)]", 16)


def test_a_streamed_completion_is_joined_in_either_server_s_shape() -> None:
    old = {"text": "1", "logprobs": {"top_logprobs": [{"1": -0.1, "done": -3.0}]}}
    new = {
        "text": "1",
        "logprobs": {
            "content": [
                {
                    "top_logprobs": [
                        {"token": "1", "logprob": -0.1},
                        {"token": "done", "logprob": -3.0},
                    ]
                }
            ]
        },
    }
    for choice in (old, new):
        events = f"data: {json.dumps({'choices': [choice]})}\n\ndata: [DONE]\n\n"
        assert _joined(events) == {
            "choices": [{"text": "1", "logprobs": {"top_logprobs": [{"1": -0.1, "done": -3.0}]}}]
        }


@pytest.fixture
def http_server() -> Iterator[str]:
    """A loopback HTTP server: 500 for /fail, a body that is no JSON for /garbage."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            status, body = (500, b"model not loaded") if self.path == "/fail" else (200, b"<html>")
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_server_s_errors_are_named_with_its_address(http_server: str) -> None:
    with httpx.Client(timeout=5) as client:
        post = post_json(client)
        with pytest.raises(PlannerError, match=r"/fail answered HTTP 500: model not loaded"):
            post(f"{http_server}/fail", {})
        with pytest.raises(PlannerError, match=r"/garbage answered with no completion: '<html>'"):
            post(f"{http_server}/garbage", {})


def test_a_cancelled_plan_sends_no_more_requests() -> None:
    cancelled = threading.Event()
    server = Server(" a")
    cursor = ServerCursor(server, "http://127.0.0.1:1/v1/completions", "m", cancelled=cancelled)
    cursor.read("x")
    cancelled.set()
    with pytest.raises(PlannerError, match="cancelled"):
        cursor.choose([" a", " b"])
    assert server.requests == []


def test_gbnf_literals_escape_quotes_backslashes_and_newlines() -> None:
    assert gbnf_literal('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


def test_a_space_the_model_wrote_is_kept_and_the_walk_goes_on_after_it() -> None:
    """Qwen writes the space before a digit as a token of its own: taken back to be healed,
    the same space was asked for again and again (a loop of identical completions)."""
    server = Server(" ", "2")
    cursor = _cursor(server, "f(x=1) after")
    assert cursor.choose([" 1", " 2"]) == 1
    assert [r["prompt"] for r in server.requests] == ["f(x=1) after", "f(x=1) after "]
    assert cursor.text == "f(x=1) after 2"


MARK = "\nPLAN"  # the start of PLAN, which healing leaves in the prompt


class WishfulServer:
    """A completions endpoint whose model wants to write `wish` after the prompt's PLAN line and
    honours the grammar it is sent: a choice is answered with the whole option the wish goes
    on with (one token), a value with the wish up to its closing. A wish the grammar forbids
    fails the test."""

    def __init__(self, wish: str) -> None:
        self.wish = PLAN.removeprefix(MARK) + wish

    def __call__(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["prompt"]
        written = prompt[prompt.rindex(MARK) + len(MARK) :]  # PLAN's `:\n` may be healed
        assert self.wish.startswith(written), f"{written!r} strays from {self.wish!r}"
        rest = self.wish[len(written) :]
        grammar = body["grammar"]
        literal = r'"((?:[^"\\]|\\.)*)"'
        if "logprobs" in body:
            step, done = (-10.0, 0.0) if rest.startswith("done") else (0.0, -10.0)
            top = {"1": step, "done": done}
            return {"choices": [{"text": "", "logprobs": {"top_logprobs": [top]}}]}
        if "stop" not in body:  # a choice: `root ::= ("a" | "b") [^\x00]*`
            alternatives = grammar.removeprefix("root ::= (").rsplit(")", 1)[0]
            options = [json.loads(f'"{text}"') for text in re.findall(literal, alternatives)]
            fitting = [option for option in options if rest.startswith(option)]
            assert fitting, f"the wish {rest!r} is none of {options}"
            return {"choices": [{"text": max(fitting, key=len)}]}
        # a value: `root ::= "head" [chars]* ([closers] [^\x00]* | "{" "$"?)?`
        found = re.match(f"root ::= {literal}", grammar)
        assert found is not None
        head = json.loads(f'"{found.group(1)}"')
        assert rest.startswith(head)
        ends = [rest.find(c, len(head)) for c in body["stop"]]
        if '"{" "$"?' in grammar:
            ends.append(rest.find("{$", len(head)) + 1)
        end = min(at for at in ends if at > 0)
        return {"choices": [{"text": rest[: end + 1]}]}


@pytest.mark.parametrize(
    ("request_text", "wish"),
    [
        (
            "What's the weather in Oslo on 2026-03-05?",
            '1. get_weather(city="Oslo", date="2026-03-05")\ndone',
        ),
        (
            "Convert 100 USD to EUR and email the result to bob@example.com",
            '1. convert_currency(amount=100, from_currency="USD", to_currency="EUR")\n'
            '2. send_email(to="bob@example.com", subject="Converted", '
            'body="It is {$1.amount} EUR.") after 1\ndone',
        ),
        (
            "Weather in Oslo and in Rome on 2026-03-05",
            '1. get_weather(city="Oslo", date="2026-03-05")\n'
            '2. get_weather(city="Rome", date="2026-03-05")\ndone',
        ),
    ],
)
def test_the_decoder_over_a_server_plans_as_over_the_model_itself(
    request_text: str, wish: str
) -> None:
    """The same decoder, the same wish: the plan over `ServerCursor` is the plan over the local
    `Cursor` (both the wish, where every value is grounded)."""
    cursor = ServerCursor(WishfulServer(wish), "http://127.0.0.1:1/v1/completions", "m")
    decoder = PlanDecoder(cursor, CATALOGUE, today=TODAY, request=request_text)
    over_server = decoder.decode(f"Request: {request_text}\n{PLAN}", on_step=lambda _: None)
    assert over_server == plan(request_text, wish)
    assert "\n".join(render_step(step) for step in over_server) + "\ndone" == wish
