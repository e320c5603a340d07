"""Numbers a request states in words or implies by a unit, found and written out (pure).

"three hundred and fifty dollars" is 350, "two hours" is also 120 minutes, "a fortnight" is 14
days. A small model copies a number well and converts one badly, so `annotate_numbers` writes
the value after the phrase ("two hours (120 minutes)"), as `ember.planner.dates` does for
dates, and `spoken_numbers` hands the decoder each number with its conversions: a plan that
uses any of them has used it.

Rules, stated because they are choices:
- Words count as a number only when they are one ("twenty-five", "three hundred and fifty", "a
  dozen"); "one" alone only before a unit ("one night"), since "the cheapest one" is no count.
- Units converted: hours -> minutes (x 60), weeks -> days (x 7), a fortnight -> 14 days, half
  an hour -> 30 minutes, a quarter of an hour -> 15 minutes, an hour -> 60 minutes. Digits with
  a unit ("2 hours") get the conversion too.
- Spanish, French and German numbers in words count before a unit ("tres noches", "deux
  heures" -> 120 minutes, "zwei Wochen" -> 14 days), to twelve and a few more.
- Chinese numerals count before a unit or classifier (两晚, 五十个词, 三个小时), never after
  周/星期 (周一 is Monday).
- Nothing inside quoted text, paths, e-mail addresses or identifiers is read.
"""

from __future__ import annotations

import re

from ember.planner.quotes import unquoted

__all__ = ["annotate_numbers", "spoken_numbers"]

_SMALL = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORDS = {word: n for n, word in enumerate(_SMALL)} | {w: 20 + 10 * n for n, w in enumerate(_TENS)}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_WORD = "|".join([*_WORDS, *_SCALES, "dozen"])
_A = r"(?:an?\s+(?=(?:hundred|thousand|million|dozen)\b))?"  # "a hundred", "a dozen"
_SPOKEN = re.compile(rf"\b{_A}(?:{_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_WORD}))*\b", re.IGNORECASE)
_UNIT = re.compile(
    r"\s*(hours?|hrs?|minutes?|mins?|days?|nights?|weeks?|words?|people|persons?|guests?)\b",
    re.IGNORECASE,
)
_DIGITS_WITH_UNIT = re.compile(
    r"(?<![\w.,:/-])([0-9]+(?:\.[0-9]+)?)\s*(hours?|hrs?|weeks?)\b", re.I
)
_FIXED = [  # phrases that are a number with a unit
    (re.compile(r"\bhalf[\s-]+an?[\s-]+hour\b|\bhalf[\s-]hour\b", re.I), 30, "minutes"),
    (re.compile(r"\ba\s+quarter\s+of\s+an\s+hour\b", re.I), 15, "minutes"),
    (re.compile(r"\ban\s+hour\b", re.I), 60, "minutes"),
    (re.compile(r"\ba\s+fortnight\b", re.I), 14, "days"),
    (re.compile(r"\ba\s+week\b", re.I), 7, "days"),
]
# Spanish, French and German numbers, read before a unit only ("tres noches", "deux heures",
# "zwei Stunden"): a count, with the hours and weeks converted as in English.
_FOREIGN_NUMBERS = {
    1: "un una uno une ein eine einem einer",
    2: "dos deux zwei",
    3: "tres trois drei",
    4: "cuatro quatre vier",
    5: "cinco cinq fünf",
    6: "seis six sechs",
    7: "siete sept sieben",
    8: "ocho huit acht",
    9: "nueve neuf neun",
    10: "diez dix zehn",
    11: "once onze elf",
    12: "doce douze zwölf",
    14: "catorce quatorze vierzehn",
    15: "quince quinze fünfzehn",
    20: "veinte vingt zwanzig",
    30: "treinta trente dreißig",
}
FOREIGN_VALUES = {word: n for n, words in _FOREIGN_NUMBERS.items() for word in words.split()}
"""Each Spanish, French and German number word above, and its value."""
_FOREIGN_COUNT = re.compile(
    rf"\b({'|'.join(FOREIGN_VALUES)})\s+(?:(?P<hours>horas?|heures?|stunden?)"
    r"|(?P<weeks>semanas?|semaines?|wochen?)"
    r"|(?:noches?|nuits?|nächte|nacht|d[ií]as?|jours?|tage[n]?|minutos?|minutes?|minuten?"
    r"|personas?|personnes?|personen|palabras?|mots?|wörter|worte)\b)",
    re.IGNORECASE,
)
_CN_DIGITS = {char: n for n, char in enumerate("零一二三四五六七八九")} | {"两": 2}
_CN = re.compile(
    r"(?<![周期])([零一二两三四五六七八九十百千]+)(?=(?:个)?(?:晚|天|夜|小时|分钟|周|星期|词|字|人|位))"
)
_CN_HOURS = re.compile(r"([零一二两三四五六七八九十百千]+)个?小时")
# Text no number is read from, besides quotes (`ember.planner.quotes`): e-mail addresses,
# paths, identifiers.
_SHIELD = re.compile(r"\S+@\S+|(?<![\w.])/[\w./-]+|\b[A-Za-z]+-[0-9][\w-]*")


def spoken_numbers(text: str, *, counts_only: bool = False) -> list[tuple[float, ...]]:
    """Each number `text` states in words or with a unit, with its conversions (the value as
    written first): "two hours" -> (2, 120). `counts_only`: only those a plan must use
    somewhere, a number before a unit or of 10 and more ("the two cities" counts nothing)."""
    return [
        values
        for _, _, values, counted in _found(text)
        if not counts_only or counted or values[0] >= 10
    ]


def annotate_numbers(text: str) -> str:
    """`text` with the value of each such number written after it: "two hours (120 minutes)",
    "three hundred and fifty (350) dollars" (not for a number under 10 with no conversion)."""
    out = text
    for start, end, values, found_unit in sorted(_found(text), reverse=True):
        shown = values[-1]
        unit = "" if found_unit == "counted" else found_unit
        if not unit and shown < 10:
            continue  # "two nights": small numbers in words are copied well as they are
        note = f"{_plain(shown)} {unit}" if unit else _plain(shown)
        if re.match(r"\s*\(", out[end:]) or out[start:end].strip() == _plain(shown):
            continue
        out = f"{out[:end]} ({note}){out[end:]}"
    return out


def _found(text: str) -> list[tuple[int, int, tuple[float, ...], str]]:
    """(start, end, values, unit) of each number phrase, not overlapping; the unit is the one
    converted to, or "counted" for a number before a unit with no conversion."""
    shielded = _SHIELD.sub(lambda m: " " * len(m.group()), unquoted(text))
    found: list[tuple[int, int, tuple[float, ...], str]] = []

    def add(start: int, end: int, values: tuple[float, ...], unit: str) -> None:
        if not any(s < end and start < e for s, e, _, _ in found):
            found.append((start, end, values, unit))

    for pattern, fixed, fixed_unit in _FIXED:
        for match in pattern.finditer(shielded):
            add(match.start(), match.end(), (fixed,), fixed_unit)
    for match in _SPOKEN.finditer(shielded):
        value = _words_value(match.group())
        unit_match = _UNIT.match(shielded, match.end())
        words = match.group().lower().split()
        if value is None or (words == ["one"] and unit_match is None):
            continue
        values, unit = _converted(value, unit_match.group(1)) if unit_match else ((value,), "")
        end = unit_match.end() if unit_match and unit else match.end()
        add(match.start(), end, values, unit or ("counted" if unit_match else ""))
    for match in _FOREIGN_COUNT.finditer(shielded):
        unit = "hours" if match["hours"] else "weeks" if match["weeks"] else ""
        values, unit = _converted(FOREIGN_VALUES[match.group(1).lower()], unit)
        add(match.start(), match.end() if unit else match.end(1), values, unit or "counted")
    for match in _DIGITS_WITH_UNIT.finditer(shielded):
        values, unit = _converted(float(match.group(1)), match.group(2))
        if unit:
            add(match.start(), match.end(), values, unit)
    for match in _CN.finditer(shielded):
        value = _chinese_value(match.group(1))
        if value is not None:
            hours = _CN_HOURS.match(shielded, match.start())
            values, unit = _converted(value, "hours") if hours else ((value,), "counted")
            add(match.start(), hours.end() if hours else match.end(), values, unit)
    return found


def _converted(value: float, unit: str) -> tuple[tuple[float, ...], str]:
    unit = unit.lower()
    if unit.startswith(("hour", "hr")):
        return (value, value * 60), "minutes"
    if unit.startswith("week"):
        return (value, value * 7), "days"
    return (value,), ""


def _words_value(phrase: str) -> float | None:
    total: float = 0
    current: float = 0
    for word in re.split(r"[\s-]+", phrase.lower()):
        if word == "and":
            continue
        if word in ("a", "an"):
            current = current or 1
        elif word == "dozen":
            current = (current or 1) * 12
        elif word in _SCALES:
            scale = _SCALES[word]
            if scale == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * scale
                current = 0
        elif word in _WORDS:
            current += _WORDS[word]
        else:
            return None
    return total + current


def _chinese_value(numeral: str) -> float | None:
    total = 0
    current = 0
    for char in numeral:
        if char in _CN_DIGITS:
            current = _CN_DIGITS[char]
        elif char in "十百千":
            scale = {"十": 10, "百": 100, "千": 1000}[char]
            total += (current or 1) * scale
            current = 0
        else:
            return None
    return float(total + current)


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
