"""What a written answer states that the results and the request do not hold (pure: no I/O);
whether a request wants one is `ember.planner.grounding.needs_answer`.

A model that writes an answer from results copies well but may still make a figure, a name or
an id up. `check_answer` finds the numbers, dates, ids, email addresses and names an answer
states and reports those that appear neither in the request nor in the results (numbers may
be rounded, written as a percentage, or be a count, sum or average of the results' values).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["check_answer"]

_EMAIL = re.compile(r"[^@\s\"'<>(),;:]+@[^@\s\"'<>(),;:]+\.[A-Za-z]{2,}")
_DATE = re.compile(r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}\b")
_CODE = re.compile(r"\b(?=[\w-]*[A-Za-z])(?=[\w-]*[0-9])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+\b")
_NUMBER = re.compile(
    r"(?<![\w.])-?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?%?|(?<![\w.])-?[0-9]+(?:\.[0-9]+)?%?"
)
_NAME = re.compile(r"\b[A-Z][\w&'’.-]*[A-Za-z](?:\s+[A-Z][\w&'’.-]*[A-Za-z])*")
_COMMON = frozenset(
    """a an the this that these those there here it its in on at of for to from by with and or
    but not no yes i we you your our they he she total totals average sum note notes result
    results answer summary overview based according step steps tool tools request none all
    each every both per mean median highest lowest best worst cheapest first last top
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday
    however also overall if so as is are was were be has have had which who what when where
    why how""".split()  # noqa: SIM905 (a word list reads better as words)
)


def check_answer(answer: str, request: str, results: Sequence[Any]) -> list[str]:
    """What `answer` states that neither `request` nor `results` holds: each as `kind value`
    (`number 412.5`, `date 2026-03-09`, `id INV-9`, `email a@b.org`, `name Borealis`)."""
    source = "\n".join([request, *(json.dumps(r, ensure_ascii=False) for r in results)])
    lowered = source.casefold()
    numbers = _source_numbers(source, results)
    missing: list[str] = []
    rest = answer
    for kind, pattern in (("email", _EMAIL), ("date", _DATE), ("id", _CODE)):
        for found in dict.fromkeys(pattern.findall(rest)):
            if found.casefold() not in lowered:
                missing.append(f"{kind} {found}")
        rest = pattern.sub(" ", rest)
    for found in dict.fromkeys(_NUMBER.findall(rest)):
        if not _number_found(found, numbers):
            missing.append(f"number {found}")
    for found in dict.fromkeys(_names(_NUMBER.sub(" ", rest))):
        if not _name_found(found, lowered):
            missing.append(f"name {found}")
    return missing


def _names(text: str) -> Iterator[str]:
    for match in _NAME.finditer(text):
        words = [w.strip(".'’") for w in match.group(0).split()]
        words = [w.removesuffix("'s").removesuffix("’s") for w in words]
        kept = [w for w in words if w.casefold() not in _COMMON and len(w) > 1]
        if kept:
            yield " ".join(kept)


def _name_found(name: str, lowered: str) -> bool:
    """A name is found when each of its words is (a result may write "Acme Corp." where the
    answer writes "Acme")."""
    return all(word.casefold() in lowered for word in name.split())


def _number_found(text: str, numbers: set[float]) -> bool:
    percent = text.endswith("%")
    value = float(text.rstrip("%").replace(",", ""))
    places = len(text.rstrip("%").split(".")[1]) if "." in text else 0
    candidates = [value / 100, value] if percent else [value]
    for wanted in candidates:
        for known in numbers:
            for scaled in (known, known * 100) if percent else (known,):
                if math.isclose(round(scaled, places), wanted, abs_tol=10 ** -(places + 2)):
                    return True
                if math.isclose(scaled, wanted, rel_tol=1e-9):
                    return True
    return False


def _source_numbers(source: str, results: Sequence[Any]) -> set[float]:
    """Every number the request and results hold, and the counts, sums and averages of their
    lists (an answer may aggregate)."""
    found = {float(n.rstrip("%").replace(",", "")) for n in _NUMBER.findall(source)}
    for values in _lists(results):
        found.add(float(len(values)))
        numeric = [
            float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        if numeric:
            found |= {sum(numeric), sum(numeric) / len(numeric)}
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _lists(value: Any) -> Iterator[list[Any]]:
    """Every list inside `value`, and for a list of objects, each field's values across it."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _lists(item)
    elif isinstance(value, list | tuple):
        items = list(value)
        yield items
        if items and all(isinstance(item, dict) for item in items):
            for key in {key for item in items for key in item}:
                yield [item.get(key) for item in items]
        for item in items:
            yield from _lists(item)
