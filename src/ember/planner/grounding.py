"""What a request gives that a plan must use, and what a value may be grounded in (pure).

Small models fill parameters with whatever is at hand ("hotel_id": "Paris", a path from a
worked example, an address nobody gave). The decoder (`ember.planner.decoding`) offers such
parameters only values found here: the request's email addresses, absolute paths and codes, the
numbers it states, the codes of the ISO standard a parameter names, real calendar dates.
"""

from __future__ import annotations

import functools
import re
from datetime import date, timedelta
from typing import Any

from ember.plan import Step, references
from ember.planner.compact import value_kind
from ember.planner.dates import annotate_dates
from ember.planner.numbers import spoken_numbers
from ember.tools.descriptor import ToolDescriptor

__all__ = [
    "CODE",
    "EMAIL",
    "NUMERIC",
    "PATH",
    "PATH_FIELD",
    "PATH_PARAMETER",
    "Given",
    "calendar_dates",
    "givens",
    "integers",
    "is_identifier",
    "named_dates",
    "reapplies",
    "source_of",
    "spans_matching",
    "standard_codes",
    "stated_numbers",
    "states",
    "unsupported",
]

EMAIL = re.compile(r"[^@\s\"'<>(),;:]+@[^@\s\"'<>(),;:]+\.[A-Za-z]{2,}")
# A code the user may give for an identifier: letters and digits mixed ("C-20417", "BK-88213"),
# not a measure ("30-minute", "5th").
CODE = re.compile(
    r"(?<![\w/.-])(?![0-9]+(?:-?[a-z]+)\b)(?=[\w-]*[A-Za-z])(?=[\w-]*[0-9])\w[\w-]*\w(?![\w/@-])"
)
QUOTED = re.compile(r"(?<!\w)'([^']{2,})'(?!\w)|\"([^\"]{2,})\"|「([^」]+)」|“([^”]+)”")
PATH = re.compile(r"(?<![\w.])/[\w.-]+(?:/[\w.-]+)*\w")
NUMERIC = re.compile(r"[0-9.]+$")
PATH_PARAMETER = re.compile(r"\b(path|directory|folder)\b", re.IGNORECASE)
PATH_FIELD = re.compile(r"(path|file|dir|folder)", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.,:/-])[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?(?![\w:/]|-[0-9]|[.,][0-9])")


Given = tuple[str, ...]  # a value the request gives, in each form a plan may use it


def givens(request: str) -> list[Given]:
    """The values a request gives that a plan for it uses somewhere: quoted text, email
    addresses, absolute paths, codes ("C-20417"), numbers written in digits (thousands
    separators dropped) and numbers in words or with a unit that count something
    (`ember.planner.numbers`: "two hours" may be used as 2 or as 120). Numbers inside quoted
    text, addresses, paths and codes are part of those, not givens of their own."""
    quoted = ["".join(groups) for groups in QUOTED.findall(request)]
    rest = QUOTED.sub(" ", request)
    emails = EMAIL.findall(rest)
    rest = EMAIL.sub(" ", rest)
    paths = PATH.findall(rest)
    rest = PATH.sub(" ", rest)
    codes = CODE.findall(rest)
    rest = CODE.sub(" ", rest)
    numbers = [number.replace(",", "") for number in NUMBER.findall(rest)]
    found: list[Given] = [(value,) for value in [*quoted, *emails, *paths, *codes, *numbers]]
    found += [tuple(map(_plain, values)) for values in spoken_numbers(rest, counts_only=True)]
    return list(dict.fromkeys(found))


def stated_numbers(request: str) -> set[float]:
    """Every number the request states, in digits or in words, with its conversions."""
    rest = QUOTED.sub(" ", request)
    digits = {float(n.replace(",", "")) for n in NUMBER.findall(EMAIL.sub(" ", rest))}
    return digits | {value for values in spoken_numbers(rest) for value in values}


def unsupported(step: Step, tool: ToolDescriptor, request: str) -> list[str]:
    """The arguments of a first call whose values the request does not give: a number it
    does not state, or a short text (three words at most) it does not contain. A longer text
    is the model's to compose (a query, a message), and a request in Chinese may name a city
    the model writes in English, so neither is judged."""
    properties = tool.parameters.get("properties", {})
    stated = stated_numbers(request)
    lowered = request.casefold()
    composed_elsewhere = bool(re.search(r"[\u3000-\u9fff]", request))
    found = []
    for name, value in step.args.items():
        kind = value_kind(properties.get(name, {}))
        if isinstance(value, bool) or (isinstance(value, str) and value.startswith("$")):
            continue
        if isinstance(value, int | float) and kind in ("integer", "number"):
            if value not in stated:
                found.append(name)
        elif (
            isinstance(value, str)
            and kind == "text"
            and len(value.split()) <= 3
            and value.casefold() not in lowered
            and not composed_elsewhere
        ):
            found.append(name)
    return found


def named_dates(request: str, today: date) -> list[str]:
    """The calendar dates a request names, as written or as its relative phrases mean them
    (`ember.planner.dates`), in order: "tomorrow" on 2026-03-02 -> 2026-03-03."""
    annotated = annotate_dates(request, today)
    found = re.findall(r"(?<![\d-])(\d{4}-\d{2}-\d{2})(?![\d-])", annotated)
    valid = set(calendar_dates(today))
    return [day for day in dict.fromkeys(found) if day in valid]


def integers(request: str) -> list[int]:
    """The whole numbers the request writes in digits (an id may be one: "PR 412")."""
    rest = EMAIL.sub(" ", QUOTED.sub(" ", request))
    found = [n.replace(",", "") for n in NUMBER.findall(rest)]
    return list(dict.fromkeys(int(n) for n in found if n.isdigit()))


def states(request: str, value: str) -> bool:
    """Whether the request says `value`, one of a parameter's choices ("in_progress" is said
    by "in progress"): each of its words of three letters or more begins a word there."""
    words = [word for word in re.split(r"[\s_-]+", value.lower()) if len(word) >= 3]
    text = request.lower()
    return bool(words) and all(re.search(rf"\b{re.escape(word)}", text) for word in words)


def spans_matching(request: str, schema: dict[str, Any]) -> list[str]:
    """The words of the request (also the parts of a hyphenated or slashed one) that a string
    parameter's `pattern` accepts, when the pattern is selective: it rejects most of the
    request's words. Empty otherwise: the value is written freely."""
    pattern = schema.get("pattern")
    if not pattern or schema.get("format") or "enum" in schema:
        return []
    words = [word.strip(".,;:!?()[]'\"“”「」") for word in request.split()]
    parts = [part for word in words for part in (word, *re.split(r"[-/]", word)) if part]
    try:
        accepted = [part for part in parts if re.fullmatch(pattern, part)]
    except re.error:
        return []
    if not accepted or 2 * len({p for p in accepted}) > len(set(words)):
        return []
    return list(dict.fromkeys(accepted))


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def reapplies(step: Step, earlier: list[Step]) -> bool:
    """Whether `step` makes an earlier step's call again, with that step's result in place of
    one argument and every other argument the same."""
    by_id = {s.id: s for s in earlier}
    for name, value in step.args.items():
        for ref in references({name: value}):
            source = by_id.get(ref.step)
            if source is not None and source.tool == step.tool:
                others = {k: v for k, v in step.args.items() if k != name}
                if others == {k: v for k, v in source.args.items() if k != name}:
                    return True
    return False


def standard_codes(schema: dict[str, Any]) -> list[str]:
    """The codes of the ISO standard a three-letter code parameter names (currencies, ISO
    4217; countries, ISO 3166 alpha-3), so that a code is one that exists ("CNY", not "RMB")."""
    description = schema.get("description", "")
    if "ISO 4217" in description or "currency" in description.lower():
        return _iso_codes("currencies")
    if "ISO 3166" in description:
        return _iso_codes("countries")
    return []


@functools.cache
def _iso_codes(table: str) -> list[str]:
    """The sorted alpha-3 codes of a pycountry table, loaded on first use (not at import)."""
    import pycountry

    return sorted(entry.alpha_3 for entry in getattr(pycountry, table))


def is_identifier(name: str, schema: dict[str, Any]) -> bool:
    return value_kind(schema) == "text" and (
        name.lower() == "id" or name.endswith(("_id", "Id", "_ID"))
    )


def source_of(schema: dict[str, Any], tools: dict[str, ToolDescriptor], own: str) -> str | None:
    """The tool whose results a parameter's value comes from, where its description names
    one ("A hotel_id from search_hotels results.")."""
    description = schema.get("description", "")
    for name in tools:
        if name != own and re.search(rf"\bfrom {re.escape(name)}\b", description):
            return name
    return None


def calendar_dates(today: date) -> list[str]:
    """Every date from two years before `today` to three years after it, ISO-formatted."""
    start = today.replace(year=today.year - 2, month=1, day=1)
    end = today.replace(year=today.year + 3, month=12, day=31)
    return [(start + timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]
