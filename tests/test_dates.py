"""Relative dates in a request are written out, so a small model copies them (pure)."""

from __future__ import annotations

from datetime import date

import pytest

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
    ],
)
def test_relative_dates_get_their_iso_date(text: str, expected: str) -> None:
    assert annotate_dates(text, MONDAY) == expected


@pytest.mark.parametrize(
    "text",
    ["you may 2 things", "February 30", "tomorrow (2026-03-03)", "on 2026-03-03", "no dates"],
)
def test_text_without_a_resolvable_relative_date_is_left_alone(text: str) -> None:
    assert annotate_dates(text, MONDAY) == text
