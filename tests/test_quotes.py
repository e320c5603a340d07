"""Quoted text is found the same way by every reader of a request (pure)."""

from __future__ import annotations

from datetime import date

import pytest

from ember.planner.base import PlanningTask
from ember.planner.grounding import givens, stated_numbers
from ember.planner.quotes import quoted_texts, unquoted, unwrapped


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ('Reply "see you soon" to Ann', ["see you soon"]),
        ("Reply 'next week works' to Ann", ["next week works"]),
        ("Reply “on March 3” and ‘fine’", ["on March 3", "fine"]),
        (
            "ce message : « Votre commande a bien été expédiée. » Objet : « Expédition »",
            ["Votre commande a bien été expédiée.", "Expédition"],
        ),
        ("Schreib „Bis morgen“ und ‚gut‘", ["Bis morgen", "gut"]),
        ("回复「明天见」和『好』", ["明天见", "好"]),
        ("run `make test` on `C-2041`", []),  # code, not quotes
        ("invest in stock 'X' at rate 'r'", []),  # names
        ("I've got 350 dollars. What's that in yen?", []),  # apostrophes, no quote
        ("Trouve l'adresse du client", []),
        ('a lone " does not swallow\nthe next line "xy"', ["xy"]),
    ],
)
def test_every_kind_of_quote_is_found(text: str, quoted: list[str]) -> None:
    assert quoted_texts(text) == quoted


def test_unquoted_text_keeps_its_positions() -> None:
    text = "Envoie « demain » à ann@example.com"
    blanked = unquoted(text)
    assert len(blanked) == len(text)
    assert "demain" not in blanked
    assert blanked.index("ann@example.com") == text.index("ann@example.com")


def test_a_french_quote_is_a_given_the_plan_must_use() -> None:
    request = (
        "Trouve l'adresse e-mail du client C-10385 et envoie-lui ce message : "
        "« Votre commande a bien été expédiée. » Objet : « Expédition »."
    )
    found = givens(request)
    assert ("Votre commande a bien été expédiée.", "Votre commande a bien été expédiée") in found
    assert ("Expédition",) in found
    assert ("C-10385",) in found


@pytest.mark.parametrize(
    ("text", "read"),
    [
        (
            "\"Find the roots of 3x^2 + 4x + 2 = 0, where 'a' is 3.\"",
            "Find the roots of 3x^2 + 4x + 2 = 0, where 'a' is 3.",
        ),
        (" « Réserve un hôtel à Lyon » ", "Réserve un hôtel à Lyon"),
        ('"What\'s the weather?"', "What's the weather?"),
        # quotes that are not around all of it stay quotes
        ('"Q3" and "Q4" reports', '"Q3" and "Q4" reports'),
        ('Title it "Quarter close"', 'Title it "Quarter close"'),
        ('""', '""'),
    ],
)
def test_a_request_in_quotes_whole_is_read_without_them(text: str, read: str) -> None:
    assert unwrapped(text) == read
    task = PlanningTask(text, date(2026, 3, 2), ())
    assert task.request == read


def test_a_request_pasted_in_quotes_still_states_its_numbers() -> None:
    pasted = '"Calculate the area of two circles, with a radius of 5 and of 10 meters."'
    assert stated_numbers(pasted) == set()  # to the readers, all of it is a quote
    assert stated_numbers(PlanningTask(pasted, date(2026, 3, 2), ()).request) == {2, 5, 10}
