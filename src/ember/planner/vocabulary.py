"""The model as the decoder sees it: a vocabulary of token pieces with per-kind masks, and a
cursor over the model's context that reads the logits only where there is a choice.

`LanguageModel` is the seam: four methods (tokenize, evaluate tokens, logits of the last one,
forget the last tokens).
`ember.planner.llama` adapts llama.cpp to it; the tests drive the decoder with a fake one.
Masking is done over the vocabulary's token pieces with numpy: no grammar engine runs per token.
"""

from __future__ import annotations

import bisect
import itertools
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ember.planner.compact import VALUE_LENGTHS

__all__ = [
    "VOCABULARY_FORMAT",
    "ContextCursor",
    "Cursor",
    "LanguageModel",
    "Logits",
    "Vocabulary",
]

VOCABULARY_FORMAT = "2"  # bump when the masks change: saved vocabularies are keyed by it

Mask = npt.NDArray[np.bool_]
Logits = npt.NDArray[np.float32]

_CHARSETS: dict[str, frozenset[int]] = {
    "date": frozenset(b"0123456789-"),
    "code3": frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "hhmm": frozenset(b"0123456789:"),
    "integer": frozenset(b"0123456789"),
    "number": frozenset(b"0123456789."),
}


class LanguageModel(Protocol):
    """A causal language model with a context that grows as tokens are evaluated."""

    def tokenize(self, text: bytes, *, special: bool) -> list[int]:
        """`text` as tokens (`special`: control tokens like `<|im_end|>` are recognised)."""
        ...

    def eval(self, tokens: Sequence[int]) -> None:
        """Append `tokens` to the context, evaluating them."""
        ...

    def logits(self) -> Logits:
        """The next-token logits after the context (one per vocabulary entry)."""
        ...

    def rewind(self, count: int) -> None:
        """Forget the last `count` evaluated tokens: the context is as it was before them."""
        ...


class ContextCursor(Protocol):
    """What the driven decoder asks of a model's context: text forced into it, one of several
    continuations chosen, a value written under a kind's constraint. `Cursor` is the embedded
    model's (token by token, over its logits); `ember.planner.remote.ServerCursor` a model
    server's (one completion a choice, under a grammar)."""

    passes: int  # model passes so far
    scores: list[float]  # see `Cursor.choose` (may stay empty: only reported)
    on_first_logits: Callable[[], None] | None  # called once, when the prompt has been read

    def read(self, prompt: str | Sequence[int]) -> None:
        """Append `prompt` (text, special tokens allowed, or tokens) to the context."""
        ...

    def force(self, text: str) -> None:
        """Append `text` to the context, as if the model had written it."""
        ...

    def choose(self, options: Sequence[str]) -> int:
        """The option the model prefers; its text is appended to the context."""
        ...

    def margin(self, first: bytes, second: bytes) -> float | None:
        """The model's preference for starting `first` over `second`, in logits (None where
        it cannot be had)."""
        ...

    def sample(
        self,
        kind: str,
        closing: bytes,
        limit: int,
        *,
        openers: bool = False,
        ends: Sequence[str] = (),
    ) -> tuple[str, bool]:
        """A value of `kind` (see `Cursor.sample`), the text and whether it opened a reference."""
        ...

    def mark(self) -> object:
        """The context as it is now, to go back to with `rewind`."""
        ...

    def rewind(self, mark: object) -> None:
        """Go back to the context as it was at `mark`: what was forced, chosen or written after
        it is forgotten (a step given up on, to choose again)."""
        ...


def _fits(kind: str, text: bytes) -> bool:
    """Whether `text` may appear inside a value of `kind` (before its closing token)."""
    if kind == "text":
        return not (
            b'"' in text
            or b"\\" in text
            or b"$" in text
            or b"<|" in text
            or b"|>" in text
            or any(byte < 0x20 for byte in text)
        )
    return set(text) <= _CHARSETS[kind]


def _opens_reference(text: bytes) -> bool:
    """Whether `text` is text that ends by opening an embedded reference (`{$` or `{`)."""
    body = text[:-2] if text.endswith(b"{$") else text[:-1] if text.endswith(b"{") else None
    return body is not None and _fits("text", body)


_MASK_NAMES = ("text", *_CHARSETS, "opener", "text_quote")


class Vocabulary:
    """Each token's bytes, an index to find tokens by their start, and per-kind token masks."""

    def __init__(self, pieces: Sequence[bytes], masks: dict[str, Mask] | None = None) -> None:
        self.pieces = list(pieces)
        self.ids = {piece: token for token, piece in enumerate(self.pieces) if piece}
        order = sorted(self.ids)
        self._sorted = order
        self._sorted_ids = [self.ids[piece] for piece in order]
        self._starting: dict[bytes, list[int]] = {}
        self.masks = masks if masks is not None else self._build_masks()

    def _build_masks(self) -> dict[str, Mask]:
        masks: dict[str, Mask] = {
            kind: np.fromiter(
                (bool(piece) and _fits(kind, piece) for piece in self.pieces),
                dtype=np.bool_,
                count=len(self.pieces),
            )
            for kind in _MASK_NAMES
            if kind not in ("opener", "text_quote")
        }
        masks["text_quote"] = np.fromiter(  # text that closes its quote: `."`, `?"`
            (
                len(piece) > 1 and piece.endswith(b'"') and _fits("text", piece[:-1])
                for piece in self.pieces
            ),
            dtype=np.bool_,
            count=len(self.pieces),
        )
        masks["opener"] = np.fromiter(
            (_opens_reference(piece) for piece in self.pieces),
            dtype=np.bool_,
            count=len(self.pieces),
        )
        return masks

    def save(self, path: Path) -> None:
        """Write the pieces and masks to `path` (.npz), atomically."""
        path.parent.mkdir(parents=True, exist_ok=True)
        offsets = np.cumsum([0, *map(len, self.pieces)], dtype=np.int64)
        blob = np.frombuffer(b"".join(self.pieces), dtype=np.uint8)
        partial = path.with_name(f"{path.stem}.partial-{os.getpid()}.npz")
        stacked = np.stack([self.masks[name] for name in _MASK_NAMES])
        np.savez(partial, blob=blob, offsets=offsets, masks=stacked)
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> Vocabulary | None:
        """A vocabulary saved by `save`, or None if the file is unreadable or incomplete."""
        try:
            with path.open("rb") as handle, np.load(handle) as data:
                blob = data["blob"].tobytes()
                offsets = data["offsets"].tolist()
                stacked = data["masks"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None
        pieces = [blob[start:end] for start, end in itertools.pairwise(offsets)]
        if stacked.shape != (len(_MASK_NAMES), len(pieces)):
            return None
        return cls(pieces, dict(zip(_MASK_NAMES, stacked, strict=True)))

    def starting_with(self, prefix: bytes) -> list[int]:
        """The tokens whose bytes start with `prefix` (not empty)."""
        if prefix not in self._starting:
            index = bisect.bisect_left(self._sorted, prefix)
            found = []
            while index < len(self._sorted) and self._sorted[index].startswith(prefix):
                found.append(self._sorted_ids[index])
                index += 1
            self._starting[prefix] = found
        return self._starting[prefix]


class Cursor:
    """The model's context. Forced text is held as text and tokenized only when the model is
    next consulted; its last token is then held back ("token healing"), so the model's next
    token may merge with it (`="`, `")`, `)\n`) as it would in text it had written itself."""

    def __init__(self, model: LanguageModel, vocab: Vocabulary) -> None:
        self.model = model
        self.vocab = vocab
        self.text = b""  # forced, not yet tokenized (bytes: an option may end mid-character)
        self.tokens: list[int] = []  # tokenized, not yet evaluated
        self.on_first_logits: Callable[[], None] | None = None
        self.passes = 0  # model passes (evaluations of pending tokens) so far
        self.scores: list[float] = []  # see `choose`
        self.history: list[int] = []  # evaluated, in order (what `rewind` goes back over)

    def read(self, prompt: str | Sequence[int]) -> None:
        if isinstance(prompt, str):
            self.tokens.extend(self.model.tokenize(prompt.encode(), special=True))
        else:
            self.tokens.extend(prompt)

    def force(self, text: str) -> None:
        self.text += text.encode()

    def _heal(self) -> bytes:
        """Tokenize the forced text; hold back its last token and return that token's bytes."""
        if not self.text:
            return b""
        tokens = self.model.tokenize(self.text, special=False)
        self.text = b""
        self.tokens.extend(tokens[:-1])
        return bytes(self.vocab.pieces[tokens[-1]])

    def _logits(self) -> Logits:
        if self.tokens:
            self.model.eval(self.tokens)
            self.passes += 1
            self.history += self.tokens
            self.tokens.clear()
        if self.on_first_logits is not None:
            self.on_first_logits()
            self.on_first_logits = None
        return self.model.logits()

    def choose(self, options: Sequence[str]) -> int:
        """The option the model prefers. Each token read must spell the start of an option (or
        cover an option and run past its end: the option is then taken, its text forced).
        `scores` keeps, for each option, the best logit of a token that starts it where the
        options first part (empty when they never did: one option was left to take)."""
        head = self._heal()
        rests = [head + option.encode() for option in options]
        alive = list(range(len(options)))
        self.scores = []
        while len(alive) > 1:
            common = _common_prefix([rests[i] for i in alive])
            if len(common) > len(head) and all(len(rests[i]) > len(common) for i in alive):
                self.text = common
                head = self._heal()
                rests = [head + rest[len(common) :] for rest in rests]
            candidates: dict[int, list[int]] = {}  # token -> options it fits
            for i in alive:
                rest = rests[i]
                for size in range(max(len(head), 1), min(len(rest), 24) + 1):
                    token = self.vocab.ids.get(rest[:size])
                    if token is not None:
                        candidates.setdefault(token, []).append(i)
                for token in self.vocab.starting_with(rest):
                    candidates.setdefault(token, []).append(i)
            logits = self._logits()
            parting = any(len(fits) < len(alive) for fits in candidates.values())
            if not self.scores and parting:
                self.scores = [-np.inf] * len(options)
                for fitting, fits in candidates.items():
                    for i in fits:
                        self.scores[i] = max(self.scores[i], float(logits[fitting]))
            token = max(candidates, key=lambda t: logits[t])
            piece = self.vocab.pieces[token]
            covered = [i for i in candidates[token] if len(rests[i]) <= len(piece)]
            if covered:
                alive = [max(covered, key=lambda i: len(rests[i]))]
                break
            self.tokens.append(token)
            alive = candidates[token]
            rests = [rest[len(piece) :] for rest in rests]
            head = b""
        chosen = alive[0]
        self.text = rests[chosen]
        return chosen

    def mark(self) -> tuple[int, bytes, tuple[int, ...]]:
        return len(self.history), self.text, tuple(self.tokens)

    def rewind(self, mark: object) -> None:
        """Back to `mark` (see `mark`). The model forgets what it evaluated since; where
        nothing was pending then, the last token before the mark is evaluated again (one pass
        with one token), for the logits there."""
        assert isinstance(mark, tuple)
        evaluated, text, tokens = mark
        pending = list(tokens)
        if not pending and evaluated:
            evaluated -= 1
            pending = [self.history[evaluated]]
        self.model.rewind(len(self.history) - evaluated)
        del self.history[evaluated:]
        self.text, self.tokens = text, pending

    def margin(self, first: bytes, second: bytes) -> float | None:
        """The model's best logit for a token that begins `first` minus its best for one that
        begins `second`, at the current position (None where forced text is pending: the
        comparison would need token healing)."""
        if self.text:
            return None
        logits = self._logits()

        def best(text: bytes) -> float:
            tokens = [
                t
                for t in self.vocab.starting_with(text[:1])
                if text.startswith(self.vocab.pieces[t])
            ]
            return max(float(logits[t]) for t in tokens)

        return best(first) - best(second)

    def sample(
        self,
        kind: str,
        closing: bytes,
        limit: int,
        *,
        openers: bool = False,
        ends: Sequence[str] = (),
    ) -> tuple[str, bool]:
        """A value of `kind`, greedily, until the model prefers a token that starts with one of
        the bytes in `closing` (not taken: the caller forces the closing text), or, with
        `openers`, a token that opens an embedded reference (taken), or the value written so
        far is one of `ends` (a whole text the value is complete as). Returns the text and
        whether a reference was opened."""
        complete = {end.encode() for end in ends}
        head = self._heal()
        value = b""
        allowed = self.vocab.masks[kind] | self.vocab.masks["opener"] & openers
        if kind == "text" and b'"' in closing:  # `up."`: the text's end and its closing quote
            allowed = allowed | self.vocab.masks["text_quote"]
        closers = {bytes([byte]) for byte in closing}
        for byte in closers:
            allowed[self.vocab.starting_with(byte)] = True
        opened = False
        for _ in range(limit):
            logits = self._logits()
            if head:  # the first token must extend the held-back token
                pool = [
                    t
                    for t in self.vocab.starting_with(head)
                    if self._classify(self.vocab.pieces[t][len(head) :], kind, closers, openers)
                ]
                if not pool:
                    break
                token = max(pool, key=lambda t: logits[t])
            else:
                token = int(np.argmax(np.where(allowed, logits, -np.inf)))
            piece = self.vocab.pieces[token][len(head) :]
            verdict = self._classify(piece, kind, closers, openers)
            if verdict == "close":
                break
            if verdict == "end":  # the closing is the caller's to force: held back as text
                value += piece[:-1]
                self.text = head + piece[:-1]
                return value.decode("utf-8", errors="replace"), opened
            self.tokens.append(token)
            value += piece
            head = b""
            if len(value) >= VALUE_LENGTHS.get(kind, len(value) + 1):
                break
            if verdict == "open":
                opened = True
                break
            if value in complete:
                break
        self.text = head
        return value.decode("utf-8", errors="replace"), opened

    @staticmethod
    def _classify(piece: bytes, kind: str, closers: set[bytes], openers: bool) -> str:
        if piece[:1] in closers:
            return "close"
        if openers and _opens_reference(piece):
            return "open"
        if _fits(kind, piece):
            return "value"
        return "end" if len(piece) > 1 and piece[-1:] in closers and _fits(kind, piece[:-1]) else ""


def _common_prefix(items: list[bytes]) -> bytes:
    """The longest common start of `items` that ends on a whole UTF-8 character."""
    shortest = min(items, key=len)
    size = next(
        (i for i, byte in enumerate(shortest) if any(item[i] != byte for item in items)),
        len(shortest),
    )
    lead = size
    while lead and shortest[lead - 1] & 0xC0 == 0x80:
        lead -= 1  # back over continuation bytes to the character's first byte
    if lead and shortest[lead - 1] >= 0xC0:
        first = shortest[lead - 1]
        length = 2 if first < 0xE0 else 3 if first < 0xF0 else 4
        if lead - 1 + length > size:
            size = lead - 1  # the last character is cut: leave it out
    return shortest[:size]
