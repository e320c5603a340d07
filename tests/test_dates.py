"""Dates in a request are written out, so a small model copies them (pure)."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ember.planner.dates import annotate_dates

MONDAY = date(2026, 3, 2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Check tomorrow's weather", "Check tomorrow's (2026-03-03) weather"),
        ("a hotel for tonight", "a hotel for tonight (2026-03-02)"),
        ("the day after tomorrow", "the day after tomorrow (2026-03-04)"),
        ("this Thursday at 09:30", "this Thursday (2026-03-05) at 09:30"),
        ("on Monday", "on Monday (2026-03-02)"),
        ("next Monday", "next Monday (2026-03-09)"),
        ("3 nights from March 18", "3 nights from March 18 (2026-03-18)"),
        ("the 1st of February", "the 1st of February (2027-02-01)"),  # passed: next year's
        ("明天去上海", "明天 (2026-03-03)去上海"),
        ("下周一和周日", "下周一 (2026-03-09)和周日 (2026-03-08)"),
        ("3月18日", "3月18日 (2026-03-18)"),
        ("2 nights from the 18th, then", "2 nights from the 18th (2026-03-18), then"),
        ("on Thursday the 26th at 10am", "on Thursday the 26th (2026-03-26) at 10am"),
        ("starting the 1st that costs", "starting the 1st (2026-04-01) that costs"),  # passed
        ("until the 31st.", "until the 31st (2026-03-31)."),
    ],
)
def test_relative_dates_get_their_iso_date(text: str, expected: str) -> None:
    assert annotate_dates(text, MONDAY) == expected


@pytest.mark.parametrize(
    "text",
    [
        "you may 2 things",
        "February 30",
        "tomorrow (2026-03-03)",
        "on 2026-03-03",
        "no dates",
        "on the 5th floor",  # a rank, not a day
        "take the 5th seat",  # a word that only ends like "at" is a rank's too
        "read the 3rd of the files",
    ],
)
def test_text_without_a_resolvable_relative_date_is_left_alone(text: str) -> None:
    assert annotate_dates(text, MONDAY) == text


# (today, request, the date it names). "|" marks where " (YYYY-MM-DD)" goes; a request without
# one is left exactly as written: its date is written in full (then the date is the one written)
# or there is none to read (None: repeated, ambiguous).
TABLE = [
    # The issue's table: today is Wednesday 2024-05-15.
    ("2024-05-15", "Book it for April 25th 2024", "2024-04-25"),
    ("2024-05-15", "on March 3, 2027 please", "2027-03-03"),
    ("2024-05-15", "on 25 April 2024", "2024-04-25"),
    ("2024-05-15", "on Tuesday next week|", "2024-05-28"),
    ("2024-05-15", "in two weeks|", "2024-05-29"),
    ("2024-05-15", "Book a table for today|", "2024-05-15"),
    ("2024-05-15", "what did I spend yesterday|?", "2024-05-14"),
    ("2024-05-15", "the day before yesterday|", "2024-05-13"),
    ("2024-05-15", "this Tuesday|", "2024-05-21"),  # the coming one
    ("2024-05-15", "next Tuesday|", "2024-05-21"),  # next week's (this week's has passed)
    ("2024-05-15", "next Friday|", "2024-05-24"),  # next week's, not the coming one
    ("2024-05-15", "Friday next week|", "2024-05-24"),
    ("2024-05-15", "last Tuesday|", "2024-05-14"),
    ("2024-05-15", "next Wednesday|", "2024-05-22"),
    ("2024-05-15", "on Wednesday|", "2024-05-15"),
    ("2024-05-15", "Friday| at 9", "2024-05-17"),
    ("2024-05-15", "this coming Friday|", "2024-05-17"),
    ("2024-05-15", "Get me Saturday's| forecast", "2024-05-18"),
    ("2024-05-15", "Thursday last week|", "2024-05-09"),
    ("2024-05-15", "next week on Monday|", "2024-05-27"),
    ("2024-05-15", "the Tuesday after next|", "2024-06-04"),
    ("2024-05-15", "pay by the end of the month|", "2024-05-31"),
    ("2024-05-15", "in 10 days|", "2024-05-25"),
    ("2024-05-15", "3 days from now|", "2024-05-18"),
    ("2024-05-15", "May 20|", "2024-05-20"),
    ("2024-05-15", "Friday, March 3, 2027", "2027-03-03"),
    ("2024-05-15", "2027-03-03", "2027-03-03"),
    ("2024-05-15", "on 15/3/2027|", "2027-03-15"),  # 15 is the day
    ("2024-05-15", "on 3/15/2027|", "2027-03-15"),
    ("2024-05-15", "on 3/3/2027|", "2027-03-03"),
    ("2024-05-15", "on 3/4/2027", None),  # 3 April or March 4: left as written
    ("2024-05-15", "every Friday", None),
    ("2024-05-15", "明天|上午", "2024-05-16"),
    ("2024-05-15", "后天|下午", "2024-05-17"),
    ("2024-05-15", "下周二|开会", "2024-05-21"),  # 下周: next calendar week
    ("2024-05-15", "周五|", "2024-05-17"),
    ("2024-05-15", "上周五|", "2024-05-10"),
    ("2024-05-15", "3月18日|", "2025-03-18"),
    ("2024-05-15", "2027年3月3日", "2027-03-03"),
    ("2024-05-15", "三天后|", "2024-05-18"),
    ("2024-05-15", "月底|前", "2024-05-31"),
    ("2024-05-15", "每周一", None),
    # A Monday: "next Tuesday" is not tomorrow.
    ("2026-03-02", "next Tuesday|", "2026-03-10"),
    ("2026-03-02", "Tuesday|", "2026-03-03"),
    ("2026-03-02", "last Monday|", "2026-02-23"),
    ("2026-03-02", "in a week|", "2026-03-09"),
    # Month ends.
    ("2024-01-31", "tomorrow|", "2024-02-01"),
    ("2024-01-31", "end of the month|", "2024-01-31"),
    ("2024-01-31", "end of next month|", "2024-02-29"),
    ("2027-01-05", "for the last day of next month|", "2027-02-28"),
    ("2024-05-15", "on the last day of the month|", "2024-05-31"),
    ("2024-01-31", "in 30 days|", "2024-03-01"),
    ("2024-01-31", "February 29|", "2024-02-29"),
    ("2024-01-31", "January 30|", "2025-01-30"),
    ("2024-01-31", "下个月底|", "2024-02-29"),
    ("2025-04-30", "the day after tomorrow|", "2025-05-02"),
    ("2025-04-30", "on 1 May|", "2025-05-01"),
    ("2025-04-30", "Friday next week|", "2025-05-09"),
    ("2025-04-30", "April 29|", "2026-04-29"),
    ("2025-04-30", "明天|", "2025-05-01"),
    # A year end, a Tuesday.
    ("2024-12-31", "tomorrow|", "2025-01-01"),
    ("2024-12-31", "January 2|", "2025-01-02"),
    ("2024-12-31", "December 31|", "2024-12-31"),
    ("2024-12-31", "in two weeks|", "2025-01-14"),
    ("2024-12-31", "next Monday|", "2025-01-06"),
    ("2024-12-31", "end of next month|", "2025-01-31"),
    ("2024-12-31", "下周一|", "2025-01-06"),
    ("2024-12-31", "1月2日|", "2025-01-02"),
    ("2024-12-31", "Dec 31st 2024", "2024-12-31"),
    # A Sunday.
    ("2025-12-28", "Monday|", "2025-12-29"),
    ("2025-12-28", "Monday next week|", "2026-01-05"),
    ("2025-12-28", "this Sunday|", "2025-12-28"),
    ("2025-12-28", "next Monday|", "2025-12-29"),  # next week starts tomorrow
    ("2025-12-28", "下周一|", "2025-12-29"),  # the calendar week starts tomorrow
    ("2025-12-28", "in 5 days|", "2026-01-02"),
    # A leap day, a Tuesday.
    ("2028-02-29", "tomorrow|", "2028-03-01"),
    ("2028-02-29", "yesterday|", "2028-02-28"),
    ("2028-02-29", "February 29|", "2028-02-29"),
    ("2028-02-29", "in one week|", "2028-03-07"),
    ("2028-02-29", "end of the month|", "2028-02-29"),
    ("2028-02-29", "end of next month|", "2028-03-31"),
    ("2028-02-29", "next Tuesday|", "2028-03-07"),
    ("2028-02-29", "Wednesday|", "2028-03-01"),
    ("2028-02-29", "last Tuesday|", "2028-02-22"),
    ("2028-02-29", "the 1st of March|", "2028-03-01"),
    ("2028-02-29", "2月28日|", "2029-02-28"),
    ("2028-02-29", "下周三|", "2028-03-08"),
    ("2028-02-29", "这周日|", "2028-03-05"),
    ("2028-02-29", "十天后|", "2028-03-10"),
    ("2028-02-29", "Feb 29, 2028", "2028-02-29"),
    ("2028-02-29", "29/2/2028|", "2028-02-29"),
    # Weekdays cut short, a Wednesday: only beside a time or after on/this/next/coming.
    ("2026-02-04", "book P003318 with D014 fri| 09:40", "2026-02-06"),
    ("2026-02-04", "Mon| 9am standup", "2026-02-09"),
    ("2026-02-04", "sat|, 10:30", "2026-02-07"),
    ("2026-02-04", "on Wed.| at 3pm", "2026-02-04"),
    ("2026-02-04", "next tues| please", "2026-02-10"),
    ("2026-02-04", "this thurs|", "2026-02-05"),
    ("2026-02-04", "the sun is out", None),
    ("2026-02-04", "she sat on it at 9am", None),
    ("2026-02-04", "see you sat", None),
    ("2026-02-04", "every fri 10:00", None),
    ("2026-02-04", "on Monzo at 9am", None),
]


@pytest.mark.parametrize(("today", "marked", "iso"), TABLE)
def test_each_phrase_means_the_date_a_person_would_read(
    today: str, marked: str, iso: str | None
) -> None:
    expected = marked.replace("|", f" ({iso})")
    assert annotate_dates(marked.replace("|", ""), date.fromisoformat(today)) == expected


# Spanish, French and German, said on Tuesday 2026-06-16 (and on a Saturday for the weekdays
# that have passed): "next Monday" is the coming one in all three.
FOREIGN = [
    ("2026-06-16", "para el próximo lunes|, tres noches", "2026-06-22"),
    ("2026-06-16", "el lunes que viene|", "2026-06-22"),
    ("2026-06-16", "el martes próximo|", "2026-06-23"),
    ("2026-06-16", "el viernes| a las 10", "2026-06-19"),
    ("2026-06-16", "el martes pasado|", "2026-06-09"),
    ("2026-06-16", "el lunes de la semana que viene|", "2026-06-22"),
    ("2026-06-16", "mañana| por la mañana", "2026-06-17"),
    ("2026-06-16", "Mañana| a las 9", "2026-06-17"),
    ("2026-06-16", "pasado mañana|", "2026-06-18"),
    ("2026-06-16", "hoy|", "2026-06-16"),
    ("2026-06-16", "ayer|", "2026-06-15"),
    ("2026-06-16", "dentro de tres días|", "2026-06-19"),
    ("2026-06-16", "en dos semanas|", "2026-06-30"),
    ("2026-06-16", "a fin de mes|", "2026-06-30"),
    ("2026-06-16", "el 18 de marzo|", "2027-03-18"),
    ("2026-06-16", "el 18 de marzo de 2027|", "2027-03-18"),
    ("2026-06-16", "el lunes 22 de junio|", "2026-06-22"),
    ("2026-06-16", "lundi prochain|", "2026-06-22"),
    ("2026-06-16", "le prochain vendredi|", "2026-06-19"),
    ("2026-06-16", "vendredi dernier|", "2026-06-12"),
    ("2026-06-16", "lundi de la semaine prochaine|", "2026-06-22"),
    ("2026-06-16", "demain| matin", "2026-06-17"),
    ("2026-06-16", "après-demain|", "2026-06-18"),
    ("2026-06-16", "aujourd'hui|", "2026-06-16"),
    ("2026-06-16", "dans trois jours|", "2026-06-19"),
    ("2026-06-16", "dans quinze jours|", "2026-06-30"),
    ("2026-06-16", "dans huit jours|", "2026-06-23"),
    ("2026-06-16", "fin du mois prochain|", "2026-07-31"),
    ("2026-06-16", "le 1er juillet|", "2026-07-01"),
    ("2026-06-16", "le 3 mars 2027| à 10h", "2027-03-03"),
    ("2026-06-16", "nächsten Freitag|", "2026-06-19"),
    ("2026-06-16", "am kommenden Montag|", "2026-06-22"),
    ("2026-06-16", "letzten Dienstag|", "2026-06-09"),
    ("2026-06-16", "Montag nächster Woche|", "2026-06-22"),
    ("2026-06-16", "nächste Woche Donnerstag|", "2026-06-25"),
    ("2026-06-16", "Guten Morgen, morgen| früh", "2026-06-17"),
    ("2026-06-16", "heute Morgen| um 9", "2026-06-16"),
    ("2026-06-16", "übermorgen|", "2026-06-18"),
    ("2026-06-16", "gestern|", "2026-06-15"),
    ("2026-06-16", "in drei Tagen|", "2026-06-19"),
    ("2026-06-16", "am 18. März|", "2027-03-18"),
    ("2026-06-16", "Montag, den 22. Juni 2026|", "2026-06-22"),
    ("2026-06-16", "zum Monatsende|", "2026-06-30"),
    ("2026-06-20", "el próximo lunes|", "2026-06-22"),  # a Saturday: two days away
    ("2026-06-20", "lundi prochain|", "2026-06-22"),
    ("2026-06-20", "nächsten Montag|", "2026-06-22"),
    ("2026-06-22", "el próximo lunes|", "2026-06-29"),  # a Monday: not today
]


@pytest.mark.parametrize(("today", "marked", "iso"), FOREIGN)
def test_spanish_french_and_german_dates_are_read(today: str, marked: str, iso: str) -> None:
    first, _, rest = marked.partition("|")
    expected = f"{first} ({iso}){rest}"
    assert annotate_dates(first + rest, date.fromisoformat(today)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "cada lunes a las 9",  # every Monday
        "los lunes",
        "jeden Montag",
        "chaque lundi",
        "por la mañana",  # the morning
        "am Morgen",
        "Die Datei liegt hier",  # German "here", not French "yesterday"
        "Envoie « rendez-vous demain » à Ann",  # quoted
        "Schreib „bis morgen“ an Ann",
        "el 31 de febrero",  # no such day
    ],
)
def test_foreign_phrases_that_name_no_day_are_left_alone(text: str) -> None:
    assert annotate_dates(text, date(2026, 6, 16)) == text


def test_the_table_covers_the_issue() -> None:
    assert len(TABLE) >= 60
    assert {"2024-01-31", "2024-12-31", "2028-02-29"} <= {today for today, _, _ in TABLE}
    chinese = [text for _, text, _ in TABLE if re.search(r"[\u4e00-\u9fff]", text)]
    assert len(chinese) >= 15


@pytest.mark.parametrize(
    "text",
    [
        'Reply "see you tomorrow" to Ann',
        "Reply 'next Friday works' to Ann",
        "Reply “on March 3” to Ann",
        "回复「明天见」",
        "Open /home/ann/tomorrow/notes.md",
        r"Open C:\Users\ann\Friday\report.txt",
        "see https://example.com/events/tomorrow",
        "Close C-2041 and INV-2026-03",
        "Look up order ORD-2024-05-15 and ticket MAY-3",
        "run job_friday_2",
        "Mail friday.tomorrow@example.com",
        "email march3@example.org",
    ],
)
def test_quotes_paths_identifiers_and_addresses_are_never_rewritten(text: str) -> None:
    assert annotate_dates(text, MONDAY) == text


def test_a_quoted_phrase_is_skipped_and_the_same_phrase_outside_it_read() -> None:
    text = 'Reply "tomorrow" to C-2041 tomorrow'
    assert annotate_dates(text, MONDAY) == f"{text} (2026-03-03)"


MONTHS = "January February March April May June July August September October November December"
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Fragments a request is made of, dates' parts among them, to build text around a written date.
FRAGMENTS = [
    *("Friday", "next", "week", "last", "March", "May", "3", "12", "2027", "tomorrow", "the"),
    *("of", "3rd", "in", "two", "days", "end", "month", "on", "every", "this", "12:30", "C-"),
    *("周三", "下", "年", "月", "日", "号", "明天", "天后"),
    *"/-.,'\"()（）@_\\：“”「」 ",
]
AROUND = st.text(max_size=20) | st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join)


def _ordinal(day: int) -> str:
    return f"{day}{'th' if 10 <= day <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th')}"


def _forms(when: date) -> list[str]:
    """`when` written in full, with its year, in each form the module reads."""
    month, d, m, y = MONTHS.split()[when.month - 1], when.day, when.month, when.year
    return [
        when.isoformat(),
        f"{y}/{m}/{d}",
        f"{month} {d}, {y}",
        f"{month[:3]}. {_ordinal(d)} {y}",
        f"{d} {month} {y}",
        f"the {_ordinal(d)} of {month}, {y}",
        f"{WEEKDAYS[when.weekday()]}, {month} {d}, {y}",
        f"{d}/{m}/{y}",
        f"{m}/{d}/{y}",
        f"{d:02}.{m:02}.{y}",
        f"{m}-{d}-{y}",
        f"{y}年{m}月{d}日",
    ]


def _joined(before: str, gap: str, after: str) -> bool:
    """Whether `before` and `after` meet with no gap at a letter or digit: then they make one
    longer word or number (12027-03-03, 13 March), not a date beside text."""
    return gap == "" and any(c.isascii() and c.isalnum() for c in before[-1:] + after[:1])


@given(
    when=st.dates(date(1990, 1, 1), date(2100, 12, 31)),
    today=st.dates(date(2000, 1, 1), date(2099, 12, 31)),
    form=st.integers(0, 11),
    around=st.tuples(AROUND, AROUND),
    gaps=st.tuples(*[st.sampled_from(["", " ", "\n", ", ", " on ", "：", " (", ") "])] * 2),
)
def test_a_date_written_in_full_is_never_given_another_date(
    when: date, today: date, form: int, around: tuple[str, str], gaps: tuple[str, str]
) -> None:
    written = _forms(when)[form]
    assume(not _joined(around[0], gaps[0], written) and not _joined(written, gaps[1], around[1]))
    text = f"{around[0]}{gaps[0]}{written}{gaps[1]}{around[1]}"
    annotated = annotate_dates(text, today)
    assert written in annotated
    following = re.escape(written) + r"\s*\((\d{4}-\d{2}-\d{2})\)"
    assert all(iso == when.isoformat() for iso in re.findall(following, annotated))
