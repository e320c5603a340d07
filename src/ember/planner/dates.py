"""Relative dates in a request, written out (pure).

Small models copy well and compute badly: given "tomorrow" and today's date they often write
today's. `annotate_dates` appends the date each relative expression means, in ISO form, right
after it ("tomorrow" -> "tomorrow (2026-03-03)"), so the planner copies it. English and
Chinese expressions are recognised; anything else is left as it is.

- today, tonight, this morning/afternoon/evening; 今天, 今晚
- tomorrow, the day after tomorrow; 明天, 明晚, 后天
- a weekday: "Thursday", "this Thursday", "on Thursday" -> its next occurrence (today if it is
  today); "next Thursday" -> the Thursday of next week (weeks start on Monday); 周四, 星期四,
  下周四
- a month and day: "March 18", "18 March", "Mar 18th"; 3月18日 -> that day this year, or next
  year if it has passed
"""

from __future__ import annotations

import re
from datetime import date, timedelta

__all__ = ["annotate_dates"]

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_CN_DAYS = "一二三四五六日天"

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bthe day after tomorrow\b|后天", re.I), "plus2"),
    (re.compile(r"\btomorrow(?:'s)?\b|明天|明晚", re.I), "plus1"),
    (
        re.compile(
            r"\b(?:today(?:'s)?|tonight|this (?:morning|afternoon|evening))\b|今天|今晚", re.I
        ),
        "today",
    ),
    (re.compile(rf"\bnext ({'|'.join(_WEEKDAYS)})\b|下(?:周|星期)([{_CN_DAYS}])", re.I), "next"),
    (
        re.compile(
            rf"\b(?:(?:this|on|coming) )?({'|'.join(_WEEKDAYS)})\b|(?:周|星期)([{_CN_DAYS}])", re.I
        ),
        "weekday",
    ),
    (re.compile(rf"\b{_MONTH}\.? {_DAY}\b", re.I), "month_day"),
    (re.compile(rf"\b{_DAY} (?:of )?{_MONTH}\b", re.I), "day_month"),
    (re.compile(r"(\d{1,2})月(\d{1,2})[日号]"), "cn_month_day"),
]


def annotate_dates(text: str, today: date) -> str:
    """`text` with " (YYYY-MM-DD)" after each relative date expression it recognises."""
    spans: list[tuple[int, int, date]] = []
    for pattern, kind in _PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end, _ in spans):
                continue  # part of an expression already read ("the day after tomorrow")
            when = _resolve(kind, match, today)
            if when is not None:
                spans.append((match.start(), match.end(), when))
    out = text
    for _, end, when in sorted(spans, reverse=True):
        if not re.match(r"\s*\(?\d{4}-\d{2}-\d{2}", out[end:]):
            out = f"{out[:end]} ({when.isoformat()}){out[end:]}"
    return out


def _resolve(kind: str, match: re.Match[str], today: date) -> date | None:
    if kind in ("today", "plus1", "plus2"):
        return today + timedelta(days={"today": 0, "plus1": 1, "plus2": 2}[kind])
    if kind in ("next", "weekday"):
        day = _weekday(match.group(1) or match.group(2))
        if kind == "next":
            return today + timedelta(days=7 - today.weekday() + day)
        return today + timedelta(days=(day - today.weekday()) % 7)
    if kind in ("month_day", "day_month"):
        name, number = match.groups() if kind == "month_day" else match.groups()[::-1]
        if name == "may":
            return None  # "you may 2 ..." is a verb; the month is written "May"
        return _this_or_next_year(today, _month(name), int(number))
    return _this_or_next_year(today, int(match.group(1)), int(match.group(2)))


def _weekday(name: str) -> int:
    if name in _CN_DAYS:
        return min(_CN_DAYS.index(name), 6)  # 日 and 天 are both Sunday
    return _WEEKDAYS.index(name.lower())


def _month(name: str) -> int:
    prefix = name.lower()[:3]
    return next(i for i, month in enumerate(_MONTHS, start=1) if month.startswith(prefix))


def _this_or_next_year(today: date, month: int, day: int) -> date | None:
    try:
        when = date(today.year, month, day)
        return when if when >= today else date(today.year + 1, month, day)
    except ValueError:
        return None  # "February 30": not a date, left alone
