"""Dates in a request, written out for the planner to copy (pure).

Small models copy well and compute badly: given "tomorrow" and today's date they often write
today's. `annotate_dates` appends the date each relative expression means, in ISO form, right
after it ("tomorrow" -> "tomorrow (2026-03-03)"), so the planner copies it. A date written in
full, with its year, is the user's: it is never changed and never given another date.

Dates written in full are left as written, and nothing inside them is read as a relative date:
2027-03-03, 2027/3/3, "March 3, 2027", "Mar. 3rd 2027", "3 March 2027", "the 3rd of March,
2027", 2027年3月3日; a weekday beside one ("Friday, March 3, 2027") is that date's. In numbers
only (3/4/2027, 3.4.2027, 3-4-2027) no order is assumed, neither day-first nor US month-first:
when one of the two numbers is above 12 it is the day (15/3/2027 and 3/15/2027 are both
2027-03-15), and when both are equal the order does not matter; such a date gets its ISO form.
Otherwise (3/4/2027: 3 April or March 4?) it is left as written, unannotated: no annotation is
better than a wrong one. A two-digit year (3/4/27) is left as written too.

Relative expressions (English and Chinese), with the rules for the ambiguous ones:
- today, tonight, this morning/afternoon/evening, tomorrow, the day after tomorrow, yesterday,
  the day before yesterday; 今天, 今晚, 明天, 明晚, 后天, 大后天, 昨天, 前天
- "in N days/weeks", "N days/weeks from now"; N天后, N周后 (N in digits or words: two, 两, 十)
- end (or last day) of the month -> its last day; end of next month; 月底, 下个月底
- English weekdays (weeks start on Monday):
  - "Tuesday", "this/on/coming Tuesday", "Tuesday this week", "Friday at 9" -> the next one,
    today included (the time does not move it: the current time is not known here).
  - "next Tuesday" -> the Tuesday of next week, as 下周二: said on a Monday, 8 days away (not
    tomorrow); said on a Wednesday, 6 days away (this week's has passed: the coming one).
  - "Tuesday next week", "next week on Tuesday" -> the Tuesday after the coming one, 7-13 days
    away: the issue's table reads "Tuesday next week" said on Wednesday 2024-05-15 as
    2024-05-28, the coming Tuesday being "this week's". It differs from "next Tuesday" only
    when the weekday has passed in the current week.
  - "last Tuesday" -> the latest one before today; "Tuesday last week" -> last week's.
  - "the Tuesday after next" -> 14-20 days away. "every Tuesday", "Tuesdays": left alone.
  - cut short (mon, tue/tues, wed, thu/thur/thurs, fri, sat, sun, with or without a dot): read
    only beside a time after it ("fri 09:40", "Mon 9am") or after on/this/coming (the next one)
    or next (next week's), since "sat", "sun" and "wed" are words too.
- Chinese weekdays: 周二/星期二 -> the next one, today included; 下周二, 上周二, 这周二/本周二
  (may be past), 下下周二 -> the Tuesday of that Monday-to-Sunday week. 每周二 (every Tuesday)
  and 一周一次 (once a week) are left alone.
- a month and day without a year: "March 18", "18 March", "the 1st of February", 3月18日 ->
  that day this year, or next year if it has passed (bookings and events lie ahead); February
  29 -> the next leap year's. Lowercase "may" is a verb, not the month.
- a day of the month alone, as an ordinal: "from the 18th", "Thursday the 25th" -> the next
  such day, today included (this month's, else the next month that has it; a weekday before
  it is its own). Not a rank: "the 5th floor", "the 3rd of the files".

Never read: anything in quotes (every kind `ember.planner.quotes` knows: "...", “...”, « ... »,
„...“, 「...」, '...' between non-letters and more),
paths and URLs (/a/b, C:\\x, docs/x.md), identifiers (C-2041, INV-2026-03, v1.2, snake_case,
report.txt) and e-mail addresses.

Hand-written on purpose: measured by `python -m benchmarks.dates` on the 93 rows of
tests/test_dates.py, these rules read 93/93 at ~50-80 us a request; dateparser 1.5.0 reads 54
(2.6-6 ms a request, 0.3-0.7 s to import and answer once), parsedatetime 2.6 50 (no Chinese),
python-dateutil 32 (one date, no relative phrase), the rules before these 47. See "Dates in
requests" in docs/benchmarks.md. Rules whose needles (words, a digit) are absent from the text
do not run: most requests name no date.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import NamedTuple

from ember.planner.numbers import FOREIGN_VALUES
from ember.planner.quotes import OPENERS, QUOTED

__all__ = ["annotate_dates", "stated_days"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CN_WEEKDAYS = "一二三四五六日天"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# Weekdays and months in Spanish, French and German, each as written and without its accents.
_FOREIGN_WEEKDAYS = {
    "es": "lunes martes miércoles|miercoles jueves viernes sábado|sabado domingo",
    "fr": "lundi mardi mercredi jeudi vendredi samedi dimanche",
    "de": "montag dienstag mittwoch donnerstag freitag samstag|sonnabend sonntag",
}
_FOREIGN_MONTHS = {
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre|setiembre octubre "
    "noviembre diciembre",
    "fr": "janvier février|fevrier mars avril mai juin juillet août|aout septembre octobre "
    "novembre décembre|decembre",
    "de": "januar|jänner februar märz|maerz april mai juni juli august september oktober "
    "november dezember",
}


def _positions(table: dict[str, str]) -> dict[str, int]:
    """Each name in `table` (its languages' names in order, synonyms joined by "|") and its
    position in that order: 0 for Monday or January."""
    return {
        name: i
        for names in table.values()
        for i, synonyms in enumerate(names.split())
        for name in synonyms.split("|")
    }


# "fri 09:40", "next tues": read only beside a time or after on/this/next/coming (`_RULES`),
# since "sat", "sun" and "wed" are words too.
_SHORT_WEEKDAYS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3}
_SHORT_WEEKDAYS |= {"fri": 4, "sat": 5, "sun": 6}
_WEEKDAY_INDEX = {name: i for i, name in enumerate(_WEEKDAYS)} | _positions(_FOREIGN_WEEKDAYS)
_WEEKDAY_INDEX |= _SHORT_WEEKDAYS
_FOREIGN_MONTH_INDEX = {name: i + 1 for name, i in _positions(_FOREIGN_MONTHS).items()}
_CN_DIGITS = {digit: i for i, digit in enumerate("〇一二三四五六七八九")} | {"两": 2}
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_NUMBER_WORDS = {word: i for i, word in enumerate(_WORDS)} | {"eleven": 11, "twelve": 12}
_NUMBER_WORDS |= {"a": 1, "an": 1, "a couple of": 2}
# Spanish, French and German counts of days or weeks ("dentro de tres días", "dans deux
# semaines", "in drei Tagen"); "ocho días", "huit jours", "acht Tage" are a week as said, and
# "quince días", "quinze jours" two (`_in_days`).
_NUMBER_WORDS |= FOREIGN_VALUES
_A_WEEK_AS_SAID = {"ocho": 7, "huit": 7, "acht": 7, "quince": 14, "quinze": 14}

_WD_ANY = "|".join(_WEEKDAYS)
_WD = rf"(?P<wd>{_WD_ANY})"
_WD_SHORT = rf"(?P<wd>{'|'.join(sorted(_SHORT_WEEKDAYS, key=len, reverse=True))})\.?"
# a time of day just after ("fri 09:40", "Tue. at 9am")
_AT_TIME = r"(?=,?\s+(?:at\s+)?[0-9]{1,2}(?::[0-9]{2}|\s*[ap]\.?m\b))"
_MON = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<day>[0-9]{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>[0-9]{4})(?![0-9])"
_MONTH_NEEDLES = " ".join(_MONTHS)
_CN_WD = r"(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"
_CN_WD_ANY = r"(?:周|星期|礼拜)[一二三四五六日天]"
_TRAIL = rf"(?:\s*[(（]\s*(?:{_CN_WD_ANY}|{_WD_ANY})\s*[)）]|\s*{_CN_WD_ANY}|,?\s+(?:{_WD_ANY})\b)?"
_CN_N = r"(?P<n>[0-9]{1,3}|[一二两三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九])"
_EN_N = r"(?P<n>[0-9]{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_EN_N += r"|a\s+couple\s+of)"

_PROTECTED = [  # (needles, pattern)
    (tuple(OPENERS), QUOTED),
    (("`",), re.compile(r"`[^`\n]*`")),  # code
    (("@",), re.compile(r"[!-?A-~]+@[!-?A-~]+")),  # ASCII around an @
    (("/", "\\"), re.compile(r"(?<![!-~])(?=[!-~]*[/\\])(?=[!-~]*[A-Za-z_])[!-~]+")),  # a path
    (("0",), re.compile(r"\b[A-Za-z]+[0-9][A-Za-z0-9_]*\b")),  # ABC123, v2
]
_JOINED = re.compile(r"(?<![A-Za-z0-9_#])[A-Za-z0-9_#]+(?:[-_.:][A-Za-z0-9_#]+)+")
_TO_ZERO = str.maketrans("123456789", "000000000")
_ANNOTATED = re.compile(r"[\s,]*\(?[0-9]{4}-[0-9]{2}-[0-9]{2}")  # already, or written beside
# "Friday, March 3": a weekday just before a date is that date's, not another day.
_LEAD = re.compile(rf"\b(?:{_WD_ANY}),?\s+\Z", re.IGNORECASE | re.ASCII)


class _Rule(NamedTuple):
    pattern: re.Pattern[str]
    resolve: Callable[[re.Match[str], date], date | None]
    needles: tuple[str, ...]  # one is in the lowercased text when it can match ("0": a digit)
    written: bool  # a date written with its year: its text is claimed even when it is not
    # read (3/4/2027, February 30, 2027), so that nothing inside it is read as a relative date
    annotate: bool  # its ISO form is appended (not to a date written out in words or ISO)
    dated: bool  # names a day of a month: a weekday just before it is that day's


class _Found(NamedTuple):
    start: int
    end: int
    when: date | None  # None: claimed, not read (3/4/2027)
    annotate: bool


def annotate_dates(text: str, today: date) -> str:
    """`text` with " (YYYY-MM-DD)" after each relative date expression it recognises."""
    parts: list[str] = []
    last = 0
    for found in _find(text, today):
        if found.annotate and found.when is not None and not _ANNOTATED.match(text, found.end):
            parts += [text[last : found.end], f" ({found.when.isoformat()})"]
            last = found.end
    return "".join([*parts, text[last:]])


def stated_days(text: str, today: date) -> list[date]:
    """Every day `text` names, written in full ("March 3, 2027", which `annotate_dates`
    leaves as it is) or as a relative phrase ("next Friday"), in order."""
    return [found.when for found in _find(text, today) if found.when is not None]


def _find(text: str, today: date) -> list[_Found]:
    """The date expressions in `text`, in order. Rules first claim first: written dates before
    relative ones, longer phrases before their parts ("Tuesday next week" before "Tuesday")."""
    keys = text.lower().translate(_TO_ZERO)  # what needles are looked for in
    taken = _protected(text, keys)
    found: list[_Found] = []
    for rule in _RULES:
        if not any(needle in keys for needle in rule.needles):
            continue  # a cheap look first: most requests name no date at all
        for match in rule.pattern.finditer(text):
            start, end = match.span()
            clash = any(start < stop and begin < end for begin, stop in taken)
            when = None if clash else rule.resolve(match, today)
            if when is None and not rule.written:
                continue  # a written date is claimed even so (in quotes, touching a path)
            lead = _LEAD.search(text, max(0, start - 16), start) if rule.dated else None
            taken += [(start, end), (lead.start(), start)] if lead else [(start, end)]
            if not clash:
                found.append(_Found(start, end, when, rule.annotate))
    return sorted(found)


def _protected(text: str, keys: str) -> list[tuple[int, int]]:
    """Spans never read: quotes, e-mail addresses, paths and URLs, identifiers."""
    spans = [m.span() for m in _JOINED.finditer(text) if _is_identifier(m[0])]
    for needles, pattern in _PROTECTED:
        if any(needle in keys for needle in needles):
            spans += [m.span() for m in pattern.finditer(text)]
    return spans


def _is_identifier(token: str) -> bool:
    """C-2041, INV-2026-03, snake_case, report.txt, v1.2: a letter, and a digit, _ or ."""
    return any(c.isalpha() for c in token) and any(c.isdigit() or c in "_." for c in token)


def _written(match: re.Match[str], _today: date) -> date | None:
    return _valid(int(match["year"]), _month(match["mon"]), int(match["day"]))


def _numeric(match: re.Match[str], _today: date) -> date | None:
    first, second, year = int(match["a"]), int(match["b"]), match["year"]
    if len(year) != 4 or (first <= 12 and second <= 12 and first != second):
        return None  # 3/4/2027, or a two-digit year: left as written
    day, month = (first, second) if first > 12 else (second, first)
    return _valid(int(year), month, day)


def _offset(days: int) -> Callable[[re.Match[str], date], date]:
    return lambda _match, today: today + timedelta(days=days)


def _in_days(match: re.Match[str], today: date) -> date:
    number = " ".join(match["n"].lower().split())
    weekly = match["unit"][0].lower() in "ws周星礼"  # weeks, semanas, semaines, Wochen
    if not weekly and number in _A_WEEK_AS_SAID:
        return today + timedelta(days=_A_WEEK_AS_SAID[number])
    count = _NUMBER_WORDS.get(number) or _cn_int(number)
    return today + timedelta(days=count * (7 if weekly else 1))


def _month_end(months_ahead: int) -> Callable[[re.Match[str], date], date]:
    def resolve(_match: re.Match[str], today: date) -> date:
        year, month = divmod(today.month - 1 + months_ahead, 12)
        year, month = today.year + year, month + 1
        return date(year, month, calendar.monthrange(year, month)[1])

    return resolve


def _rolling(first: int) -> Callable[[re.Match[str], date], date]:
    """The weekday in the seven days from `first` days after today."""

    def resolve(match: re.Match[str], today: date) -> date:
        return today + timedelta(days=first + (_weekday(match) - today.weekday() - first) % 7)

    return resolve


def _calendar_week(weeks: int) -> Callable[[re.Match[str], date], date]:
    """The weekday in the Monday-to-Sunday week `weeks` after the current one."""

    def resolve(match: re.Match[str], today: date) -> date:
        return today + timedelta(days=7 * weeks + _weekday(match) - today.weekday())

    return resolve


def _weekday(match: re.Match[str]) -> int:
    name = match["wd"]
    if name in _CN_WEEKDAYS:
        return min(_CN_WEEKDAYS.index(name), 6)  # 日 and 天 are both Sunday
    return _WEEKDAY_INDEX[name.lower()]


def _month_day(match: re.Match[str], today: date) -> date | None:
    if match["mon"] == "may":
        return None  # "you may 2 ...": a verb; the month is written "May"
    month, day = _month(match["mon"]), int(match["day"])
    for year in range(today.year, today.year + 9):
        when = _valid(year, month, day)
        if when is not None and when >= today:
            return when
    return None  # "February 30": not a date, left alone


def _day_of_month(match: re.Match[str], today: date) -> date | None:
    """A day of the month alone ("the 25th"): the next such day, today included (this month's,
    else a later month's that has one)."""
    day = int(match["day"])
    for ahead in range(13):
        year, month = divmod(today.month - 1 + ahead, 12)
        when = _valid(today.year + year, month + 1, day)
        if when is not None and when >= today:
            return when
    return None


def _month(name: str) -> int:
    if name.isdigit():
        return int(name)
    return _FOREIGN_MONTH_INDEX.get(name.lower()) or _MONTHS.index(name[:3].lower()) + 1


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _cn_int(number: str) -> int:
    if number.isdigit():
        return int(number)
    tens, ten, ones = number.rpartition("十")
    return (_CN_DIGITS.get(tens, 1) * 10 if ten else 0) + _CN_DIGITS.get(ones, 0)


def _rule(
    needles: str,
    pattern: str,
    resolve: Callable[[re.Match[str], date], date | None],
    written: bool = False,
    annotate: bool = True,
) -> _Rule:
    """A rule that runs only on text holding one of `needles` (separated by spaces)."""
    compiled = re.compile(pattern, re.IGNORECASE | re.ASCII)
    dated = "day" in compiled.groupindex or "b" in compiled.groupindex
    return _Rule(compiled, resolve, tuple(needles.split()), written, annotate, dated)


def _as_written(needles: str, pattern: str) -> _Rule:
    return _rule(needles, pattern, _written, written=True, annotate=False)


def _foreign(
    needles: str,
    pattern: str,
    resolve: Callable[[re.Match[str], date], date | None],
    written: bool = False,
) -> _Rule:
    """A rule for Spanish, French or German, read with their letters (ñ, é, ü) as letters; its
    dates are annotated, those written with their year too (a small model knows "March"
    better than "marzo")."""
    compiled = re.compile(pattern, re.IGNORECASE)
    dated = "day" in compiled.groupindex
    return _Rule(compiled, resolve, tuple(needles.split()), written, True, dated)


def _names(table: dict[str, str], language: str) -> str:
    """A regex alternation of a language's names in `table` (weekdays or months)."""
    return table[language].replace(" ", "|")


def _foreign_rules() -> list[_Rule]:
    """Relative dates, weekdays and days of a month in Spanish, French and German. "Next
    Monday" is the coming Monday after today in all three ("el próximo lunes", "lundi
    prochain", "nächsten Montag"); "Monday of next week" is the Monday of the Monday-to-Sunday
    week after this one ("el lunes de la semana que viene", "lundi de la semaine prochaine",
    "Montag nächster Woche"). Not read: French "hier" (German for "here"), "por la mañana" and
    German "Morgen" after an article or "guten" (the morning, not tomorrow), weekdays after
    "cada", "los", "chaque", "jeden" (every one)."""
    rules: list[_Rule] = []
    number = "|".join(FOREIGN_VALUES)
    n = rf"(?P<n>[0-9]{{1,3}}|{number})"
    for language, lead, next_week, coming, last, this, every in (
        (
            "es",
            r"(?:el\s+)?",
            r"\s+de\s+la\s+(?:semana\s+que\s+viene|pr[óo]xima\s+semana)",
            (r"pr[óo]ximo\s+{wd}", r"{wd}\s+(?:pr[óo]ximo|que\s+viene)"),
            (r"{wd}\s+pasado", r"pasado\s+{wd}"),
            r"este\s+",
            r"(?<!\blos\s)(?<!\bcada\s)(?<!\btodos\s)",
        ),
        (
            "fr",
            r"(?:le\s+)?",
            r"\s+de\s+la\s+semaine\s+prochaine",
            (r"{wd}\s+prochain", r"prochain\s+{wd}"),
            (r"{wd}\s+dernier",),
            r"ce\s+",
            r"(?<!\bchaque\s)",
        ),
        (
            "de",
            r"(?:am\s+)?",
            r"\s+(?:der\s+)?nächste[nr]?\s+woche",
            (r"(?:nächste[nmrs]?|kommende[nmr]?)\s+{wd}",),
            (r"(?:letzte[nmr]?|vergangene[nmr]?)\s+{wd}",),
            r"diese[nm]\s+",
            r"(?<!\bjeden\s)(?<!\bjedem\s)",
        ),
    ):
        days = _FOREIGN_WEEKDAYS[language].replace("|", " ")
        names = _names(_FOREIGN_WEEKDAYS, language)
        wd = rf"(?P<wd>{names})"
        rules += [_foreign(days, rf"\b{lead}{wd}{next_week}\b", _calendar_week(1))]
        if language == "de":  # "nächste Woche Montag"
            rules += [_foreign(days, rf"\bnächste\s+woche,?\s+(?:am\s+)?{wd}\b", _calendar_week(1))]
        rules += [_foreign(days, rf"\b{lead}{p.format(wd=wd)}\b", _rolling(1)) for p in coming]
        rules += [_foreign(days, rf"\b{lead}{p.format(wd=wd)}\b", _rolling(-7)) for p in last]
        rules += [_foreign(days, rf"\b{this}{wd}\b", _rolling(0))]
        rules += [_foreign(days, rf"{every}\b{lead}{wd}\b", _rolling(0))]
    units = {"es": r"d[ií]as?|semanas?", "fr": r"jours?|semaines?", "de": r"tage[n]?|wochen"}
    rules += [
        _foreign("pasado", r"\bpasado\s+mañana\b", _offset(2)),
        _foreign("demain", r"\baprès[-\s]demain\b|\bapres-demain\b", _offset(2)),
        _foreign("übermorgen", r"\bübermorgen\b", _offset(2)),
        _foreign("ayer", r"\banteayer\b|\bantes\s+de\s+ayer\b", _offset(-2)),
        _foreign("avant", r"\bavant[-\s]hier\b", _offset(-2)),
        _foreign("vorgestern", r"\bvorgestern\b", _offset(-2)),
        _foreign("hoy esta", r"\bhoy\b|\besta\s+(?:mañana|tarde|noche)\b", _offset(0)),
        _foreign(
            "aujourd ce cet",
            r"\baujourd['’]hui\b|\bce\s+(?:soir|matin)\b|\bcet\s+après-midi\b",
            _offset(0),
        ),
        _foreign(
            "heute",
            r"\bheute\b(?:\s+(?:morgen|früh|vormittag|mittag|nachmittag|abend|nacht)\b)?",
            _offset(0),
        ),
        _foreign(
            "mañana", r"(?<!\bla\s)(?<!\besta\s)(?<!\bcada\s)(?<!\buna\s)\bmañana\b", _offset(1)
        ),
        _foreign("demain", r"\bdemain\b", _offset(1)),
        _foreign(
            "morgen",
            r"(?<!\bguten\s)(?<!\bam\s)(?<!\bjeden\s)(?<!\bden\s)(?<!\bdiesen\s)(?<!\beinen\s)"
            r"\bmorgen\b",
            _offset(1),
        ),
        _foreign("ayer", r"\bayer\b", _offset(-1)),
        _foreign("gestern", r"\bgestern\b", _offset(-1)),
        _foreign("d semana", rf"\b(?:en|dentro\s+de)\s+{n}\s+(?P<unit>{units['es']})\b", _in_days),
        _foreign("jour semaine", rf"\bdans\s+{n}\s+(?P<unit>{units['fr']})\b", _in_days),
        _foreign("tag woche", rf"\bin\s+{n}\s+(?P<unit>{units['de']})\b", _in_days),
        _foreign(
            "mes mois monat",
            r"\bfin(?:al)?\s+del\s+(?:mes\s+que\s+viene|pr[óo]ximo\s+mes)\b"
            r"|\bfin\s+du\s+mois\s+prochain\b|\bende\s+(?:des\s+)?nächsten\s+monats\b",
            _month_end(1),
        ),
        _foreign(
            "mes mois monat",
            r"\b(?:a\s+)?fin(?:al|ales)?\s+de(?:l|\s+este)?\s+mes\b|\bfin\s+(?:du|de\s+ce)\s+mois\b"
            r"|\bende\s+(?:des|dieses)\s+monats\b|\bmonatsende\b",
            _month_end(0),
        ),
    ]
    return rules


def _foreign_dated() -> list[_Rule]:
    """Days of a month in Spanish ("el lunes 22 de junio (de 2026)"), French ("le 1er juillet
    2026") and German ("Montag, den 22. Juni 2026"): with a year, as written (and annotated);
    without one, the next such day. A weekday before one is that day's."""
    rules: list[_Rule] = []
    for language, day in (
        ("es", r"(?:el\s+)?(?:(?:{wd}),?\s+)?{day}\s+de\s+{mon}"),
        ("fr", r"(?:le\s+)?(?:(?:{wd})\s+)?{day}(?:er)?\s+{mon}"),
        ("de", r"(?:am\s+)?(?:(?:{wd}),?\s+(?:den\s+)?)?{day}(?:\.\s*|\s+){mon}"),
    ):
        months = _FOREIGN_MONTHS[language].replace("|", " ")
        phrase = day.format(
            wd=_names(_FOREIGN_WEEKDAYS, language),
            day=r"(?P<day>[0-9]{1,2})",
            mon=rf"(?P<mon>{_names(_FOREIGN_MONTHS, language)})",
        )
        year = r"(?:,?\s+de(?:l)?)?" if language == "es" else ","
        rules += [
            _foreign(months, rf"\b{phrase}{year}?\s+{_YEAR}", _written, written=True),
            _foreign(months, rf"\b{phrase}\b(?![\s,]*(?:de(?:l)?\s+)?[0-9])", _month_day),
        ]
    return rules


_NO_YEAR = r"(?!,?\s*(?:'[0-9]{2}|[0-9]{3}))"  # "March 3 '27", "March 3, 20271": not read
_ORDINAL_DAY = r"(?P<day>[0-9]{1,2})(?:st|nd|rd|th)\b"
# "the 5th floor", "the 3rd invoice", "the 2nd of the files": a rank, not a day of the month
_NOT_A_COUNT = r"(?!\s+(?:of\b|(?!(?:at|and|for|to|that|until)\b)[a-z]+\b))"
_NO_TIME = r"(?<![0-9][:./-])"  # "12:30 January": not the 30th
_NOT_EVERY = r"(?<!every\s)(?<!each\s)"
_CN_NOT_EVERY = r"(?<![每上下这本个0-9一二两三四五六七八九十几])"
_DAYS, _CN_WEEK = "day", "周 星期 礼拜"  # needles: every English weekday ends in "day"
_SHORT_NEEDLES = "mon tue wed thu fri sat sun"
_RULES = [
    _as_written(_MONTH_NEEDLES, rf"\b{_MON}\s+(?:the\s+)?{_DAY},?\s+(?:of\s+)?{_YEAR}{_TRAIL}"),
    _as_written(
        _MONTH_NEEDLES, rf"{_NO_TIME}\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}{_TRAIL}"
    ),
    _as_written(
        "0",
        rf"(?<![0-9])(?P<year>[0-9]{{4}})(?P<sep>[-/.])(?P<mon>[0-9]{{1,2}})(?P=sep)"
        rf"(?P<day>[0-9]{{1,2}})(?![0-9]){_TRAIL}",
    ),
    _as_written(
        "年",
        rf"(?<![0-9])(?P<year>[0-9]{{4}})\s*年\s*(?P<mon>[0-9]{{1,2}})\s*月\s*{_DAY}\s*[日号]"
        rf"{_TRAIL}",
    ),
    _rule(
        "0",
        r"(?<![0-9/.-])(?P<a>[0-9]{1,2})(?P<sep>[-/.])(?P<b>[0-9]{1,2})(?P=sep)"
        r"(?P<year>[0-9]{4}|[0-9]{2})(?![0-9])",
        _numeric,
        written=True,
    ),
    _rule("tomorrow", r"\bthe\s+day\s+after\s+tomorrow\b", _offset(2)),
    _rule("yesterday", r"\bthe\s+day\s+before\s+yesterday\b", _offset(-2)),
    _rule("后天", r"大后天", _offset(3)),
    _rule("前天", r"大前天", _offset(-3)),
    _rule("后天", r"后天", _offset(2)),
    _rule("前天", r"前天", _offset(-2)),
    _rule("tomorrow 明", r"\btomorrow(?:'s)?\b|明天|明晚|明早|明日", _offset(1)),
    _rule("yesterday 昨", r"\byesterday(?:'s)?\b|昨天|昨晚|昨日", _offset(-1)),
    _rule(
        "today tonight this 今",
        r"\b(?:today|tonight)(?:'s)?\b|\bthis\s+(?:morning|afternoon|evening)\b|今天|今晚|今早|今日",
        _offset(0),
    ),
    _rule("day week", rf"\bin\s+{_EN_N}\s+(?P<unit>days?|weeks?)(?:'?\s+time)?\b", _in_days),
    _rule("from", rf"\b{_EN_N}\s+(?P<unit>days?|weeks?)\s+from\s+(?:now|today)\b", _in_days),
    _rule("后", rf"{_CN_N}\s*个?(?P<unit>天|日|周|星期|礼拜)之?后", _in_days),
    _rule(
        "month 月",
        r"\b(?:the\s+)?(?:end|last\s+day)\s+of\s+next\s+month\b|下个?月[底末]",
        _month_end(1),
    ),
    _rule(
        "month 月",
        r"\b(?:the\s+)?(?:end|last\s+day)\s+of\s+(?:the\s+|this\s+)?month\b|(?:这个|本)?月[底末]",
        _month_end(0),
    ),
    _rule("next", rf"\b(?:on\s+)?{_WD}\s+(?:of\s+)?next\s+week\b", _rolling(7)),
    _rule("next", rf"\bnext\s+week(?:\s+on|,)?\s+{_WD}\b(?:'s)?", _rolling(7)),
    _rule("last", rf"\b(?:on\s+)?{_WD}\s+(?:of\s+)?last\s+week\b", _calendar_week(-1)),
    _rule("last", rf"\blast\s+week(?:\s+on|,)?\s+{_WD}\b(?:'s)?", _calendar_week(-1)),
    _rule("this", rf"\b(?:on\s+)?{_WD}\s+(?:of\s+)?this\s+week\b", _rolling(0)),
    _rule("after", rf"\b(?:the\s+)?{_WD}\s+after\s+next\b", _rolling(14)),
    _rule("next", rf"\bnext\s+{_WD}\b(?:'s)?", _calendar_week(1)),
    _rule("last", rf"\blast\s+{_WD}\b(?:'s)?", _rolling(-7)),
    _rule("下下", r"下下" + _CN_WD, _calendar_week(2)),
    _rule("下", r"下个?" + _CN_WD, _calendar_week(1)),
    _rule("上", r"上个?" + _CN_WD, _calendar_week(-1)),
    _rule("这 本", r"(?:这个?|本)" + _CN_WD, _calendar_week(0)),
    _rule(_MONTH_NEEDLES, rf"\b{_MON}\s+(?:the\s+)?{_DAY}\b{_NO_YEAR}{_TRAIL}", _month_day),
    _rule(
        _MONTH_NEEDLES,
        rf"{_NO_TIME}\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MON}\b{_NO_YEAR}{_TRAIL}",
        _month_day,
    ),
    _rule("月", rf"(?<![年0-9])(?P<mon>[0-9]{{1,2}})\s*月\s*{_DAY}\s*[日号]{_TRAIL}", _month_day),
    _rule("st nd rd th", rf"\bthe\s+{_ORDINAL_DAY}{_NOT_A_COUNT}", _day_of_month),
    _rule(
        _DAYS, rf"{_NOT_EVERY}\b(?:(?:this|on|coming|this\s+coming)\s+)?{_WD}\b(?:'s)?", _rolling(0)
    ),
    _rule(_CN_WEEK, _CN_NOT_EVERY + _CN_WD, _rolling(0)),
    _rule(_SHORT_NEEDLES, rf"\bnext\s+{_WD_SHORT}(?![a-z])", _calendar_week(1)),
    _rule(_SHORT_NEEDLES, rf"\b(?:this|on|coming)\s+{_WD_SHORT}(?![a-z])", _rolling(0)),
    _rule(_SHORT_NEEDLES, rf"{_NOT_EVERY}\b{_WD_SHORT}(?![a-z]){_AT_TIME}", _rolling(0)),
    # after every English and Chinese rule: what those claim is not read again
    *_foreign_dated(),
    *_foreign_rules(),
]
