"""The driven decoder over a model server: each choice and each value is one completion under a
GBNF grammar that admits only what the decoder allows there.

`ServerCursor` is the `ContextCursor` the decoder (`ember.planner.decoding`) steers when the
model runs elsewhere: on llama.cpp's servers (llama-cpp-python's `llama_cpp.server`, llama.cpp's
`llama-server`), whose `/v1/completions` takes a `grammar` and keeps the prompt's KV cache from
one request to the next, so a request costs about the passes it generates. The context is held
as text and sent whole each time (the server finds the prefix it has already read).

A choice among options is walked one token at a time, as the embedded cursor walks its token
trie: one completion of one token under a grammar of the options still open; the token names
one option (taken) or narrows them. A value is one completion whose grammar is the value's
characters and then a closing character. The first choice's margin (a step over `done`) is read
from the completion's top log-probabilities.
"""

from __future__ import annotations

import json
import os.path
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ember.errors import PlannerError
from ember.planner.compact import VALUE_LENGTHS

__all__ = ["ServerCursor", "gbnf_literal", "post_json"]

# The characters a value of each kind is written with (`ember.planner.vocabulary._fits`), as a
# GBNF character class.
_CLASSES = {
    "text": r'[^"\\$\x00-\x1f]',
    "text_open": r'[^"\\${\x00-\x1f]',  # text where `{` opens an embedded reference
    "date": "[0-9-]",
    "code3": "[A-Z]",
    "hhmm": "[0-9:]",
    "integer": "[0-9]",
    "number": "[0-9.]",
}
_TOP = 20  # log-probabilities asked for where a margin is read
# How byte-level BPE tokenizers (Qwen's, GPT-4's) cut text before merging: words with the
# character before them, single digits, runs of punctuation with the newlines after them,
# spaces. Tokens never cross these cuts.
_PRETOKEN = re.compile(
    r"'(?:[sdmt]|ll|ve|re)|(?:[^\r\n\w]|_)?[^\W\d_]+|\d|[^\S\r\n]?(?:[^\s\w]|_)+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_ANY = r"[^\x00]"  # any character: what a token may hold past the end of an option
_CLASS_ESCAPES = {"]": r"\]", "\\": r"\\", "-": r"\-", "^": r"\x5e"}  # inside a class


def gbnf_literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return '"' + escaped.replace("\t", "\\t") + '"'


class ServerCursor:
    """The context of a model behind `url` (an OpenAI-compatible `/v1/completions`), driven one
    completion at a time. `post(url, body) -> response JSON` is the seam (httpx in use)."""

    def __init__(
        self,
        post: Callable[[str, dict[str, Any]], dict[str, Any]],
        url: str,
        model: str,
        *,
        cancelled: threading.Event | None = None,
    ) -> None:
        self._post = post
        self._cancelled = cancelled  # set: the next request raises instead of being sent
        self._url = url
        self._model = model
        self.text = ""  # the whole context, as text
        self._written = 0  # where the text the model last wrote ends (not to be healed)
        self.passes = 0
        self.scores: list[float] = []  # not read from the server (see `choose`)
        self.on_first_logits: Callable[[], None] | None = None

    def read(self, prompt: str | Sequence[int]) -> None:
        if not isinstance(prompt, str):
            raise PlannerError("a model server is sent text, not tokens")
        self.text += prompt

    def force(self, text: str) -> None:
        self.text += text

    def mark(self) -> tuple[str, int]:
        return self.text, self._written

    def rewind(self, mark: object) -> None:
        """Back to `mark`: the server is sent the whole text each time, so nothing else is kept."""
        assert isinstance(mark, tuple)
        self.text, self._written = mark

    def _complete(self, max_tokens: int, **extra: Any) -> dict[str, Any]:
        body = {
            "model": self._model,
            "prompt": self.text,
            "max_tokens": max_tokens,
            "temperature": 0,
            "repeat_penalty": 1.0,  # llama-cpp-python's default (1.1) skews every choice
            **extra,
        }
        if self._cancelled is not None and self._cancelled.is_set():
            raise PlannerError("the plan was cancelled")
        answer = self._post(self._url, body)
        try:
            choice = dict(answer["choices"][0])
            self.passes += int((answer.get("usage") or {}).get("completion_tokens") or 1)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise PlannerError(
                f"{self._url} answered without a completion: {answer!r:.300}"
            ) from None
        if self.on_first_logits is not None:
            self.on_first_logits()
            self.on_first_logits = None
        return choice

    def _heal(self, keep: str = "") -> str:
        """Take the last pre-token of the forced text back out of the context and return it:
        the model writes it again with what follows, as one token where its vocabulary has
        one (`")\n`, `(city`, ` get`). A prompt cut where the model's tokenizer would not
        cut it (`"` then `)`, `1.` then a lone space) reads as text the model has rarely
        seen: it wrote ` after 1` where it meant `)\n`, and planned a weather request as a
        currency conversion. The embedded cursor holds the last token back for the same
        reason. Text the model wrote stays, and so does the head up to a character of
        `keep` (a stop string of the completion to come)."""
        tail = self.text[-64:]
        cuts = list(_PRETOKEN.finditer(tail))
        if not cuts:
            return ""
        last = cuts[-1]
        start = max(len(self.text) - len(tail) + last.start(), self._written)
        head = self.text[start:]
        if "|>" in head or "<|" in head:
            return ""  # a special token's text (`<|im_end|>`): never cut
        for char in keep:
            if char in head:
                start += head.rindex(char) + 1
                head = self.text[start:]
        self.text = self.text[:start]
        return head

    def choose(self, options: Sequence[str]) -> int:
        """The option the model prefers, walked a token at a time: each completion is one
        token under a grammar of the options still open (their common start is forced, to the
        edge of its last whole word). A token may run past an option's end (`)` and a newline):
        the option is then taken and the rest of the token dropped, as the embedded cursor
        does."""
        rests = list(options)
        alive = list(range(len(options)))
        self.scores = []
        while len(alive) > 1:
            common = os.path.commonprefix([rests[i] for i in alive])  # noqa: RUF071 (text)
            # forced up to a word's edge: a word cut where its token is not (`_` of `_hotels`)
            # reads as odd text
            edge = max(
                (i + 1 for i, c in enumerate(common) if not (c.isalnum() or c == "_")), default=0
            )
            common = common[:edge]
            if common and all(len(rests[i]) > len(common) for i in alive):
                self.text += common
                rests = [rest[len(common) :] for rest in rests]
            head = self._heal()
            rests = [head + rest for rest in rests]
            opened = " | ".join(gbnf_literal(rests[i]) for i in alive)
            grammar = f"root ::= ({opened}) {_ANY}*"
            piece = str(self._complete(1, grammar=grammar).get("text") or "")
            covered = [i for i in alive if piece and piece.startswith(rests[i])]
            if covered:
                alive = [max(covered, key=lambda i: len(rests[i]))]
                break
            fitting = [i for i in alive if piece and rests[i].startswith(piece)]
            if not fitting:
                raise PlannerError(
                    f"{self._url} wrote {piece!r}, none of the options its grammar allowed: "
                    "does the server take a GBNF `grammar`? (llama.cpp's servers do)"
                )
            self.text += piece
            self._written = len(self.text)
            alive = fitting
            rests = [rest[len(piece) :] for rest in rests]
        chosen = alive[0]
        self.text += rests[chosen]
        return chosen

    def margin(self, first: bytes, second: bytes) -> float | None:
        """Best log-probability of a token that begins `first` minus the best of one that
        begins `second`, among the server's top ones. Where one of them is not among the top
        ones, the lowest of those bounds it (a margin at most, or at least, that much); None
        where neither is, or the server gives no log-probabilities (the no-tool band is then
        not applied)."""
        # streamed: llama-cpp-python's server then computes the log-probabilities of the one
        # position asked for, not of its whole context (seconds on a 4k context); the grammar
        # keeps the token sampled from being the end of text, which comes with none
        options = f"{gbnf_literal(first.decode())} | {gbnf_literal(second.decode())}"
        try:
            choice = self._complete(
                1, logprobs=_TOP, stream=True, grammar=f"root ::= ({options}) {_ANY}*"
            )
        except PlannerError:
            if self._cancelled is not None and self._cancelled.is_set():
                raise
            return None
        tops = (choice.get("logprobs") or {}).get("top_logprobs") or []
        top: dict[str, float] = tops[0] if tops else {}
        if not top:
            return None

        def best(text: str) -> float | None:
            found = [p for piece, p in top.items() if piece and text.startswith(piece)]
            return max(found) if found else None

        floor = min(top.values())
        a, b = best(first.decode()), best(second.decode())
        if a is None and b is None:
            return None
        return (floor if a is None else a) - (floor if b is None else b)

    def sample(
        self,
        kind: str,
        closing: bytes,
        limit: int,
        *,
        openers: bool = False,
        ends: Sequence[str] = (),
    ) -> tuple[str, bool]:
        """A value of `kind`, greedily, until the model writes a byte of `closing` (a stop
        string: neither it nor what its token held after it is kept; the caller forces the
        closing text) or, with `openers`, opens an embedded reference with `{` (kept). A
        value that runs on past one of `ends` (a whole text it is complete as) is cut there."""
        chars = _CLASSES["text_open" if openers and kind == "text" else kind]
        length = VALUE_LENGTHS.get(kind)
        body = f"{chars}{{0,{length}}}" if length else f"{chars}*"
        closers = "".join(_CLASS_ESCAPES.get(c, c) for c in closing.decode())
        tails = [f"[{closers}] {_ANY}*"] + (['"{" "$"?'] if openers else [])
        head = self._heal(keep=closing.decode())
        grammar = f"root ::= {gbnf_literal(head)} {body} ({' | '.join(tails)})?"
        stop = list(closing.decode())
        value = str(self._complete(limit, grammar=grammar, stop=stop).get("text") or "")
        cut = [value.index(c) for c in stop if c in value]
        value = value[: min(cut)] if cut else value
        body_text = value[len(head) :]
        if openers:
            body_text = body_text.removesuffix("$").removesuffix("{")
        if not value.startswith(head) or not re.fullmatch(f"{chars}*", body_text):
            raise PlannerError(
                f"{self._url} wrote {value!r}, which its grammar did not allow (a {kind} "
                f"after {head!r}): does the server take a GBNF `grammar`? (llama.cpp's do)"
            )
        body_text = value[len(head) :]
        body_text = next((end for end in ends if body_text.startswith(end)), body_text)
        value = head + body_text
        self.text += value
        self._written = len(self.text)
        return body_text, openers and body_text.endswith(("{", "{$"))


def post_json(client: Any) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """`ServerCursor`'s seam over an `httpx.Client`: POST JSON, the answer's JSON, errors named."""
    import httpx

    def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = client.post(url, json=body)
        except httpx.TimeoutException:
            raise PlannerError(f"the model server at {url} did not answer in time") from None
        except httpx.HTTPError as exc:
            raise PlannerError(f"cannot reach the model server at {url}: {exc}") from None
        if response.status_code != 200:
            raise PlannerError(f"{url} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            if body.get("stream"):
                return _joined(response.text)
            return dict(response.json())
        except (json.JSONDecodeError, KeyError, IndexError, TypeError):
            raise PlannerError(
                f"{url} answered with no completion: {response.text[:300]!r}"
            ) from None

    return post


def _joined(events: str) -> dict[str, Any]:
    """A streamed completion (server-sent events) as one answer: its text, and its tokens'
    top log-probabilities in order."""
    text = ""
    top: list[Any] = []
    for line in events.splitlines():
        data = line[5:].strip() if line.startswith("data:") else ""
        if not data or data == "[DONE]":
            continue
        choice = json.loads(data)["choices"][0]
        text += choice.get("text") or ""
        logprobs = choice.get("logprobs") or {}
        top += logprobs.get("top_logprobs") or []  # llama-cpp-python: {text: logprob}
        for token in logprobs.get("content") or []:  # llama-server, OpenAI: lists of objects
            top.append({t["token"]: t["logprob"] for t in token.get("top_logprobs") or []})
    return {"choices": [{"text": text, "logprobs": {"top_logprobs": top}}]}
