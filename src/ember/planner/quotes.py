"""Quoted text in a request: where it is, and the request without it (pure).

What a user puts in quotes is theirs to be copied, not read: no date, number, wait or
question inside it is the request's. One pattern serves every reader (dates, numbers,
grounding, plan shapes), so that they agree on what is quoted:

- "…", “…”, ‘…’; 「…」, 『…』, 《…》 (Chinese, Japanese); « … », ‹ … › (French, the
  spaces inside are not the text's); „…“ and ‚…‘ (German).
- '…' only where neither quote touches a letter or a digit outside it: the apostrophes of
  "I've got ... What's that" hold no quote between them, nor does "l'adresse".
- Straight quotes (' ") hold two characters at least and no line break: a lone one does
  not swallow the rest of a request, and 'X' or "A" is a name, not a text to copy.
- Backticks are not quotes: `C-2041` is code, an identifier the request gives.
- A request in quotes whole ("\"Can you find ...?\"", as pasted from a document or sent
  JSON-encoded twice) is the user's own words: `unwrapped` takes those quotes off before any
  reader sees it (`ember.planner.base.PlanningTask`).
"""

from __future__ import annotations

import re

__all__ = ["OPENERS", "QUOTED", "quoted_texts", "unquoted", "unwrapped"]

_PAIRS = (
    ("“", "”"),
    ("‘", "’"),
    ("「", "」"),
    ("『", "』"),
    ("《", "》"),
    ("«", "»"),
    ("‹", "›"),
    ("„", "“"),
    ("‚", "‘"),
)
QUOTED = re.compile(
    r"(?<!\w)'([^'\n]{2,})'(?!\w)|\"([^\"\n]{2,})\"|"
    + "|".join(f"{re.escape(a)}([^{re.escape(b)}]+){re.escape(b)}" for a, b in _PAIRS)
)
"""A quoted text; its one matched group is the text inside the quotes."""
OPENERS = "'\"" + "".join(opening for opening, _ in _PAIRS)
"""The characters a quote opens with: text without any holds no quote."""


def quoted_texts(text: str) -> list[str]:
    """The texts in quotes in `text`, in order, without their quotes and the spaces just
    inside them (« Bonjour » -> "Bonjour")."""
    return [match[match.lastindex or 0].strip() for match in QUOTED.finditer(text)]


def unquoted(text: str) -> str:
    """`text` with each quoted text, quotes included, blanked out by as many spaces: what is
    left is the request's own words, at the same positions."""
    return QUOTED.sub(lambda match: " " * len(match[0]), text)


def unwrapped(text: str) -> str:
    """`text` without a pair of quotes around all of it, and the spaces just inside them,
    where neither quote is found inside (`"a" and "b"` is two quotes, not one around both);
    else `text` unchanged."""
    whole = text.strip()
    inner = whole[1:-1]
    for opening, closing in (('"', '"'), ("'", "'"), *_PAIRS):
        if (
            whole[:1] == opening
            and whole[-1:] == closing
            and inner.strip()
            and opening not in inner
            and closing not in inner
        ):
            return inner.strip()
    return text
