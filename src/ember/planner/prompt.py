"""The planner's prompt and output grammar, both derived from the tool catalogue (pure).

The prompt puts the catalogue first, in a fixed order, so that its KV cache can be computed
once and reused by every request; the request and today's date come last. The grammar (GBNF,
llama.cpp's format) admits only plans in ember's JSON plan format naming catalogue tools with
their own argument names, so the model spends tokens only on choices and values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Any

from ember.tools.descriptor import ToolDescriptor

__all__ = [
    "build_grammar",
    "build_prefix",
    "build_request",
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
- Add only the optional arguments the request asks for.
- If no tool can do what is asked, answer {"steps":[]}.

Tools (name(arguments) -> result fields: what it does):
"""

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
    ("2026-01-12", "Order a pizza to my office.", []),
]


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
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type_name(schema.get('items', {}))}"
    return str(kind)


def system_text(catalogue: Sequence[ToolDescriptor]) -> str:
    """The instructions, the catalogue and the examples: the system message."""
    tools = "\n".join(signature(tool) for tool in catalogue)
    known = {tool.tool_name for tool in catalogue}
    shots = []
    for today, request, steps in _EXAMPLES:
        if all(step["tool"] in known for step in steps):
            plan = json.dumps({"steps": steps}, ensure_ascii=False, separators=(",", ":"))
            shots.append(f"Today: {today}. Request: {request}\nPlan: {plan}")
    examples = "\n\nExamples:\n" + "\n".join(shots) if shots else ""
    return f"{_SYSTEM}{tools}{examples}"


def user_text(request: str, today: date) -> str:
    """The user message: today's date (for "tomorrow") and the request."""
    return f"Today: {today.isoformat()} ({today.strftime('%A')}). Request: {request.strip()}"


def build_prefix(catalogue: Sequence[ToolDescriptor]) -> str:
    """The fixed start of every prompt (ChatML): the system message, then the user turn's
    opening. The same for every request, so its KV cache is computed once."""
    return f"<|im_start|>system\n{system_text(catalogue)}<|im_end|>\n<|im_start|>user\n"


def build_request(request: str, today: date) -> str:
    """The part of the prompt after the prefix."""
    return f"{user_text(request, today)}<|im_end|>\n<|im_start|>assistant\n"


def plan_schema(catalogue: Sequence[ToolDescriptor], *, max_steps: int = 12) -> dict[str, Any]:
    """A JSON Schema of plans over `catalogue`, for servers that constrain output with one
    (OpenAI-compatible `response_format`). Every argument may also be a reference string."""
    reference = {"type": "string", "pattern": "^\\{?\\$[0-9]"}
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


# --- grammar -----------------------------------------------------------------------------------

_COMMON = r"""
ws ::= [ ]?
ref ::= "\"" "{"? "$" [1-9] [0-9]? ("." [a-zA-Z0-9_]{1,24}){0,4} "}"? "\""
char ::= [^"\\\x00-\x1f] | "\\" ["\\/bfnrt]
text ::= "\"" char{0,400} "\""
nonempty ::= "\"" char{1,400} "\""
integer ::= "-"? [0-9]{1,9}
number ::= "-"? [0-9]{1,12} ("." [0-9]{1,6})?
date ::= "\"" [0-9]{4} "-" [0-9]{2} "-" [0-9]{2} "\""
code3 ::= "\"" [A-Z]{3} "\""
hhmm ::= "\"" [0-2] [0-9] ":" [0-5] [0-9] "\""
after ::= ",\"after\":[" ([1-9] [0-9]? ("," [1-9] [0-9]?){0,9})? "]"
id ::= [1-9] [0-9]?
"""


def build_grammar(catalogue: Sequence[ToolDescriptor], *, max_steps: int = 12) -> str:
    """A GBNF grammar of plans over `catalogue`."""
    names = [tool.tool_name for tool in catalogue]
    lines = [
        f'root ::= "{{\\"steps\\":[" (step ("," ws step){{0,{max_steps - 1}}})? "]}}"',
        "step ::= " + " | ".join(f"step-{_rule(n)}" for n in names),
    ]
    for tool in catalogue:
        rule = _rule(tool.tool_name)
        lines.append(
            f'step-{rule} ::= "{{\\"id\\":" id ",\\"tool\\":\\"{tool.tool_name}\\",\\"args\\":" '
            f'args-{rule} after? "}}"'
        )
        lines.extend(_args_rules(rule, tool.parameters))
    return "\n".join(lines) + _COMMON


def _rule(name: str) -> str:
    return name.replace("_", "-")


def _args_rules(rule: str, schema: dict[str, Any]) -> list[str]:
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    names = list(props)
    lines = []
    pairs = {}
    for name in names:
        pair = f"kv-{rule}-{_rule(name)}"
        pairs[name] = pair
        lines.append(f'{pair} ::= "\\"{name}\\":" ({_value(props[name])})')
    # The first property written may be any one that has only optional properties before it.
    alternatives = []
    for index, name in enumerate(names):
        tail = " ".join(
            f'("," {pairs[later]})' + ("" if later in required else "?")
            for later in names[index + 1 :]
        )
        alternatives.append(f"{pairs[name]} {tail}".strip())
        if name in required:
            break
    if not required and not schema.get("minProperties"):
        alternatives.append('""')
    body = " | ".join(f"({alt})" for alt in alternatives) if alternatives else '""'
    lines.append(f'args-{rule} ::= "{{" ({body}) "}}"')
    return lines


def _value(schema: dict[str, Any]) -> str:
    """The grammar of one argument's value: its literal form, or a reference."""
    if "enum" in schema:
        return " | ".join(
            '"' + json.dumps(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
            for v in schema["enum"]
        )
    kind = schema.get("type")
    pattern = schema.get("pattern", "")
    if kind == "string":
        if schema.get("format") == "date":
            literal = "date"
        elif pattern == "^[A-Z]{3}$":
            literal = "code3"
        elif pattern.startswith("^([01][0-9]|2[0-3])"):
            literal = "hhmm"
        elif schema.get("minLength"):
            literal = "nonempty"
        else:
            literal = "text"
        return f"{literal} | ref"
    if kind == "integer":
        return "integer | ref"
    if kind == "number":
        return "number | ref"
    if kind == "array":
        item = _value(schema.get("items", {"type": "string"}))
        least = "" if schema.get("minItems") else "?"
        return f'"[" (({item}) ("," ws ({item})){{0,9}}){least} "]" | ref'
    if kind == "boolean":
        return '"true" | "false" | ref'
    return "text | integer | number | ref"
