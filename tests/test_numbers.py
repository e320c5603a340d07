"""Numbers in words and with units are found with their conversions and written out (pure)."""

from __future__ import annotations

import pytest

from ember.planner.numbers import annotate_numbers, spoken_numbers


@pytest.mark.parametrize(
    ("text", "values", "annotated"),
    [
        (
            "Block out two hours on Friday",
            [(2, 120)],
            "Block out two hours (120 minutes) on Friday",
        ),
        (
            "three hundred and fifty US dollars",
            [(350,)],
            "three hundred and fifty (350) US dollars",
        ),
        ("no more than thirty words", [(30,)], "no more than thirty (30) words"),
        ("for a fortnight starting Monday", [(14,)], "for a fortnight (14 days) starting Monday"),
        ("put a half-hour call in", [(30,)], "put a half-hour (30 minutes) call in"),
        ("half an hour with Ann", [(30,)], "half an hour (30 minutes) with Ann"),
        ("a quarter of an hour", [(15,)], "a quarter of an hour (15 minutes)"),
        ("an hour with Ann", [(60,)], "an hour (60 minutes) with Ann"),
        ("a 2 hour meeting", [(2, 120)], "a 2 hour (120 minutes) meeting"),
        ("for 3 weeks", [(3, 21)], "for 3 weeks (21 days)"),
        ("twenty-five euros", [(25,)], "twenty-five (25) euros"),
        ("a dozen files", [(12,)], "a dozen (12) files"),
        ("one thousand two hundred words", [(1200,)], "one thousand two hundred (1200) words"),
        ("three nights in Porto", [(3,)], "three nights in Porto"),  # small: left as written
        ("one night in Oslo", [(1,)], "one night in Oslo"),
        ("book the cheapest one", [], "book the cheapest one"),  # "one" is no count here
        ("Say 'two hours' exactly", [], "Say 'two hours' exactly"),  # quoted text is not read
        (  # apostrophes are no quotes: the number between two of them is read
            "I've got three hundred and fifty dollars. What's that in yen?",
            [(350,)],
            "I've got three hundred and fifty (350) dollars. What's that in yen?",
        ),
        ("It's 'twenty past' Bob's", [], "It's 'twenty past' Bob's"),
        ("mail nine.lives@example.com", [], "mail nine.lives@example.com"),
        ("总结成不超过五十个词的摘要", [(50,)], "总结成不超过五十 (50)个词的摘要"),
        ("住两晚", [(2,)], "住两晚"),
        ("开三个小时的会", [(3, 180)], "开三个小时 (180 minutes)的会"),
        ("下周一和周日", [], "下周一和周日"),  # 周一 is Monday, not a number
        ("tres noches en Barcelona", [(3,)], "tres noches en Barcelona"),
        ("deux heures de réunion", [(2, 120)], "deux heures (120 minutes) de réunion"),
        ("zwei Wochen Urlaub", [(2, 14)], "zwei Wochen (14 days) Urlaub"),
        ("treinta minutos", [(30,)], "treinta (30) minutos"),
        ("Écris « deux nuits » tel quel", [], "Écris « deux nuits » tel quel"),
        ("Schreib „zwei Stunden“ so", [], "Schreib „zwei Stunden“ so"),
    ],
)
def test_numbers_are_found_with_their_conversions(
    text: str, values: list[tuple[float, ...]], annotated: str
) -> None:
    assert spoken_numbers(text) == values
    assert annotate_numbers(text) == annotated


def test_only_numbers_that_count_something_must_be_used() -> None:
    text = "Compare the two cities for three nights, under fifty euros"
    assert spoken_numbers(text) == [(2,), (3,), (50,)]
    assert spoken_numbers(text, counts_only=True) == [(3,), (50,)]
