"""Quoted text is found the same way by every reader of a request (pure)."""

from __future__ import annotations

import pytest

from ember.planner.grounding import givens
from ember.planner.quotes import quoted_texts, unquoted


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
