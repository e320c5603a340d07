"""The planner's prompts and the plan schema, derived from the tool catalogue (pure).

The embedded planner's prompt (ChatML) has three parts, ordered by how often they change: the
instructions, catalogue and worked examples (fixed for a catalogue: their KV cache is computed
once and saved), a calendar of the next two weeks (changes daily), and the request. Plans are
asked for in the compact syntax (`ember.planner.compact`). Servers reached over the OpenAI API
get the JSON plan format instead, with `plan_schema` to constrain their output.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

from ember.plan import Plan
from ember.planner.base import PlanningTask
from ember.planner.compact import json_type, render_plan, render_step
from ember.planner.dates import annotate_dates
from ember.planner.grounding import asks_for_each
from ember.planner.numbers import annotate_numbers
from ember.planner.observe import render_observations
from ember.tools.descriptor import ToolDescriptor

__all__ = [
    "FOR_EACH_HINT",
    "build_dated",
    "build_prefix",
    "build_request",
    "build_round",
    "build_shared_head",
    "calendar_text",
    "compact_system_text",
    "plan_schema",
    "signature",
    "system_text",
    "user_text",
]

_SYSTEM = """You are a planner. You turn the user's request into a plan: the tool calls that \
do what the request asks, in this JSON format:
{"steps":[{"id":1,"tool":"TOOL","args":{...}}, ...]}
Rules:
- Use only the tools below, with their argument names. Dates are YYYY-MM-DD, computed from today.
- One step per tool call. A later step uses an earlier step's result with a reference: the \
string "$N.field" (step N's field; list items by index: "$1.hotels.0.hotel_id"), or "{$N.field}" \
inside a longer text.
- To make the same call for each item of an earlier list result, add "each":"$N.list" to the \
step and use "$item" or "$item.field" in its arguments.
- Add only the optional arguments the request asks for.
- If no tool can do what is asked, answer {"steps":[]}.

Tools (name(arguments) -> result fields: what it does):
"""

_COMPACT_SYSTEM = """You are a planner. You turn the user's request into the tool calls that do \
what it asks, one call per line, then the line "done". For example:
1. tool_a(text="some text", count=2)
2. tool_b(value=$1.field)
done
Rules:
- Use only the tools below, with their argument names. Dates are YYYY-MM-DD, computed from today.
- One call for every action the request asks for: two cities, two customers or two conversions \
are two calls.
- A call that needs an earlier call's result refers to it: $N.field is step N's field (list \
items by index: $1.hotels.0.hotel_id); inside a text write {$N.field}.
- Write " after N" at the end of a call that must wait for step N but uses none of its results.
- Add optional arguments (marked ?) only when the request asks for them.
- If no tool can do what is asked, write only: done
"""
_SYSTEM_OPEN = "<|im_start|>system\n"  # ChatML: the system message's opening
_TOOLS_HEADING = "\nTools (name(arguments) -> result fields: what it does):\n"

# Found, not booked: the booking example alone taught the model to book every cheapest hotel
# it was asked to find ("find the cheapest hotel in each and email me"). Shown only with the
# tools it uses: it teaches a distinction among them, not the syntax.
_FOUND_NOT_BOOKED = (
    "2026-01-12",
    "Find the cheapest hotel in Madrid for 3 nights from Friday and email it to lee@example.com.",
    [
        {
            "id": 1,
            "tool": "search_hotels",
            "args": {"city": "Madrid", "check_in": "2026-01-16", "nights": 3},
        },
        {
            "id": 2,
            "tool": "send_email",
            "args": {
                "to": "lee@example.com",
                "subject": "Cheapest hotel in Madrid",
                "body": "{$1.hotels.0.name}, {$1.hotels.0.price_per_night} a night.",
            },
        },
    ],
)
_EXAMPLES = [
    (
        "2026-01-12",
        "How much is 80 euros in Japanese yen?",
        [
            {
                "id": 1,
                "tool": "convert_currency",
                "args": {"amount": 80, "from_currency": "EUR", "to_currency": "JPY"},
            }
        ],
    ),
    (
        "2026-01-12",
        "Book the cheapest hotel in Berlin for 2 nights from January 20 and email "
        "the booking reference to sam@example.org.",
        [
            {
                "id": 1,
                "tool": "search_hotels",
                "args": {"city": "Berlin", "check_in": "2026-01-20", "nights": 2},
            },
            {
                "id": 2,
                "tool": "book_hotel",
                "args": {"hotel_id": "$1.hotels.0.hotel_id", "check_in": "2026-01-20", "nights": 2},
            },
            {
                "id": 3,
                "tool": "send_email",
                "args": {
                    "to": "sam@example.org",
                    "subject": "Hotel booking",
                    "body": "Booked {$2.hotel_name}, reference {$2.booking_id}.",
                },
            },
        ],
    ),
    _FOUND_NOT_BOOKED,
    (
        "2026-01-12",
        "What's the weather in Oslo and in Bergen this Saturday?",
        [
            {"id": 1, "tool": "get_weather", "args": {"city": "Oslo", "date": "2026-01-17"}},
            {"id": 2, "tool": "get_weather", "args": {"city": "Bergen", "date": "2026-01-17"}},
        ],
    ),
    (
        "2026-01-12",
        "Summarize /srv/notes/q1.txt in at most 50 words and save the summary to "
        "/srv/notes/q1-summary.txt.",
        [
            {"id": 1, "tool": "read_file", "args": {"path": "/srv/notes/q1.txt"}},
            {"id": 2, "tool": "summarize_text", "args": {"text": "$1.content", "max_words": 50}},
            {
                "id": 3,
                "tool": "write_file",
                "args": {"path": "/srv/notes/q1-summary.txt", "content": "$2.summary"},
            },
        ],
    ),
    ("2026-01-12", "Order a pizza to my office.", []),
]
# The examples that teach the syntax: those a catalogue with other tools is shown, and two of
# which a catalogue must have the tools of to be shown its own. An example that teaches a
# distinction among the demo tools only adds to a prompt that shows them.
_SYNTAX_EXAMPLES = [example for example in _EXAMPLES if example is not _FOUND_NOT_BOOKED]


def signature(tool: ToolDescriptor) -> str:
    """`name(arg: type, opt?: type) -> field, field: description` for the prompt."""
    props: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    args = ", ".join(
        f"{name}{'' if name in required else '?'}: {_type_name(schema)}"
        for name, schema in props.items()
    )
    fields = ", ".join((tool.returns or {}).get("properties", {}))
    return f"{tool.tool_name}({args}) -> {{{fields}}}: {tool.description}"


def _type_name(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(value) for value in schema["enum"])
    if schema.get("format") == "date":
        return "date"
    kind = json_type(schema) or "any"
    if kind == "array":
        return f"list of {_type_name(schema.get('items', {}))}"
    return kind


def system_text(catalogue: Sequence[ToolDescriptor]) -> str:
    """The instructions, the catalogue and the examples: the system message."""
    tools = "\n".join(signature(tool) for tool in catalogue)
    shots = []
    for today, request, steps in _fitting(catalogue):
        plan = json.dumps({"steps": steps}, ensure_ascii=False, separators=(",", ":"))
        shots.append(f"Today: {today}. Request: {request}\nPlan: {plan}")
    examples = "\n\nExamples:\n" + "\n".join(shots) if shots else ""
    return f"{_SYSTEM}{tools}{examples}"


def compact_system_text(catalogue: Sequence[ToolDescriptor]) -> str:
    """The system message for plans in the compact syntax (`ember.planner.compact`)."""
    if _shows_own_examples(catalogue):
        return _with_own_examples(catalogue, _fitting(catalogue))
    tools = "\n".join(signature(tool) for tool in catalogue)
    return f"{_shared_system()}{tools}"


def _with_own_examples(
    catalogue: Sequence[ToolDescriptor], examples: Sequence[tuple[str, str, list[dict[str, Any]]]]
) -> str:
    """The system message that shows `examples`, over the catalogue's own tools, after them."""
    tools = "\n".join(signature(tool) for tool in catalogue)
    return f"{_COMPACT_SYSTEM}{_TOOLS_HEADING}{tools}\n\nExamples:\n{_shots(examples)}"


def _fitting(catalogue: Sequence[ToolDescriptor]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """The worked examples whose every tool the catalogue has."""
    known = {tool.tool_name for tool in catalogue}
    return [e for e in _EXAMPLES if all(step["tool"] in known for step in e[2])]


def _shows_own_examples(catalogue: Sequence[ToolDescriptor]) -> bool:
    """Whether the catalogue has the tools of more than one syntax example, so that the
    prompt shows the examples it has the tools of, after its tools."""
    return len([e for e in _fitting(catalogue) if e in _SYNTAX_EXAMPLES]) > 1


@functools.cache
def _shared_system() -> str:
    """The system message's start for a catalogue without the examples' tools. The examples
    still teach the syntax (the decoder only lets the model name this catalogue's tools);
    without any, a small model writes `done`. They come before the tools, so that every such
    catalogue's prompt starts with the same text."""
    return (
        f"{_COMPACT_SYSTEM}\nExamples, from a catalogue with other tools:\n"
        f"{_shots(_SYNTAX_EXAMPLES)}\n{_TOOLS_HEADING}"
    )


def _shots(examples: Sequence[tuple[str, str, list[dict[str, Any]]]]) -> str:
    shots = []
    for today, request, steps in examples:
        plan = render_plan(Plan.from_json({"steps": steps}).steps)
        shots.append(f"{user_text(request, date.fromisoformat(today))}\nPlan:\n{plan}")
    return "\n\n".join(shots)


def user_text(request: str, today: date, *, numbers: bool = True) -> str:
    """The user message: today's date and the request, its relative dates and (`numbers`) its
    numbers in words or with units written out ("tomorrow (2026-03-03)", "two hours (120
    minutes)")."""
    return _today_line(today) + _request_text(request, today, numbers=numbers)


def _today_line(today: date) -> str:
    """The user message's opening, the same for every request of a day."""
    return f"Today: {today.isoformat()} ({today.strftime('%A')}). Request:"


def _request_text(request: str, today: date, *, numbers: bool) -> str:
    """The request as the user message has it after its opening (a space first: the opening
    ends a pre-token at its colon, so the two read as the same tokens apart or together)."""
    request = annotate_dates(request.strip(), today)
    return " " + (annotate_numbers(request) if numbers else request)


def build_prefix(catalogue: Sequence[ToolDescriptor]) -> str:
    """The fixed start of every prompt (ChatML): the system message's instructions, catalogue and
    examples. The same for every request, so its KV cache is computed once (and saved to disk)."""
    return f"{_SYSTEM_OPEN}{compact_system_text(catalogue)}"


def build_shared_head(catalogue: Sequence[ToolDescriptor]) -> str:
    """The start of `build_prefix(catalogue)` that does not depend on the catalogue's tools:
    the instructions and the syntax examples, where they come before the tools (a catalogue
    without the examples' tools); "" where the catalogue is shown its own examples. Its KV
    cache is shared by every such catalogue, and each catalogue's tools are read after it."""
    return "" if _shows_own_examples(catalogue) else f"{_SYSTEM_OPEN}{_shared_system()}"


def calendar_text(today: date) -> str:
    """The dates of the next two weeks by weekday, so that a small model copies "this Thursday"
    or "next Monday" instead of computing it."""

    def day(offset: int) -> str:
        when = today + timedelta(days=offset)
        return f"{when.strftime('%A')} {when.isoformat()}"

    rest_of_week = 6 - today.weekday()
    this_week = ", ".join(day(n) for n in range(2, rest_of_week + 1)) or "none"
    next_week = ", ".join(day(n) for n in range(rest_of_week + 1, rest_of_week + 8))
    return (
        f"Calendar: today is {day(0)}; tomorrow is {day(1)}. Later this week: {this_week}. "
        f"Next week: {next_week}."
    )


def build_dated(today: date) -> str:
    """The part of the prompt that changes once a day: the calendar, then the user turn's
    opening with today's date (`Today: ... Request:`). Its KV cache is computed on the day's
    first request and kept, so a request reads only its own words and the prompt's closing."""
    return f"\n\n{calendar_text(today)}<|im_end|>\n<|im_start|>user\n{_today_line(today)}"


# Said after a request that asks for something done to each of several things, and only then:
# the prompt's fixed part (and the plans of every other request) stays as it was.
FOR_EACH_HINT = (
    "\n(The same call for each item of an earlier list result is written after "
    '"for each item in $N.list: ", with $item or $item.field in it, e.g. '
    "2. for each item in $1.files: read_file(path=$item))"
)


def build_request(request: str, today: date, *, numbers: bool = True) -> str:
    """The part of the prompt after the dated part: the request's words (and, when it asks for
    something done to each of several things, how a step over a list is written), then the
    assistant's opening."""
    user = _request_text(request, today, numbers=numbers) + _hint(request)
    return f"{user}<|im_end|>\n<|im_start|>assistant\nPlan:\n"


def _hint(request: str) -> str:
    return FOR_EACH_HINT if asks_for_each(request) else ""


def build_round(task: PlanningTask, *, numbers: bool = True) -> str:
    """The part after the dated part for a round of planning on: the request, the results so
    far (fenced as data), then the plan so far, which the model continues (`done` if it is
    complete)."""
    user = _request_text(task.request, task.today, numbers=numbers) + _hint(task.request)
    results = render_observations(task.observations)
    plan = "".join(f"{render_step(step)}\n" for step in task.earlier)
    return f"{user}\n\n{results}<|im_end|>\n<|im_start|>assistant\nPlan:\n{plan}"


def plan_schema(catalogue: Sequence[ToolDescriptor], *, max_steps: int = 12) -> dict[str, Any]:
    """A JSON Schema of plans over `catalogue`, for servers that constrain output with one
    (OpenAI-compatible `response_format`). Every argument may also be a reference string."""
    reference = {"type": "string", "pattern": "^\\{?\\$([0-9]|item)"}
    variants = []
    for tool in catalogue:
        props = tool.parameters.get("properties", {})
        args = {
            "type": "object",
            "properties": {name: {"anyOf": [schema, reference]} for name, schema in props.items()},
            "required": list(tool.parameters.get("required", [])),
            "additionalProperties": False,
        }
        variants.append(
            {
                "type": "object",
                "properties": {
                    "id": {"type": "integer", "minimum": 1},
                    "tool": {"const": tool.tool_name},
                    "args": args,
                    "after": {"type": "array", "items": {"type": "integer"}},
                    "each": {"type": "string", "pattern": "^\\$[0-9]"},
                },
                "required": ["id", "tool", "args"],
                "additionalProperties": False,
            }
        )
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": {"anyOf": variants}, "maxItems": max_steps}
        },
        "required": ["steps"],
        "additionalProperties": False,
    }
