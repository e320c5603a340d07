"""What a request gives that a plan must use, and what a value may be grounded in (pure).

Small models fill parameters with whatever is at hand ("hotel_id": "Paris", a path from a
worked example, an address nobody gave). The decoder (`ember.planner.decoding`) offers such
parameters only values found here: the request's email addresses, absolute paths and codes, the
numbers it states, the codes of the ISO standard a parameter names, real calendar dates.
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
import re
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from typing import Any

import msgspec

from ember.plan import ITEM, ITEM_TOOL, Step, references, step_ref
from ember.planner.compact import (
    clashing_paths,
    coded_paths,
    field_paths,
    json_type,
    text_paths,
    value_kind,
)
from ember.planner.dates import annotate_dates, stated_days
from ember.planner.numbers import spoken_numbers
from ember.planner.quotes import QUOTED, quoted_texts, unquoted
from ember.tools.descriptor import ToolDescriptor

__all__ = [
    "CODE",
    "EMAIL",
    "NUMERIC",
    "PATH",
    "PATH_FIELD",
    "PATH_PARAMETER",
    "Given",
    "Grounds",
    "acts_marked",
    "acts_unasked",
    "asks_for_each",
    "asks_to_wait",
    "breaks_pattern",
    "calendar_dates",
    "declines",
    "file_fields",
    "fits_role",
    "free_text",
    "givens",
    "inquires",
    "integers",
    "is_identifier",
    "is_lookup",
    "is_path",
    "listed_names",
    "name_rivals",
    "named_dates",
    "named_files",
    "names_tool",
    "needs_answer",
    "placed",
    "reads_back",
    "reapplies",
    "recipients",
    "relative_paths",
    "said_as",
    "said_at",
    "says_action",
    "shared_subjects",
    "source_of",
    "spans_matching",
    "standard_codes",
    "stated_numbers",
    "states",
    "unspaced",
    "unsupported",
]

EMAIL = re.compile(r"[^@\s\"'<>(),;:]+@[^@\s\"'<>(),;:]+\.[A-Za-z]{2,}")
# A code the user may give for an identifier: letters and digits mixed ("C-20417", "BK-88213"),
# not a measure ("30-minute", "5th").
CODE = re.compile(
    r"(?<![\w/.-])(?![0-9]+(?:-?[a-z]+)\b)(?=[\w-]*[A-Za-z])(?=[\w-]*[0-9])\w[\w-]*\w(?![\w/@-])"
)
PATH = re.compile(r"(?<![\w.])/[\w.-]+(?:/[\w.-]+)*\w")
NUMERIC = re.compile(r"[0-9.]+$")
PATH_PARAMETER = re.compile(r"\b(paths?|director(?:y|ies)|folders?)\b", re.IGNORECASE)
# A parameter named like a path (`path`, `folder`, `output_dir`, `report_folder`), not one
# that only ends like one (`sort_dir`: a direction, `json_path`: an expression).
PATH_NAME = re.compile(
    r"(?:(?:file|input|output|out|target|source|dest|destination|base|root|work)_?)?"
    r"(?:path|dir|directory|folder)|\w+_(?:folder|directory)",
    re.IGNORECASE,
)
# A relative path as a request spells it: a name with a slash ("statements/", "out/ledger.csv")
# or a file name with an extension ("acme.csv"); not part of an absolute path or a URL.
RELATIVE_PATH = re.compile(
    r"(?<![\w./:@~-])(?:(?:[\w.-]+/)+(?:[\w.-]*\w)?"
    r"|[\w-]+(?:\.[\w-]+)*\.(?:[a-z][a-z0-9]{0,4}|[A-Z][A-Z0-9]{1,4})\b)"
)
# Not paths, though spelled like one: domains, words joined by a slash ("and/or", "CEO/CFO",
# "Q3/Q4"), dates ("2026/03/02"), abbreviations ("e.g", "Ph.D").
_DOMAIN = re.compile(r"\.(?:com|org|net|io|dev|ai|co|edu|gov|uk|de|fr|eu)$", re.IGNORECASE)
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
PATH_FIELD = re.compile(r"(path|file|dir|folder)", re.IGNORECASE)
# Pieces of the number patterns: not inside a word, a decimal, a time, a path or a code ("v2",
# "3.10.2", "10:30", "/a/5m", "C-20417"); and a number, as written in a value.
_APART = r"(?<![\w.,:/-])"
_AMOUNT = r"([0-9]+(?:\.[0-9]+)?)"
NUMBER = re.compile(rf"{_APART}[0-9]+(?:,[0-9]{{3}})*(?:\.[0-9]+)?(?![\w:/]|-[0-9]|[.,][0-9])")
# A phone number as people write one, international or with the trunk prefix: "+44 7700
# 900123", "07700 900123", "0044 20 7946 0018" (9 to 16 digits, in groups).
# (A colon after one ends it, "Text 07700 900777: ..."; not one that goes on, a time "10:30".)
PHONE = re.compile(r"(?<![\w+.,:/-])(?:\+|0)[0-9](?:[ -]?[0-9]){7,14}(?![\w/-]|:\w|[.,][0-9])")
# A path a tool's documentation spells, placeholders and all ("/archive/<job_id>.txt").
_DOCUMENTED_PATH = re.compile(r"(?<![\w.])/[\w.<>{}-]+(?:/[\w.<>{}-]+)*[\w>}]")
# A country calling code a parameter documents ("UK numbers: +44 and drop the leading 0"), and
# an example number, international or national ("07700 900123 -> +447700900123").
# A code is not the start of a number cut short ("+447..." is +44 7...), and an example may be
# one ("UK 07... numbers become +447...").
_CALLING_CODE = re.compile(r"\+([1-9][0-9]{0,2})(?![0-9]|\.\.|…)")
_EXAMPLE_NUMBER = re.compile(r"(?<![\w+])(\+?)([0-9](?:[ -]?[0-9]){7,14})(?![\w])")
_ELIDED_NUMBER = re.compile(r"(?<![\w+])(\+?)([0-9]{1,6})(?:\.\.|…)")


Given = tuple[str, ...]  # a value the request gives, in each form a plan may use it
_QUANTIFIER = re.compile(
    r"\b(each|every|(?<!\bat )all(?!\s+(?:along|clear|day|done|fine|good|in|ok|okay|over|"
    r"ready|right|set|sorted|the\s+best|together|well|working)\b)|everyone|everybody|"
    r"(?P<counted>both|(the|these|those) (two|three|four|five|six|seven|eight|nine|ten) \w+s))\b",
    re.IGNORECASE,
)


def asks_for_each(request: str, *, counted_too: bool = True) -> bool:
    """Whether a request asks for something done to each (every, all, both, "the three
    files") of several things: only then is a step over a list offered. Quoted text is what
    the request hands over, not what it asks ("shorten this: '... everyone must ...'"); "all"
    in a phrase that counts nothing ("it's all working again", "at all", "all set") is no
    quantifier.
    `counted_too=False`: of things it does not count ("each", "every", "all"): "both" and "the
    three files" say how many, so each of them is a step of its own (`$1.files.0`, `.1`)."""
    quantifiers = _QUANTIFIER.finditer(unquoted(request))
    return any(counted_too or not match["counted"] for match in quantifiers)


_INQUIRY = "what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did"
_ASKS = re.compile(
    rf"^\s*({_INQUIRY}|can|could"
    r"|should|will|tell me|show me|give me|let me know|list|summari[sz]e|compare|explain|"
    r"describe|find out|count|rank|outline|draft|write up|produce|prepare|analy[sz]e)\b",
    re.IGNORECASE,
)
_TELL = re.compile(r"\b(tell me|show me|let me know|give me)\b", re.IGNORECASE)
_DELIVERS = re.compile(
    r"\b(e-?mail|send|save|write|store|post|book|create|schedule|move|mail)\b[^?]*"
    r"\b(to|into|in|as)\s+(\S+@\S+|/\S+|\S+\.(txt|md|json|csv))",
    re.IGNORECASE,
)
# A question that asks to know, not to have something done ("Can you book ...?" asks for an
# action; "What is the cheapest hotel ...?" does not).
_INQUIRES = re.compile(rf"^\W*({_INQUIRY})\b", re.IGNORECASE)


def needs_answer(request: str) -> bool:
    """Whether a request asks a question or for a written product (the answer is then written
    by the model), rather than for actions whose record is the answer. A request that says
    where the product goes (an address, a path, a file) asks for an action."""
    if _DELIVERS.search(request):
        return False
    return "?" in request or bool(_ASKS.search(request) or _TELL.search(request))


def inquires(request: str) -> bool:
    """Whether some part of the request (a sentence, or a clause after ";", ":" or ",") asks
    to know something: one that starts with "what", "which", "how", "is", ... and ends with
    "?", or says "tell me", "show me", "let me know", "give me". Quoted text is not read."""
    text = unquoted(request)
    parts = [part.strip() for part in re.split(r"(?<=[.!?;:,])\s+", text.strip())]
    asks = any(_INQUIRES.search(part) and part.endswith("?") for part in parts)
    return asks or _TELL.search(text) is not None


def acts_unasked(tool: ToolDescriptor, request: str) -> bool:
    """Whether `tool` acts (it says it is not read-only: it books, sends, writes) and the
    request only asks to know something: each of its sentences a question ("what", "which",
    "how", "is", ... up to a "?"; "Can you ...?" asks for an action), saying nowhere to
    deliver anything and not naming the tool's action (the first word of its name, in any
    form: "book", "booking" for `book_hotel`; `createIssue` is "create"). Small models book
    the cheapest hotel they were asked about."""
    if tool.read_only is not False or _DELIVERS.search(request):
        return False
    sentences = [part for part in re.split(r"(?<=[.!?])\s+", request.strip()) if part.strip()]
    if not sentences or not all(
        _INQUIRES.search(part) and part.rstrip().endswith("?") for part in sentences
    ):
        return False
    action = _action(tool)
    return not any(word.startswith(action) for word in re.findall(r"\w+", request.casefold()))


# The actions of tools that only look something up (`find_customer`, `list_jobs`).
_LOOKUP_ACTIONS = frozenset(
    (
        *("check", "fetch", "find", "get", "list", "look", "lookup", "query", "read"),
        *("retrieve", "search", "show", "view"),
    )
)


# The actions of tools that change nothing but compute (`convert_currency`, `summarize_text`):
# read-only too, as a descriptor says of them where it says.
_COMPUTING_ACTIONS = frozenset(
    (
        *("analyse", "analyze", "calculate", "classify", "compare", "compute", "convert"),
        *("count", "describe", "detect", "estimate", "evaluate", "explain", "extract"),
        *("parse", "predict", "recommend", "summarise", "summarize", "translate", "validate"),
        *("verify",),
    )
)

# The actions of tools that change something (`send_sms`, `assign_contractor`): a descriptor
# that does not say whether it acts is read as saying so by its name's first word.
_ACTING_ACTIONS = frozenset(
    (
        *("add", "allocate", "amend", "approve", "archive", "assign", "book", "call"),
        *("cancel", "change", "charge", "close", "confirm", "create", "delete", "deploy"),
        *("disable", "dispatch", "edit", "email", "enable", "escalate", "execute", "forward"),
        *("generate", "grant", "hire", "invite", "issue", "lock", "log", "make", "mark"),
        *("message", "modify", "move", "notify", "order", "pay", "place", "post", "publish"),
        *("raise", "record", "refund", "register", "reject", "release", "remove", "rename"),
        *("renew", "reply", "reschedule", "reserve", "reset", "restart", "revoke", "rollback"),
        *("save", "schedule", "send", "serve", "set", "share", "sms", "start", "stop"),
        *("submit", "text", "transfer", "trigger", "unlock", "update", "upload", "write"),
    )
)


def acts_marked(tool: ToolDescriptor) -> ToolDescriptor:
    """`tool`, where it does not say whether it acts (`read_only` None: a catalogue in JSON
    without MCP's `readOnlyHint`), marked as its action (`_action`) says: read-only for a
    lookup or a computation (`find_tenant`, `convert_currency`), acting for a send, a
    booking, a change (`send_sms`, `assign_contractor`); unmarked where the word says
    neither. The rules that keep a tool that acts from a question, or a lookup nobody asked
    for from a plan, then read an unseen catalogue as they read one that says (the demo
    tools do; rule `acts-by-name`)."""
    if tool.read_only is not None:
        return tool
    action = _action(tool)
    if action in _LOOKUP_ACTIONS or action in _COMPUTING_ACTIONS:
        return msgspec.structs.replace(tool, read_only=True)
    if action in _ACTING_ACTIONS:
        return msgspec.structs.replace(tool, read_only=False)
    return tool


def is_lookup(tool: ToolDescriptor) -> bool:
    """Whether `tool` only looks something up: it says it is read-only, or, where it says
    neither, its action (`_action`) is one of a lookup (find, list, search, get, read...)."""
    if tool.read_only is not None:
        return tool.read_only
    return _action(tool) in _LOOKUP_ACTIONS


def _action(tool: ToolDescriptor) -> str:
    """A tool's action: the first word of its name (`book_hotel`: "book"; `createIssue`:
    "create")."""
    return re.split(r"_|(?<=[a-z])(?=[A-Z])", tool.tool_name, maxsplit=1)[0].casefold()


_NEGATION = r"(?:don't|do\s+not|doesn't|does\s+not|not|no|never|without|won't|will\s+not)"
_BY_ONESELF = r"(?:myself|yourself|herself|himself|themselves|ourselves)"


def declines(tool: ToolDescriptor, request: str) -> bool:
    """Whether the request declines the action of `tool`, a tool that acts (see
    `acts_unasked`): its action word in any form after a negation, at most two words on
    ("don't book", "no booking yet", "I don't want to book anything"; not "don't forget to
    book"), or done by someone else ("she'll book herself", "I'll book it myself"). Quoted
    text is not read. Small models book the hotels they were only asked to find."""
    if tool.read_only is not False:
        return False
    text = unquoted(request).casefold().replace("\u2019", "'")
    act = rf"{re.escape(_action(tool))}\w*"
    skipped = r"(?:(?!forget\b|fail\b|hesitate\b)\w+\s+){0,2}"
    refused = rf"\b{_NEGATION}\s+{skipped}{act}\b"
    by_another = rf"\b{act}\s+(?:(?!for\b)\w+\s+)?{_BY_ONESELF}\b"
    return bool(re.search(refused, text) or re.search(by_another, text))


_PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}")


def is_template(schema: dict[str, Any]) -> bool:
    """Whether a text is documented as a template with placeholders of its tool's own
    (`"Dear {name}, ..."`, filled by mail_merge from each row): braces in it are not
    references to results."""
    return bool(_PLACEHOLDER.search(schema.get("description", "")))


def writes_before(
    tool: ToolDescriptor,
    args: dict[str, Any],
    earlier: Sequence[Step],
    tools: dict[str, ToolDescriptor],
) -> list[int]:
    """The earlier steps a call on `tool` with `args` must wait for: those that change a path
    it touches. An earlier step changes a path when its tool acts (it says it is not
    read-only) and one of its path arguments is that path; the call touches it when one of its
    own path arguments is the same path, a folder holding it, or a path inside it. Listing a
    folder while a file is written into it, or reading a file while it is written, sees the
    change or not by chance: no result carries the ordering, so it is written out."""
    mine = _paths_of(tool, args)
    found = []
    for step in earlier:
        other = tools.get(step.tool)
        if step.id == ITEM or other is None or other.read_only is not False:
            continue
        if any(_overlap(a, b) for a in mine for b in _paths_of(other, step.args)):
            found.append(step.id)
    return found


def _paths_of(tool: ToolDescriptor, args: dict[str, Any]) -> list[str]:
    """The literal paths among `args` (not references to results), normalised (`~`, `..`, a
    trailing "/")."""
    props = tool.parameters.get("properties", {})
    return [
        posixpath.normpath(os.path.expanduser(value))
        for name, value in args.items()
        if isinstance(value, str)
        and next(references(value), None) is None
        and value.strip()
        and is_path(name, props.get(name, {}))
    ]


def _same(value: Any, default: Any) -> bool:
    """Whether `value` is `default` (a number by value; true is not 1)."""
    return isinstance(value, bool) == isinstance(default, bool) and value == default


def last_field(ref: str) -> str:
    """The last field a reference names (`rows` of `1.rows`)."""
    return ref.rsplit(".", 1)[-1]


def _overlap(a: str, b: str) -> bool:
    """Whether paths `a` and `b` are the same or one holds the other."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def givens(request: str, *, spoken: bool = True, phones: bool = False) -> list[Given]:
    """The values a request gives that a plan for it uses somewhere: quoted text, email
    addresses, absolute paths, codes ("C-20417"), numbers written in digits (thousands
    separators dropped) and numbers in words or with a unit that count something
    (`ember.planner.numbers`: "two hours" may be used as 2 or as 120). Numbers inside quoted
    text, addresses, paths and codes are part of those, not givens of their own; with
    `phones`, so are those in a phone number, one given used in any of its forms
    (`phone_forms`; "7700900123" is in "+447700900123")."""
    quoted = quoted_texts(request)
    rest = unquoted(request)
    emails = EMAIL.findall(rest)
    rest = EMAIL.sub(" ", rest)
    paths = PATH.findall(rest)
    rest = PATH.sub(" ", rest)
    codes = CODE.findall(rest)
    rest = CODE.sub(" ", rest)
    numbers_of_phones = []
    if phones:
        numbers_of_phones = [
            (*phone_forms(written), re.sub(r"[^0-9]", "", written).lstrip("0"))
            for written in PHONE.findall(rest)
        ]
        rest = PHONE.sub(" ", rest)
    numbers = [number.replace(",", "") for number in NUMBER.findall(rest)]
    found: list[Given] = [_quoted_forms(value) for value in quoted]
    found += [(value,) for value in [*emails, *paths, *codes]]
    found += [tuple(dict.fromkeys(forms)) for forms in numbers_of_phones]
    found += [(value,) for value in numbers]
    if spoken:
        found += [tuple(map(_plain, vals)) for vals in spoken_numbers(rest, counts_only=True)]
    return list(dict.fromkeys(found))


def said_at(request: str, given: Given) -> int | None:
    """Where in `request` the user first gives `given` (any of its forms, outside quotes; a
    quoted text where its quote is), or None where it is not written there as such (a number
    said in words)."""
    rest = unquoted(request)
    found = []
    for form in given:
        if form in quoted_texts(request):
            found.append(request.find(form))
            continue
        # a number stands apart from the number or time it could be part of ("8" in "8.5",
        # "10" in "10:30" or "$10,000"); other values from words ("Sample1:", "C:/data")
        apart = (
            (_APART, r"(?![\w@:/]|[.,][0-9])")
            if NUMERIC.match(form)
            else (r"(?<![\w.])", r"(?![\w@])")
        )
        match = re.search(rf"{apart[0]}{re.escape(form)}{apart[1]}", rest)
        if match:
            found.append(match.start())
    return min(found, default=None)


# A capitalised word ("Lyon", "Zürich", "O'Brien", "McDonald"), and what may stand between the
# names of a list ("Lyon and Bordeaux", "Oslo, Bergen or in Tromsø"); a sentence's first word
# is no name (a colon or a semicolon ends no sentence: "Cities: Lyon, Bordeaux and Nice").
_CAPITALISED = re.compile(r"(?<![\w'’-])(?=[^\W\d_])[\w'’-]+")
_LIST_LINK = re.compile(r"\s*,\s*|,?\s+(?:and|or)\s+(?:(?:in|at|for|from|to|of|on)\s+)?")
_WORD = re.compile(r"[\w'’-]+")
_AND_OR = re.compile(r"\b(?:and|or)\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|[。！？]\s*|\n\s*)$")
_CALENDAR_WORDS = frozenset(
    (
        *("I", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
        *("January", "February", "March", "April", "May", "June", "July", "August"),
        *("September", "October", "November", "December"),
    )
)


def listed_names(request: str) -> list[list[tuple[str, int]]]:
    """The names a request lists together, or says in the same words, each with where it is
    said. Names are capitalised words (several in a row make one name, "Dev Patel") outside
    quotes, without a sentence's first word, a day's or month's name or an acronym ("IDs").
    Listed: linked by commas, "and" or "or" (the last link "and" or "or": "Paris, France" is
    no list): "between Lyon and Bordeaux" lists [("Lyon", 23), ("Bordeaux", 32)]. In the same
    words: after the same two words ("the cheapest hotel in Milan ... and the cheapest hotel
    in Turin"). A plan that uses one of them has the others still to do. Names are found in
    any alphabet that has capitals ("Zürich", "Évian")."""
    rest = unquoted(request)
    names: list[tuple[str, int, int]] = []  # name, start, end
    for word in _CAPITALISED.finditer(rest):
        if (
            not word[0][0].isupper()
            or word[0] in _CALENDAR_WORDS
            or word[0][1:2].isupper()  # an acronym: "IDs", "PDFs", "SRCH"
            or _SENTENCE_START.search(rest[: word.start()])
        ):
            continue
        if names and not rest[names[-1][2] : word.start()].strip():
            start = names[-1][1]
            names[-1] = (rest[start : word.end()], start, word.end())
        else:
            names.append((word[0], word.start(), word.end()))
    groups: list[list[tuple[str, int]]] = []
    run = names[:1]
    for after in [*names[1:], None]:
        if after is not None and _LIST_LINK.fullmatch(rest[run[-1][2] : after[1]]):
            run.append(after)
            continue
        if len(run) > 1 and _AND_OR.search(rest[run[-2][2] : run[-1][1]]):
            groups.append([(name, start) for name, start, _ in run])
        run = [after] if after is not None else []
    alike: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    for name, start, _ in names:
        before = tuple(word.casefold() for word in _WORD.findall(rest[:start])[-2:])
        alike.setdefault(before, []).append((name, start))
    said_alike = [same for before, same in alike.items() if len(before) == 2]
    # (one name said twice is no list: "in Lyon ... in Lyon")
    return [g for g in groups + said_alike if len({name.casefold() for name, _ in g}) > 1]


_RECIPIENT = re.compile(
    rf"\b(?:to|cc)\s+(?:(?:me|him|her|them|us|my\s+\w+)\s+(?:at\s+)?)?({EMAIL.pattern})",
    re.IGNORECASE,
)


def recipients(request: str) -> set[str]:
    """The addresses a request sends something to ("... to ap@example.com", "to me at
    a@example.com", "cc b@example.com"), outside quotes: the delivery's, not a customer to
    look up by (an extra `lookup_customer(email=...)` of the recipient)."""
    return set(_RECIPIENT.findall(unquoted(request)))


def _quoted_forms(text: str) -> Given:
    """A quoted text as a plan may use it: as written, or without the full stop (or other
    closing mark) it ends with, which a model often leaves out ('Demo project. Keep it.')."""
    bare = text.rstrip(".!?。！？ ")
    return (text, bare) if bare and bare != text else (text,)


def stated_numbers(request: str, *, spoken: bool = True) -> set[float]:
    """Every number the request states, in digits or in words, with its conversions; and
    the numbers `NUMBER` leaves out of the givens but a value may still be: one written
    against its unit ("5m", "0.01m²"; "300K" is also 300000), a percentage as a
    fraction too ("5%" is also 0.05), a negative number ("coefficients 2, 3 and -4"), and a
    list written with bare commas ("5,10 and 15"; "1,5" is also 1.5, as it is written in much
    of Europe)."""
    rest = EMAIL.sub(" ", unquoted(request))
    digits = {float(n.replace(",", "")) for n in NUMBER.findall(rest)}
    if not spoken:  # the `numbers` rule off: digits standing apart only
        return digits
    for number, unit in _GLUED.findall(rest):
        digits.add(float(number))
        if unit in _SCALES:
            digits.add(float(number) * _SCALES[unit])
    digits |= {float(number) / 100 for number in _PERCENT.findall(rest)}
    digits |= {-float(number) for number in _NEGATIVE.findall(rest)}
    for run in _COMMA_RUN.findall(rest):
        parts = run.split(",")
        if not all(len(part) == 3 for part in parts[1:]):  # "1,000" is a thousand
            digits |= {float(part) for part in parts}
            if len(parts) == 2:
                digits.add(float(".".join(parts)))
    return digits | {value for values in spoken_numbers(rest) for value in values}


# a number against its unit, not inside a colour ("#00FFFF"); an ordinal or a time of day ("the
# 3rd", "6pm") is a date's or a time's, read by `ember.planner.dates` and `states_a_time`
_GLUED = re.compile(
    rf"(?<!#){_APART}{_AMOUNT}(?!(?:st|nd|rd|th|am|pm)\b)([^\W\d_]+)", re.IGNORECASE
)
_SCALES = {"k": 1e3, "K": 1e3, "M": 1e6, "bn": 1e9}
_PERCENT = re.compile(rf"{_APART}{_AMOUNT}\s*(?:%|percent\b|per cent\b)")
# a minus sign standing before a number ("-25", "[-1, 2]"), not a hyphen inside a code, a date
# or a range ("C-20417", "2026-03-03", "10-15")
_NEGATIVE = re.compile(rf"{_APART}-{_AMOUNT}(?![\w:/]|[.,][0-9]|-[0-9])")
_COMMA_RUN = re.compile(rf"{_APART}[0-9]+(?:,[0-9]+)+(?![\w.])")


_TIME_PHRASE = re.compile(
    r"\d\s*(?:[ap]\.?\s*m\b|h\b|uhr\b|o'?clock\b|点)|\d[:.]\d\d\b|T\d\d:\d\d"
    r"|\b(?:noon|midday|midnight|half past|quarter (?:past|to))\b|\bat\s+\d{1,2}\b",
    re.IGNORECASE,
)


# A request that asks to wait: a wait word, or a delay ("in 2 hours", "after 10 minutes"),
# in English and a few words of Spanish, French, German and Chinese.
_DURATION = (
    r"(?:\d+(?:\.\d+)?|an?|one|two|three|four|five|ten|fifteen|twenty|thirty|half an?)\s*"
    r"(?:seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?|weeks?)\b"
)
_WAITS = re.compile(
    rf"\b(?:wait|waiting|until|till|pause|sleep|delay|later|hold off|"
    rf"(?:in|after)\s+{_DURATION})|"
    r"\b(?:espera|esperar|attendre|attends|attendez|warte|warten|bis)\b|等|之后|以后|稍后",
    re.IGNORECASE,
)
_TIMERS = frozenset({"sleep", "wait_until"})  # ember's durable waits (`ember.tools.timers`)


def asks_to_wait(request: str) -> bool:
    """Whether a request asks for a wait, outside quoted text: "wait", "until", "later", a
    delay ("in 2 hours", "after 10 minutes"), or a time of day (`states_a_time`: "at 9:00
    tomorrow, mail ..."). A timer (`sleep`, `wait_until`) is offered only then: small models
    end plans with a wait nobody asked for (`sleep(seconds=10)` after a slide outline, a
    `wait_until` of an invented instant before a watch)."""
    return bool(_WAITS.search(unquoted(request))) or states_a_time(request)


def states_a_time(request: str) -> bool:
    """Whether the request states any time of day outside quoted text ("15:00", "2pm", "14.30",
    "15h", "2 o'clock", "noon", "half past two", "at 3", "3点"): a time the model then writes
    is the request's, however it was phrased; a request that states none asks for no time."""
    return bool(_TIME_PHRASE.search(unquoted(request)))


def unsupported(
    step: Step,
    tool: ToolDescriptor,
    request: str,
    days: Sequence[str] = (),
    *,
    documented: Sequence[str] = (),
    composed: bool = True,
    off: frozenset[str] = frozenset(),
) -> list[str]:
    """The arguments of a first call whose values the request does not give: a number it
    does not state, a currency it names neither by code nor by name ("Swiss francs" is CHF),
    or a short text (three words at most) it does not contain (a file it names inside a folder
    it names counts as contained, see `relative_paths`; a day it names, one of `days`
    (`Grounds.stated_days`), counts as written "2022-01-01" for "January 1, 2022" where a
    parameter takes a date as plain text; a file it names by what the file is counts as
    its path, one of `documented` (`Grounds.documented_paths`); a phone number it gives counts
    in the form the parameter asks for, `phone_forms`, rule `phone-forms`); and, when no value
    at all comes from the request, every argument. A longer text is the model's to compose (a query,
    a message): it comes from the request when it shares a word of five letters or more with
    it, but is no value the request gives where not `composed` (the model's own query around
    the request's words: "SELECT capital FROM countries WHERE name='Australia'"). A stated
    choice the request names ("an MOT": `service_type="mot"`) comes from it too
    (rule `named-values`); other choices, and dates, are the model's to pick, neither for nor
    against the call (a day named is no sign of the tool: "move A2611093 to the 22nd" is no
    lookup of the doctors free that day). A request in Chinese may name a city the model
    writes in English: its texts and currencies are not judged."""
    properties = tool.parameters.get("properties", {})
    stated = stated_numbers(request)
    lowered = request.casefold()
    words = set(re.findall(r"\w{5,}", lowered))
    lenient = unspaced(request)
    said = _words(unquoted(request))
    found, given = [], False
    for name, value in step.args.items():
        kind = value_kind(properties.get(name, {}))
        if isinstance(value, bool) or (isinstance(value, str) and value.startswith("$")):
            continue
        if isinstance(value, int | float) and kind in ("integer", "number"):
            ok = value in stated
        elif isinstance(value, str) and kind == "code3" and standard_codes(properties[name]):
            ok = lenient or _names_currency(lowered, value)
        elif isinstance(value, str) and kind == "text" and len(value.split()) <= 3:
            ok = (
                lenient
                or value.casefold() in lowered
                or value in relative_paths(request)
                or value in days
                or value in documented
                or (
                    "phone-forms" not in off
                    and value in spans_matching(request, properties[name], phones=True)
                )
            )
        elif isinstance(value, str) and "named-values" not in off and kind == "enum":
            ok = any(_same_word(a, b) for a in _words(value) for b in said)
            if not ok:
                continue  # a choice the request does not name: the model's, neither way
        elif isinstance(value, str) and kind == "text":
            shares = bool(words & set(re.findall(r"\w{5,}", value.casefold())))
            given = given or (composed and (lenient or shares))
            continue
        else:
            continue  # a date, a time, a choice: the request's phrases or the model's pick
        given = given or ok
        if not ok:
            found.append(name)
    return found if given else list(step.args)


# Verbs any tool's name may have: they say how, not what a tool is for.
_ANY_TOOL_VERBS = frozenset(
    (
        *("add", "analyse", "analyze", "build", "calc", "calculate", "check", "compute"),
        *("convert", "count", "create", "determine", "do", "estimate", "evaluate", "execute"),
        *("fetch", "find", "generate", "get", "list", "look", "lookup", "make", "perform"),
        *("process", "query", "retrieve", "run", "search", "set", "show", "solve", "update"),
    )
)


def unspaced(request: str) -> bool:
    """Whether the request is written in a script whose words are not spaced (Chinese,
    Japanese): the checks of its words and short texts cannot judge it."""
    return re.search(r"[\u3000-\u9fff]", request) is not None


def says_action(tool: ToolDescriptor, request: str) -> bool:
    """Whether the request, outside quoted text, says `tool`'s action (`_action`) in any form
    ("cancel", "cancelled"; "book", "booking")."""
    action = _action(tool)
    return any(word.startswith(action) for word in re.findall(r"\w+", unquoted(request).casefold()))


def shared_subjects(
    tool: ToolDescriptor, others: Iterable[ToolDescriptor], request: str
) -> list[str]:
    """The words of the name of `tool`, a tool that acts, that other tools acting on the same
    thing share (`book_appointment`, `cancel_appointment`, `move_appointment`: "appointment"),
    where the request says one of their actions ("Please cancel it"): then the thing names
    none of them, the action said does. Small models book before they cancel. Empty where the
    request says none of those actions ("reschedule my appointment": the thing names each)."""
    if is_lookup(tool):
        return []
    action = _action(tool)
    own = [word for word in _subjects(tool) if word != action]
    rivals = [
        other
        for other in others
        if other.tool_name != tool.tool_name
        and not is_lookup(other)
        and _action(other) != action
        and any(_same_word(word, theirs) for word in own for theirs in _words(other.tool_name))
    ]
    if not any(says_action(one, request) for one in [tool, *rivals]):
        return []
    theirs = [word for other in rivals for word in _words(other.tool_name)]
    return [word for word in own if any(_same_word(word, other) for other in theirs)]


def names_tool(
    step: Step,
    tool: ToolDescriptor,
    request: str,
    days: Sequence[str],
    *,
    others: Iterable[ToolDescriptor] = (),
    off: frozenset[str] = frozenset(),
) -> bool:
    """Whether the request, outside quoted text, names what `tool` is for: a word of the
    tool's name that is not a verb any tool could have (`search_hotels`: "hotel"; not "search",
    "calculate"), or of a field of its result that is not one of its parameters (`get_weather`:
    "forecast", "temperature"), in any form (the same word but for a plural ending, or, for
    words of five letters or more, the same first five letters: "hotels", "forecasts").

    Or the call takes from the request a value of a kind only some tools take: a path it spells, an
    email address, a currency it names, one of the `days` it names (`Grounds.stated_days`), one
    of its parameter's stated choices ("p95 latency": `metric="latency_p95_ms"`), a text of more
    than three words (of three letters or more: "y = 3x + 2" has none) that is the request's
    own (a passage it quotes) or, composed for the call (a query, a message), shares a word of
    five letters or more with it. A request in Chinese is not judged (its words are not
    spaced). Small models prefer some tool for almost any request; one wanted only weakly that
    the request never names is a near miss (a function for the roots of a quadratic offered a
    linear equation). Of tools that act on the same thing, `others`, where the request says
    one's action, the thing names none, the action does (`shared_subjects`; rule
    `said-action`)."""
    if unspaced(request):
        return True
    said = _words(unquoted(request))
    parameters = tool.parameters.get("properties", {})
    own = {word for name in parameters for word in _words(name)}
    fields = {word for path in field_paths(tool.returns) for word in _words(path)} - own
    subjects = [*_subjects(tool), *fields]
    shared = [] if "said-action" in off else shared_subjects(tool, others, request)
    subjects = [word for word in subjects if not any(_same_word(word, s) for s in shared)]
    if any(_same_word(subject, word) for subject in subjects for word in said):
        return True
    lowered = request.casefold()
    long_words = {word for word in said if len(word) >= 5}
    for name, value in step.args.items():
        if not isinstance(value, str) or value.startswith("$"):
            continue
        schema = parameters.get(name, {})
        kind = value_kind(schema)
        composed = kind == "text" and len(_words(value)) > 3
        if (
            (composed and (value.strip() in request or long_words & set(_words(value))))
            or (kind == "enum" and any(_same_word(a, b) for a in _words(value) for b in said))
            or (EMAIL.fullmatch(value) and value.casefold() in lowered)
            or (kind == "date" and value in days)
            or (is_path(name, schema) and _spells_path(request, value))
            or (kind == "code3" and _names_currency(lowered, value))
        ):
            return True
    return False


def _spells_path(request: str, value: str) -> bool:
    """Whether `value` is a path the request spells: a code it gives ("C-20417") written where
    a folder is asked for is none, though the request says it."""
    return (value in request and bool(PATH.search(value))) or value in relative_paths(request)


def _words(text: str) -> list[str]:
    """The words of a text or a name (`search_hotels`, `createIssue`, `.hotels.0.hotel_id`),
    in lower case, of three letters or more."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    return [word for word in re.findall(r"[^\W\d_]+", spaced.casefold()) if len(word) >= 3]


def _same_word(a: str, b: str) -> bool:
    """The same word but for a plural ending ("hotel", "hotels"; "currency", "currencies"), or,
    both of five letters or more, with the same first five ("forecast", "forecasting")."""
    a, b = _singular(a), _singular(b)
    return a == b or (min(len(a), len(b)) >= 5 and a[:5] == b[:5])


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def named_dates(request: str, today: date) -> list[str]:
    """The calendar dates a request names, as written or as its relative phrases mean them
    (`ember.planner.dates`), in order: "tomorrow" on 2026-03-02 -> 2026-03-03."""
    annotated = annotate_dates(request, today)
    found = re.findall(r"(?<![\d-])(\d{4}-\d{2}-\d{2})(?![\d-])", annotated)
    valid = set(calendar_dates(today))
    return [day for day in dict.fromkeys(found) if day in valid]


def _names_currency(lowered: str, code: str) -> bool:
    """Whether a (case-folded) request names a currency: its code, or a word of its name."""
    import pycountry

    if re.search(rf"\b{code.lower()}\b", lowered):
        return True
    currency = pycountry.currencies.get(alpha_3=code)
    words = currency.name.lower().split() if currency is not None else []
    return any(re.search(rf"\b{re.escape(word[:4])}", lowered) for word in words if len(word) >= 3)


def breaks_pattern(schema: dict[str, Any], value: Any) -> bool:
    """Whether a literal string the model wrote breaks its parameter's `pattern` (JSON
    Schema's: a search, not a full match); a reference or a text citing results is checked
    when it runs."""
    pattern = schema.get("pattern")
    if not pattern or not isinstance(value, str) or value.startswith("$") or "{$" in value:
        return False
    try:
        return re.search(pattern, value) is None
    except re.error:
        return False


def integers(request: str) -> list[int]:
    """The whole numbers the request writes in digits (an id may be one: "PR 412")."""
    rest = EMAIL.sub(" ", unquoted(request))
    found = [n.replace(",", "") for n in NUMBER.findall(rest)]
    return list(dict.fromkeys(int(n) for n in found if n.isdigit()))


def states(request: str, value: str) -> bool:
    """Whether the request says `value`, one of a parameter's choices ("in_progress" is said
    by "in progress"): each of its words of three letters or more begins a word there."""
    words = [word for word in re.split(r"[\s_-]+", value.lower()) if len(word) >= 3]
    text = request.lower()
    return bool(words) and all(re.search(rf"\b{re.escape(word)}", text) for word in words)


def free_text(schema: dict[str, Any]) -> bool:
    """A string parameter that takes any text: no choices, no pattern, no format."""
    return json_type(schema) == "string" and not {"pattern", "format", "enum"} & set(schema)


def _says_text(request: str, value: str) -> bool:
    """Whether a short free text is the request's: each of its words is a word of the request,
    or the start of one ("pdf" of "PDFs"), (a longer text, a reference or a text citing results
    is taken as the model's to write). A value without a word (".*") is no one's."""
    if "$" in value or len(value.split()) > 3:
        return True
    words = re.findall(r"\w+", value.casefold())
    said = re.findall(r"\w+", request.casefold())
    return bool(words) and all(any(w.startswith(word) for w in said) for word in words)


def _composed(text: str) -> bool:
    """A free text of more than three words that cites no result: the model's own."""
    return "{$" not in text and not text.startswith("$") and len(text.split()) > 3


def spans_matching(
    request: str, schema: dict[str, Any], *, phones: bool = False, codes: Sequence[str] = ()
) -> list[str]:
    """The words of the request (also the parts of a hyphenated or slashed one) that a string
    parameter's `pattern` accepts, when the pattern is selective: it rejects most of the
    request's words. Empty otherwise: the value is written freely. With `phones`, also each
    phone number the request gives, in the form the pattern accepts (`phone_forms`: "07700
    900123" as "+447700900123" where the parameter documents +44, or documents no code and
    the catalogue's other phone parameters document `codes`; rule `phone-forms`)."""
    pattern = schema.get("pattern")
    if not pattern or schema.get("format") or "enum" in schema:
        return []
    words = _bare_words(request)
    parts = [part for word in words for part in (word, *re.split(r"[-/]", word)) if part]
    try:
        accepted = [part for part in parts if re.fullmatch(pattern, part)]
        numbers = [
            form
            for written in (PHONE.findall(request) if phones else [])
            for form in phone_forms(written, calling_codes(schema.get("description", "")) or codes)
            if re.fullmatch(pattern, form)
        ]
    except re.error:
        return []
    if not accepted or 2 * len({p for p in accepted}) > len(set(words)):
        return list(dict.fromkeys(numbers))
    return list(dict.fromkeys(accepted + numbers))


def calling_codes(description: str) -> list[str]:
    """The country calling codes a phone parameter's description documents: a code said on
    its own ("+44 and drop the leading 0"), or an example number written both ways ("07700
    900123 -> +447700900123", "07... numbers become +447...")."""
    codes = _CALLING_CODE.findall(description)
    examples = [
        (sign, re.sub(r"[ -]", "", digits)) for sign, digits in _EXAMPLE_NUMBER.findall(description)
    ] + _ELIDED_NUMBER.findall(description)
    for sign, whole in examples:
        for other, national in examples:
            tail = national[1:]
            if (
                sign
                and not other
                and national.startswith("0")
                and whole.endswith(tail)
                and 1 <= len(whole) - len(tail) <= 3
            ):
                codes.append(whole[: len(whole) - len(tail)])
    return list(dict.fromkeys(codes))


def phone_forms(written: str, codes: Sequence[str] = ()) -> list[str]:
    """A phone number as the request writes it, in the forms a tool may ask for: as written,
    its digits, and in international form ("+447700900123"): written so, with an international
    prefix ("0044..."), or with the trunk prefix ("07700 900123") and one of `codes`, the
    country calling codes the parameter documents (`calling_codes`). A national number with no
    code documented has no international form: its country is not the planner's to guess."""
    digits = re.sub(r"[^0-9]", "", written)
    forms = [written, digits]
    if written.startswith("+"):
        forms.append("+" + digits)
    elif digits.startswith("00"):
        forms.append("+" + digits[2:])
    else:
        forms += [f"+{code}{digits[1:]}" for code in codes]
    return list(dict.fromkeys(forms))


def placed(tool: ToolDescriptor, args: dict[str, Any], request: str) -> dict[str, Any]:
    """`args` with an optional free text that is exactly a word of the request another
    parameter's selective pattern takes moved to that parameter, where it has no value yet and
    the request says the word beside that parameter's name or the tool's subject:
    `search_tickets(query="SRCH")` for "the open SRCH tickets" is `project="SRCH"` when
    `project` takes `^[A-Z]{2,6}$` (a model that has not seen the catalogue fills the first
    parameter that takes any text); "tickets about SSO login failures" keeps its query."""
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    moved = dict(args)
    for name, value in args.items():
        if name in required or not isinstance(value, str) or not free_text(props.get(name, {})):
            continue
        home = next(
            (
                other
                for other, schema in props.items()
                if other not in moved
                and value in spans_matching(request, schema)
                and _beside(request, value, [*_words(other), *_words(tool.tool_name)])
            ),
            None,
        )
        if home is not None:
            moved = {home if key == name else key: val for key, val in moved.items()}
    return moved


def coded_name_takers(
    tool: ToolDescriptor, args: dict[str, Any], request: str, others: Iterable[ToolDescriptor]
) -> list[str]:
    """Where an argument of `tool` that asks for a name (a free text parameter with "name" in
    its name) is given a code, the other tools that take it: a word of the request that a
    selective pattern of their parameters takes and none of `tool`'s does
    (`find_patient(name="A2604417")`: `cancel_appointment` and `move_appointment` take
    `appointment_id` by `^A[0-9]{7}$`). A model that has not seen the catalogue looks the
    request's code up with the first lookup listed, where the request acts on what the code
    names. A code the request says beside the tool's subject, the parameter's name, "named" or
    "called" is the name asked for ("a branch named PAY-142"). Empty: no name is given a
    code."""
    props = tool.parameters.get("properties", {})
    subjects = _subjects(tool)
    for name, value in args.items():
        if (
            not isinstance(value, str)
            or "name" not in _words(name)
            or not free_text(props.get(name, {}))
            or any(value in spans_matching(request, schema) for schema in props.values())
            or _beside(request, value, [*subjects, *_words(name), "named", "called"])
        ):
            continue  # (a code said as the name: "a branch named PAY-142", "patient P2")
        takers = [
            other.tool_name
            for other in others
            if other.tool_name != tool.tool_name
            and any(
                value in spans_matching(request, schema)
                for schema in other.parameters.get("properties", {}).values()
            )
        ]
        if takers:
            return takers
    return []


def name_rivals(
    tool: ToolDescriptor, args: dict[str, Any], others: Iterable[ToolDescriptor]
) -> tuple[str, list[str]]:
    """The name `args` gives a lookup (`tool`, not known to act) and the other lookups that
    take a name by a parameter of the same name (`find_patient(name=...)` and
    `find_doctor(name=...)`): which one a name is for is a choice of role. ("", []): no
    name given, or no other lookup takes one."""
    if tool.read_only is False:
        return "", []
    props = tool.parameters.get("properties", {})
    for name, value in args.items():
        if (
            not isinstance(value, str)
            or "$" in value  # a result's name, or a text citing one
            or "name" not in _words(name)
            or not free_text(props.get(name, {}))
        ):
            continue
        rivals = [
            other.tool_name
            for other in others
            if other.tool_name != tool.tool_name
            and other.read_only is not False
            and free_text(other.parameters.get("properties", {}).get(name, {"type": "none"}))
        ]
        return (value, rivals) if rivals else ("", [])
    return "", []


def named_files(request: str, returns: dict[str, Any] | None) -> list[str]:
    """The fields of a result (`field_paths`, `.results.0.report_path`) that hold a file's path
    and whose names say what the file is in words the request says outside quotes
    (`report_path`: "Pull up Maria Keller's latest lab report"): the file the request is
    about, which the result only points to."""
    said = _words(unquoted(request))
    return [
        path
        for path, subjects in file_fields(returns)
        if subjects  # (not one that says nothing of its file: `file_path`)
        and all(any(_same_word(word, other) for other in said) for word in subjects)
    ]


def file_fields(returns: dict[str, Any] | None) -> list[tuple[str, list[str]]]:
    """The fields of a result (`field_paths`) named as holding a file's path (`report_path`,
    `.results.0.pdf_path`, `file`), each with the words of its name that say what the file
    is (`["report"]`; none for `file_path`)."""
    found = []
    for path in field_paths(returns):
        words = _words(path.rsplit(".", 1)[-1])
        if words[-1:] in (["path"], ["file"]):
            found.append((path, [word for word in words[:-1] if word not in ("path", "file")]))
    return found


# A person's title and the role it says ("Dr. Petrova" is a doctor), for `said_as`.
_TITLES = {"dr": "doctor", "doc": "doctor", "prof": "professor"}
_CJK_TITLES = {"医生": "doctor", "大夫": "doctor", "教授": "professor", "老师": "teacher"}


def said_as(request: str, name: str, tool: ToolDescriptor) -> bool:
    """Whether `request` says `name` as what `tool` looks up (a word of its name that is no
    verb: `find_doctor`, "doctor"), or by that role's title: in the name itself ("Dr.
    Petrova"), next to it ("patient Maria Keller", "Dr. Alvarez's"), or, unspaced, right
    after it ("张医生")."""
    subjects = _subjects(tool)
    roles = [*subjects, *(title for title, role in _TITLES.items() if role in subjects)]
    if any(_same_word(role, word.casefold()) for word in _bare_words(name) for role in roles):
        return True
    words = _bare_words(name)  # ("Dr." Maria Keller; Maria Keller "(patient)")
    if words and (_beside(request, words[0], roles) or _beside(request, words[-1], roles)):
        return True
    return any(
        role in subjects and (title in name or f"{name}{title}" in request)
        for title, role in _CJK_TITLES.items()
    )


def _subjects(tool: ToolDescriptor) -> list[str]:
    """The words of a tool's name that are no verb any tool could have (`search_hotels`:
    "hotels")."""
    return [word for word in _words(tool.tool_name) if word not in _ANY_TOOL_VERBS]


def _beside(request: str, word: str, subjects: Sequence[str]) -> bool:
    """Whether `request` says `word` next to one of `subjects` (in any form, `_same_word`):
    "SRCH tickets", "the project SRCH"."""
    words = _bare_words(unquoted(request))
    return any(
        _same_word(subject, near.casefold())
        for at, said in enumerate(words)
        if said == word
        for near in words[max(at - 1, 0) : at] + words[at + 1 : at + 2]
        for subject in subjects
    )


_POSSESSIVE = re.compile(r"['’]s$")


def _bare_words(text: str) -> list[str]:
    """The words of `text` split at spaces, without the marks around them ("(PDFs),") or a
    possessive ending ("D005's": "D005")."""
    return [_POSSESSIVE.sub("", word.strip(".,;:!?()[]'\"“”「」")) for word in text.split()]


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def reapplies(step: Step, earlier: list[Step]) -> bool:
    """Whether `step` makes an earlier step's call again, with that step's result in place of
    one argument and every other argument the same, or with nothing but that step's echoes of
    its own arguments for its arguments (`write_file(path=$3.path, content=$3.path)` after the
    write of step 3); a page after a cursor (`cursor=$1.next_cursor`) is onward."""
    by_id = {s.id: s for s in earlier}
    found = [list(references({name: value})) for name, value in step.args.items()]
    sources = {ref.step for refs in found for ref in refs}
    if (
        step.args
        and all(refs for refs in found)
        and len(sources) == 1
        and (source := by_id.get(sources.pop())) is not None
        and source.tool == step.tool
        and all(ref.path[:1] and ref.path[0] in source.args for refs in found for ref in refs)
    ):
        return True  # each argument an echo of the source's own arguments (`$3.path`)
    for name, value in step.args.items():
        for ref in references({name: value}):
            source = by_id.get(ref.step)
            if source is not None and source.tool == step.tool:
                others = {k: v for k, v in step.args.items() if k != name}
                if others == {k: v for k, v in source.args.items() if k != name}:
                    return True
    return False


def reads_back(step: Step, earlier: Sequence[Step], tools: dict[str, ToolDescriptor]) -> bool:
    """Whether `step`, a lookup (its tool says it only reads), reads a file an earlier step of
    the plan wrote: a path parameter given the result of a step whose tool acts
    (`extract_invoice(path=$3.path)` after `generate_report` as step 3). The request asked
    for the file written, not for it read back: small models run on, reading what they wrote
    and writing again (a report, an invoice read from it, its summary, the report again)."""
    tool = tools[step.tool]
    if tool.read_only is not True:
        return False
    wrote = {s.id for s in earlier if s.tool in tools and tools[s.tool].read_only is False}
    props = tool.parameters.get("properties", {})
    return any(
        ref.step in wrote
        for name, value in step.args.items()
        if name in props and is_path(name, props[name])
        for ref in references({name: value})
    )


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


def is_path(name: str, schema: dict[str, Any]) -> bool:
    """Whether a parameter takes a file or folder path: a text documented as a path, directory
    or folder, or named like one (`path`, `folder`, `out_dir`)."""
    return value_kind(schema) == "text" and bool(
        PATH_PARAMETER.search(schema.get("description", "")) or PATH_NAME.fullmatch(name)
    )


_FOLDER_ROLE = re.compile(r"\b(?:directory|folder|dir)\b", re.IGNORECASE)
_FILE_ROLE = re.compile(r"\b(?:file|document)\b", re.IGNORECASE)
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,4})$")
# A file format a parameter may name ("a Markdown file", "the CSV ledger"), and its extensions.
_FORMATS = {
    "markdown": ("md", "markdown"),
    "csv": ("csv",),
    "json": ("json",),
    "pdf": ("pdf",),
    "excel": ("xlsx", "xls"),
    "html": ("html", "htm"),
    "yaml": ("yaml", "yml"),
}
_FORMAT_NAMES = re.compile(rf"\b({'|'.join(_FORMATS)})\b", re.IGNORECASE)
_KNOWN_EXTENSIONS = {ext for extensions in _FORMATS.values() for ext in extensions}


def fits_role(name: str, schema: dict[str, Any], path: str) -> bool:
    """Whether `path` can be the value of path parameter `name`, by what the parameter says it
    takes (its name and description): a folder is no file name with an extension
    (`list_files(directory="q3/report.pdf")`); a file is no folder written with its final
    slash ("out/"); a file of a format it names ("a Markdown file", "the CSV ledger") is not
    one of another known format (`summary="ledger.csv"` for a Markdown summary)."""
    # (an example's path names no format: "e.g. /archive/invoices/INV-2026-0412.pdf")
    said = f"{name.replace('_', ' ')} {PATH.sub(' ', schema.get('description', ''))}"
    folder, file = _FOLDER_ROLE.search(said), _FILE_ROLE.search(said)
    extension = _EXTENSION.search(path)
    if folder and not file:
        return extension is None
    if file and not folder:
        if path.endswith("/"):
            return False
        named = {ext for fmt in _FORMAT_NAMES.findall(said) for ext in _FORMATS[fmt.lower()]}
        found = extension[1].lower() if extension else ""
        return not named or found not in _KNOWN_EXTENSIONS or found in named
    return True


def relative_paths(request: str) -> list[str]:
    """The relative paths a request spells (see `RELATIVE_PATH`), and each file name it gives
    after a folder also as a path inside that folder ("statements/ (acme.csv, borealis.xlsx)":
    `statements/acme.csv`): tools resolve a bare name against their root, not the folder."""
    rest = PATH.sub(" ", EMAIL.sub(" ", URL.sub(" ", request)))
    found = [path for path in dict.fromkeys(RELATIVE_PATH.findall(rest)) if _path_like(path)]
    folders = [path for path in found if path.endswith("/")]
    names = [path for path in found if "/" not in path]
    return found + [folder + name for folder in folders for name in names]


def _path_like(text: str) -> bool:
    """Whether a span `RELATIVE_PATH` found is a path (see `_DOMAIN`): a folder ("out/"), a
    file with its extension ("acme.csv", at least four characters), or names joined by
    slashes of which one is a lower-case word of four letters or more ("out/competitors")."""
    if "/" not in text:
        return len(text) >= 4 and not _DOMAIN.search(text)
    if text.endswith("/") or _EXTENSION.search(text):
        return not _DOMAIN.search(text.rstrip("/"))
    return any(re.fullmatch(r"[a-z][\w.-]{3,}", part) for part in text.split("/"))


def _emails_marked(tool: ToolDescriptor) -> ToolDescriptor:
    """`tool` with each text parameter whose pattern takes an address and not a plain word
    marked `format: email`: an address is grounded as one whether its schema says so by
    format or by pattern (not `^[^@]+$`, nor a handle's `^@[a-z]+$`)."""
    props = tool.parameters.get("properties", {})
    marked = {
        name: {**schema, "format": "email"}
        if json_type(schema) == "string" and "format" not in schema and _takes_addresses(schema)
        else schema
        for name, schema in props.items()
    }
    if marked == props:
        return tool
    return msgspec.structs.replace(tool, parameters={**tool.parameters, "properties": marked})


def _takes_addresses(schema: dict[str, Any]) -> bool:
    pattern = schema.get("pattern", "")
    if "@" not in pattern:
        return False
    try:
        compiled = re.compile(pattern)
    except re.error:
        return False
    return bool(compiled.search("ann.lee@example.com")) and not compiled.search("ann")


def calendar_dates(today: date) -> list[str]:
    """Every date from two years before `today` to three years after it, ISO-formatted."""
    start = today.replace(year=today.year - 2, month=1, day=1)
    end = today.replace(year=today.year + 3, month=12, day=31)
    return [(start + timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]


class Grounds:
    """What a request, made on `today` over a catalogue, lets a value be: the decoder offers
    a grounded parameter only these values, and a plan made elsewhere (`ember.planner.openai`)
    is checked against them."""

    def __init__(
        self,
        catalogue: Sequence[ToolDescriptor],
        request: str,
        today: date,
        *,
        spoken: bool = True,
        off: frozenset[str] = frozenset(),
    ) -> None:
        marked = (tool if "acts-by-name" in off else acts_marked(tool) for tool in catalogue)
        self.tools = {tool.tool_name: _emails_marked(tool) for tool in marked}
        self.request = request
        self.dates = calendar_dates(today)
        self.named_dates = named_dates(request, today)
        # every day it names, written in full too ("March 3, 2027"): what a tool is given
        self.stated_days = [day.isoformat() for day in stated_days(request, today)]
        self.emails = list(dict.fromkeys(EMAIL.findall(request)))
        # where the request sends something: no key to look a record up by
        self.recipients = set() if "recipients" in off else recipients(request)
        without_emails = EMAIL.sub(" ", request)
        self.codes = list(dict.fromkeys(CODE.findall(without_emails)))
        self.integers = integers(request)
        self.paths = PATH.findall(without_emails) + relative_paths(request)
        self.stated = stated_numbers(request, spoken=spoken)
        self.timed = states_a_time(request)
        self.given_items = bool(QUOTED.search(request) or self.emails or self.codes or self.paths)
        self.off = off  # decoding rules switched off (`decoding.RULES`), to measure them
        # the tools that act, which a request that only asks to know something, or declines
        # their action, is not offered
        self.unasked = frozenset(
            name
            for name, tool in self.tools.items()
            if ("questions-read" not in off and acts_unasked(tool, request))
            or ("declined" not in off and declines(tool, request))
            or ("waits" not in off and name in _TIMERS and not asks_to_wait(request))
        )
        # the country calling codes the catalogue's phone parameters document: one company's
        # numbers, for a phone parameter that documents none (`spans_matching`)
        self.calling_codes = list(
            dict.fromkeys(
                code
                for tool in self.tools.values()
                for schema in tool.parameters.get("properties", {}).values()
                if schema.get("pattern", "").startswith("^\\+")
                for code in calling_codes(schema.get("description", ""))
            )
        )
        # While a step over a list is written: the list (`1.files`) and its items' schema.
        self.item: tuple[str, dict[str, Any]] | None = None
        self.sources = {
            (tool.tool_name, name): source
            for tool in self.tools.values()
            for name, schema in tool.parameters.get("properties", {}).items()
            if (source := source_of(schema, self.tools, tool.tool_name))
        }

    def references(self, schema: dict[str, Any], earlier: Sequence[Step]) -> list[str]:
        """`N.path` for each field of an earlier result that may be passed whole as a value of
        `schema` (see `ember.planner.compact.field_paths`)."""
        found = []
        for step in earlier:
            name = step_ref(step.id)
            if step.id == ITEM and self.item is not None:
                whole = {"type": "object", "properties": {"item": self.item[1]}}
                found += [name] if field_paths(whole, schema) == [".item"] else []
            returns = self.returns(step)
            prefix = "code-prefix" not in self.off
            clash = (
                set()
                if "coded-fields" in self.off
                else clashing_paths(returns, schema, whole=prefix)
            )
            found += [f"{name}{path}" for path in field_paths(returns, schema) if path not in clash]
        return found

    def coded_references(self, schema: dict[str, Any], earlier: Sequence[Step]) -> list[str]:
        """`N.path` for each field of an earlier result that holds the same kind of code as
        `schema` (`compact.coded_paths`: a phone number for a text's recipient): where there
        are any, a value of `schema` comes from one of them, not from the freshest result
        (an appointment's doctor's name is no number to text; rule `coded-fields`)."""
        if "coded-fields" in self.off:
            return []
        found = [
            f"{step_ref(step.id)}{path}"
            for step in earlier
            for path in coded_paths(self.returns(step), schema, whole="code-prefix" not in self.off)
        ]
        # in a step over a list, the item's own code ("$item.phone": each patient's)
        return [ref for ref in found if ref.startswith("item")] or found

    def never_stated(self, schema: dict[str, Any]) -> bool:
        """Whether no value of `schema` can be one the request states: a number where it states
        none, a choice none of whose values it says (an optional one is then not offered)."""
        if "schema" in self.off:
            return False
        if "enum" in schema:
            return all(self.unstated(schema, value) for value in schema["enum"])
        return value_kind(schema) in ("integer", "number") and not self.stated

    def unstated(self, schema: dict[str, Any], value: Any) -> bool:
        """A literal number, or one of an enum's values, that the request does not state:
        options the model adds from habit ("max_words": 50, "rotation": "primary")."""
        if isinstance(value, str) and "enum" in schema:
            return "schema" not in self.off and not states(self.request, value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return value not in self.stated

    def unsaid(self, schema: dict[str, Any], value: Any, name: str = "") -> bool:
        """An optional value the request does not state (`unstated`), or a short free text
        (three words at most, no pattern or format to hold it) whose words the request does not
        say: options the model adds from habit ("pattern": "*.pdf", ".*"). A longer text is
        the model's to compose; a reference comes from a result. A value equal to the
        parameter's `default` says nothing either: the call is the same without it; nor does
        a time of day (HH:MM) in a request that states none (`states_a_time`), nor a date it
        does not name (a date of birth "2024-01-01" to find a patient by name; rule
        `optional-dates`), nor a longer text the model composed for parameter `name` where
        the request does not ask for one (`_dictates`; rule `unasked-text`)."""
        if "default" in schema and _same(value, schema["default"]):
            return True
        if value_kind(schema) == "hhmm" and "times" not in self.off:
            return not self.timed  # "as an all-day thing": no time="23:59"
        if value_kind(schema) == "date" and "optional-dates" not in self.off:
            literal = isinstance(value, str) and "$" not in value  # not a result's
            return literal and value not in self.named_dates and value not in self.stated_days
        if isinstance(value, str) and free_text(schema):
            if "unasked-text" not in self.off and _composed(value):
                return not self._dictates(name, value)
            return "optional-text" not in self.off and not _says_text(self.request, value)
        return self.unstated(schema, value)

    def _dictates(self, name: str, text: str) -> bool:
        """Whether the request asks for a text the model composed (`_composed`) as the value
        of parameter `name`: it says the parameter's name (outside quotes: "reason: follow-up
        BP", "add that as a comment"), or quotes a passage the text holds. A request in
        Chinese is not judged (its words are not spaced). An optional reason, note or
        description nobody asked for ("Appointment for Tomás Ortega with Dr. Petrova") is the
        model's habit (rule `unasked-text`)."""
        if unspaced(self.request):
            return True
        said = _words(unquoted(self.request))
        if any(_same_word(word, own) for word in said for own in _words(name)):
            return True
        return any(quote in text or text in quote for quote in quoted_texts(self.request))

    def options(
        self,
        tool: str,
        name: str,
        schema: dict[str, Any],
        earlier: list[Step],
        unused: Sequence[Step],
    ) -> list[str] | None:
        """The values a parameter the user or an earlier result must supply may take; None
        for other parameters. Small models fill such parameters with whatever is at hand
        ("hotel_id": "Paris", a path from the examples).

        - an absolute path (a parameter documented as a path or directory): one the request
          spells out, or an earlier result's field named like one (`path`, `files.0`);
        - an identifier (`customer_id`): a code the request gives ("C-20417"), or an earlier
          result's field of the same name;
        - a parameter documented to come from another tool ("A hotel_id from search_hotels
          results"): a code the request gives, or a field of that tool's results.
        - an email address: one the request names, or an earlier result's email field (of a
          result nothing uses yet, where one holds any);
        - a list an earlier result holds under the parameter's name (`rows`): that field.
        References go to results nothing uses yet where there are any: each feeds one call; an
        identifier none of those holds may come from any earlier result (one patient found
        feeds the appointments' lookup and the lab results'; rule `fan-out`)."""
        if schema.get("format") == "email":
            # an address of a result nothing uses yet where one holds any: the landlord just
            # looked up for "email the landlord", not the tenancy's tenant before it (rule
            # `fresh-addresses`)
            fresh = [] if "fresh-addresses" in self.off else [s for s in earlier if s in unused]
            refs = self.references(schema, fresh) or self.references(schema, earlier)
            found = [f"${ref}" for ref in refs]
            called = self.tools.get(tool)
            addresses = [
                address
                for address in self.emails
                if not (called and called.read_only and address in self.recipients)
            ]
            return [f'"{address}"' for address in addresses] + found
        if value_kind(schema) == "array" and "schema" not in self.off and not self.given_items:
            # a list an earlier result holds under the parameter's own name is that list
            # (mail_merge's columns and rows: sql_query's), not one written out again, where
            # the request gives no item of its own (a path, an address, a quoted text, a code)
            named = [ref for ref in self.references(schema, earlier) if last_field(ref) == name]
            return [f"${ref}" for ref in named] or None
        source = self.sources.get((tool, name))
        path = is_path(name, schema)
        if source is None and not path and not is_identifier(name, schema):
            return None
        steps = [step for step in earlier if source is None or step.tool == source]
        fresh = [step for step in steps if step in unused]
        found = self.references(schema, fresh or steps)
        if path:
            named = [ref for ref in found if PATH_FIELD.search(self._field_name(ref))]
            # A path the request gave that a step already used is not offered again where a
            # result holds paths (a folder listed, then its files read).
            held = json.dumps([step.args for step in earlier], ensure_ascii=False)
            literals = [p for p in self.paths if json.dumps(p, ensure_ascii=False) not in held]
            if not literals and not named:
                literals = self.paths
            literals = [*literals, *self.documented_paths]  # (none with the rule off)
            if "path-roles" not in self.off:
                literals = [p for p in literals if fits_role(name, schema, p)]
        else:
            if value_kind(schema) == "integer":
                literals = self.integers
            else:  # a code ("C-20417"), or a number long enough to be an id ("20417")
                literals = self.codes + [str(n) for n in self.integers if n >= 100]
            named = [ref for ref in found if last_field(ref) in (name, "id")]
            if not named and not literals and source is None:
                # An id held by a result that is one plain text, nothing uses yet ("the file
                # holds nothing but a customer id"): that text may be the id.
                returns = [self.returns(step) or {} for step in fresh]
                named = [
                    f"{step_ref(step.id)}{paths[0]}"
                    for step, schema in zip(fresh, returns, strict=True)
                    if len(schema.get("properties", {})) == 1
                    and len(paths := text_paths(schema)) == 1
                ]
            if not named and not literals and fresh and "fan-out" not in self.off:
                # one result may feed several calls: the patient found, both for the upcoming
                # appointments and for the lab results (`fresh` ones hold no such field)
                every = self.references(schema, steps)
                named = [ref for ref in every if last_field(ref) in (name, "id")]
        # A code the request gives that breaks the parameter's pattern is no value for it
        # ("IDN-407" for a thread id "^M-[0-9]+$"): its tool would refuse the call.
        literals = [value for value in literals if not breaks_pattern(schema, value)]
        return [json.dumps(value, ensure_ascii=False) for value in literals] + [
            f"${ref}" for ref in named or (found if source else [])
        ]

    @functools.cached_property
    def documented_paths(self) -> list[str]:
        """The files the catalogue documents by path, in a tool's description or a parameter's
        ("Layout: /archive/policies/courtesy-car.md, /archive/daybook/YYYY-MM-DD.txt"), that
        the request names: every word of the file's name ("what our courtesy car policy
        says"), or, for a file named by a date, its folder's ("yesterday's daybook"), the date
        one the request names. A user asks for a document by what it is, not by its path; a
        path that says nothing of its file ("L2604117.pdf") or names it by another placeholder
        ("<job_id>.txt") is not offered (rule `documented-paths`)."""
        if "documented-paths" in self.off:
            return []
        said = _words(unquoted(self.request))
        documentation = " ".join(
            text
            for tool in self.tools.values()
            for text in (
                tool.description,
                *(
                    str(schema.get("description", ""))
                    for schema in tool.parameters.get("properties", {}).values()
                ),
            )
        )
        found = []
        for path in _DOCUMENTED_PATH.findall(documentation):
            folder, _, name = path.rpartition("/")
            if "YYYY-MM-DD" in name and not re.search(r"[<>{}]", path):
                subject, filled = (
                    _words(folder.rpartition("/")[2]),
                    [path.replace("YYYY-MM-DD", day) for day in self.stated_days],
                )
            elif not re.search(r"[<>{}]|YYYY", path):
                subject, filled = _words(name.rsplit(".", 1)[0]), [path]
            else:
                continue
            if subject and all(any(_same_word(a, b) for b in said) for a in subject):
                found += filled
        return [path for path in dict.fromkeys(found) if path not in self.paths]

    def misfits(self, name: str, schema: dict[str, Any]) -> bool:
        """Whether the request gives a path that path parameter `name` cannot take (see
        `fits_role`): then it gave the paths it means, and none is this parameter's, so no
        other is written in (`list_files(directory="/exports")` for a file in it)."""
        if "path-roles" in self.off or not is_path(name, schema):
            return False
        return any(not fits_role(name, schema, path) for path in self.paths)

    def returns(self, step: Step) -> dict[str, Any] | None:
        """The schema of `step`'s result: its tool's, or a list of them for a step over a
        list."""
        returns = self.tools[step.tool].returns
        if step.each is None or step.id == ITEM:
            return returns
        return {"type": "array", "items": returns or {}}

    def _field_name(self, ref: str) -> str:
        """The field a reference (`1.files.0`, `item`) names: the item's is its list's."""
        if ref == "item" and self.item is not None:
            return self.item[0].split(".", 1)[-1]
        return ref.split(".", 1)[-1]

    def repair(self, step: Step, earlier: Sequence[Step]) -> Step | None:
        """`step`, from a plan made elsewhere, held to the rules the decoder follows: a
        grounded value must be one of its options, or the step needs a value nobody gave
        (None: the plan ends here, as the decoder ends it); an optional number or choice the
        request never states, or an optional value nothing grounds, is left out; a date must be
        a real day, a currency code one that exists; a tool that acts ends a plan for a request
        that only asks to know something (`acts_unasked`); a call on a path an earlier step
        changes runs after it (`writes_before`)."""
        tool = self.tools.get(step.tool)
        if tool is None:
            return step  # unknown tools are the executor's to refuse, with its message
        if step.tool in self.unasked:
            return None  # an action a question did not ask for: the plan ends here
        if step.each is not None:  # the item is an earlier result too, while it is judged
            items = self._items(step.each, earlier)
            if items is None:
                return None
            returns = items if json_type(items) == "object" else {"type": "object"}
            self.tools[ITEM_TOOL] = ToolDescriptor(ITEM_TOOL, {"type": "object"}, returns=returns)
            self.item = (step.each.lstrip("$"), items)
            try:
                return self._repair(step, tool, [*earlier, Step(ITEM, ITEM_TOOL, each=step.each)])
            finally:
                del self.tools[ITEM_TOOL]
                self.item = None
        return self._repair(step, tool, earlier)

    def _items(self, each: str, earlier: Sequence[Step]) -> dict[str, Any] | None:
        """The schema of the items of the list `each` (`$2.files`) refers to, if it is one."""
        ref = next(references(each))
        source = next((s for s in earlier if s.id == ref.step), None)
        node = self.returns(source) if source is not None else None
        for segment in ref.path:
            if node is None:
                return None
            node = node.get("properties", {}).get(segment)
        if node is None or json_type(node) != "array":
            return None
        items: dict[str, Any] = node.get("items", {})
        return items

    def _repair(self, step: Step, tool: ToolDescriptor, earlier: Sequence[Step]) -> Step | None:
        properties = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        used = {ref.step for s in earlier for ref in references([s.args, s.each])}
        unused = [s for s in earlier if s.id not in used]
        args: dict[str, Any] = {}
        for name, written in step.args.items():
            schema = properties.get(name, {})
            options = self.options(step.tool, name, schema, list(earlier), unused)
            value = written
            if options and value_kind(schema) == "array" and not self._fits(schema, value, options):
                value = options[0]  # the list an earlier result holds under this name
            if not self._fits(schema, value, options):
                if name in required:
                    return None
                continue
            if name not in required and options is None and self.unsaid(schema, value, name):
                continue
            args[name] = value
        if len(args) < tool.parameters.get("minProperties", 0):
            return None  # it needs one of its optional values, and none is grounded
        waits = [] if "write-order" in self.off else writes_before(tool, args, earlier, self.tools)
        after = [*step.after, *(n for n in waits if n not in step.after)]
        return msgspec.structs.replace(step, args=args, after=after)

    def _fits(self, schema: dict[str, Any], value: Any, options: list[str] | None) -> bool:
        """Whether `value` is one the rules allow, given the grounded `options` (None: the
        parameter is not grounded)."""
        if isinstance(value, str) and "{$" in value:
            return True  # a text citing results: the executor checks its references
        if options is not None:
            written = value if isinstance(value, str) and value.startswith("$") else None
            return (written or json.dumps(value, ensure_ascii=False)) in options or (
                not options
                and isinstance(value, str)
                and value in self.request
                and schema.get("format") != "email"  # an address is never written freely
            )
        if isinstance(value, str) and value.startswith("$"):
            return True
        kind = value_kind(schema)
        if kind == "date":
            return value in self.dates
        if kind == "code3" and (codes := standard_codes(schema)):
            return value in codes
        return not self.unstated(schema, value)
