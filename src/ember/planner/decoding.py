"""Driven decoding: ember writes the plan's structure itself and asks the model only for choices
and values.

The plan is decoded in the compact syntax (`ember.planner.compact`). At each point the decoder
knows what may come next, from the catalogue:

- where exactly one continuation is possible (`, check_in=`, `)`, the rest of a tool name once
  its first token decides it), the text is appended to the context without sampling, and all
  such tokens are evaluated in one batch when the model is next consulted ("jump-forward"
  decoding, as in SGLang);
- where there is a choice (which tool, another step or `done`, which optional argument, a
  literal or a reference, which earlier result field), the model's logits are read once per
  token and the best allowed token is taken (a walk down the token trie of the options);
- values are sampled greedily under a per-kind token mask (dates: digits and `-`; currency
  codes: capitals; text: no quote, backslash or newline) until a closing token.

References are offered only to earlier steps and only to result fields whose type fits the
parameter, so a plan decoded here always passes the type checks that a free-running model fails.
Masking is done over the vocabulary's token pieces with numpy: no grammar engine runs per token,
which is what made grammar-constrained sampling cost 25 -> 49 ms a token on this model.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import itertools
import json
import os
import re
import zipfile
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ember.plan import Step, references
from ember.planner.compact import DONE, field_paths, value_kind
from ember.tools.descriptor import ToolDescriptor

__all__ = ["MAX_STEPS", "VOCABULARY_FORMAT", "PlanDecoder", "Vocabulary"]

MAX_STEPS = 12
VOCABULARY_FORMAT = "1"  # bump when the masks change: saved vocabularies are keyed by it
_TEXT_TOKENS = 120  # longest free text, in tokens
_SHORT_TOKENS = 16  # longest date, code, time or number
_MAX_ITEMS = 8  # longest list argument
_MAX_REFERENCES = 6  # embedded references in one text

Mask = npt.NDArray[np.bool_]

_LENGTHS = {"date": 10, "code3": 3, "hhmm": 5}  # the longest value of a kind, in bytes
_EMAIL = re.compile(r"[^@\s\"'<>(),;:]+@[^@\s\"'<>(),;:]+\.[A-Za-z]{2,}")
# A code the user may give for an identifier: letters and digits mixed ("C-20417", "BK-88213"),
# not a measure ("30-minute", "5th").
_CODE = re.compile(
    r"(?<![\w/.-])(?![0-9]+(?:-?[a-z]+)\b)(?=[\w-]*[A-Za-z])(?=[\w-]*[0-9])\w[\w-]*\w(?![\w/@-])"
)
_QUOTED = re.compile(r"(?<!\w)'([^']{2,})'(?!\w)|\"([^\"]{2,})\"|「([^」]+)」|“([^”]+)”")
_CHARSETS: dict[str, frozenset[int]] = {
    "date": frozenset(b"0123456789-"),
    "code3": frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "hhmm": frozenset(b"0123456789:"),
    "integer": frozenset(b"0123456789"),
    "number": frozenset(b"0123456789."),
}


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


_MASK_NAMES = ("text", *_CHARSETS, "opener")


class _Ungrounded(Exception):
    """A step needs a value that neither the request nor an earlier result provides."""


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
            if kind != "opener"
        }
        masks["opener"] = np.fromiter(
            (_opens_reference(piece) for piece in self.pieces),
            dtype=np.bool_,
            count=len(self.pieces),
        )
        return masks

    @classmethod
    def of(cls, llm: Any) -> Vocabulary:
        """The vocabulary of a llama-cpp-python `Llama` (special tokens render as empty)."""
        return cls([llm.detokenize([token]) for token in range(llm.n_vocab())])

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


class _Cursor:
    """The model's context. Forced text is held as text and tokenized only when the model is
    next consulted; its last token is then held back ("token healing"), so the model's next
    token may merge with it (`="`, `")`, `)\n`) as it would in text it had written itself."""

    def __init__(self, llm: Any, vocab: Vocabulary) -> None:
        self.llm = llm
        self.vocab = vocab
        self.text = b""  # forced, not yet tokenized (bytes: an option may end mid-character)
        self.tokens: list[int] = []  # tokenized, not yet evaluated
        self.on_first_logits: Callable[[], None] | None = None

    def force(self, text: str) -> None:
        self.text += text.encode()

    def _heal(self) -> bytes:
        """Tokenize the forced text; hold back its last token and return that token's bytes."""
        if not self.text:
            return b""
        tokens = self.llm.tokenize(self.text, add_bos=False, special=False)
        self.text = b""
        self.tokens.extend(tokens[:-1])
        return bytes(self.vocab.pieces[tokens[-1]])

    def _logits(self) -> npt.NDArray[np.float32]:
        if self.tokens:
            self.llm.eval(self.tokens)
            self.tokens.clear()
        if self.on_first_logits is not None:
            self.on_first_logits()
            self.on_first_logits = None
        pointer = self.llm._ctx.get_logits()
        size = self.llm.n_vocab()
        return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (size,))

    def choose(self, options: Sequence[str]) -> int:
        """The option the model prefers. Each token read must spell the start of an option (or
        cover an option and run past its end: the option is then taken, its text forced)."""
        head = self._heal()
        rests = [head + option.encode() for option in options]
        alive = list(range(len(options)))
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
        self, kind: str, closing: bytes, limit: int, *, openers: bool = False
    ) -> tuple[str, bool]:
        """A value of `kind`, greedily, until the model prefers a token that starts with one of
        the bytes in `closing` (not taken: the caller forces the closing text) or, with
        `openers`, a token that opens an embedded reference (taken). Returns the text and
        whether a reference was opened."""
        head = self._heal()
        value = b""
        allowed = self.vocab.masks[kind] | self.vocab.masks["opener"] & openers
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
            self.tokens.append(token)
            value += piece
            head = b""
            if len(value) >= _LENGTHS.get(kind, len(value) + 1):
                break
            if verdict == "open":
                opened = True
                break
        self.text = head
        return value.decode("utf-8", errors="replace"), opened

    @staticmethod
    def _classify(piece: bytes, kind: str, closers: set[bytes], openers: bool) -> str:
        if piece[:1] in closers:
            return "close"
        if openers and _opens_reference(piece):
            return "open"
        return "value" if _fits(kind, piece) else ""


class PlanDecoder:
    """Decodes one plan over `catalogue` for `request` (made on `today`), step by step, from a
    model whose context already holds the prompt's prefix. Values the user must supply are
    grounded in the request: an email address is one the request names (or an earlier result
    holds), an absolute path one it spells out, an identifier (`customer_id`) a code it
    gives or an earlier result's field of that name; a step that would need an invented one
    ends the plan. A parameter documented to come from another tool's results ("A hotel_id
    from search_hotels results") takes a reference to that tool's step, or a code the user
    gave: until one of the two exists, its tool is not offered."""

    def __init__(
        self,
        llm: Any,
        vocab: Vocabulary,
        catalogue: Sequence[ToolDescriptor],
        *,
        today: date,
        request: str,
        abstain_margin: float | None = None,
    ) -> None:
        self._llm = llm
        self._abstain_margin = abstain_margin
        self.first_margin: float | None = None  # logit(step) - logit(done) at the first choice
        self._cursor = _Cursor(llm, vocab)
        self._tools = {tool.tool_name: tool for tool in catalogue}
        self._dates = _calendar_dates(today)
        self._request = request
        self._emails = list(dict.fromkeys(_EMAIL.findall(request)))
        without_emails = _EMAIL.sub(" ", request)
        self._codes = list(dict.fromkeys(_CODE.findall(without_emails)))
        self._givens = _givens(request)
        self._paths_given = _PATH.findall(without_emails)
        self._sources = {
            (tool.tool_name, name): source
            for tool in catalogue
            for name, schema in tool.parameters.get("properties", {}).items()
            if (source := _source(schema, self._tools, tool.tool_name))
        }

    def decode(
        self,
        prompt: str | Sequence[int],
        on_step: Callable[[Step], None],
        on_first_token: Callable[[], None] | None = None,
    ) -> list[Step]:
        """Append `prompt` (text, special tokens allowed, or tokens) to the context and decode
        a plan after it. `on_step` gets each step as soon as it is complete; `on_first_token`
        is called once, when the model has read the prompt."""
        cursor = self._cursor
        cursor.on_first_logits = on_first_token
        if isinstance(prompt, str):
            cursor.tokens.extend(self._llm.tokenize(prompt.encode(), add_bos=False, special=True))
        else:
            cursor.tokens.extend(prompt)
        steps: list[Step] = []
        while len(steps) < MAX_STEPS:
            step_id = len(steps) + 1
            unused = self._unused(steps, {})
            names = [name for name in self._tools if self._available(name, steps, unused)]
            # A plan begun leaves nothing the user gave unused (an address, a path, a code, a
            # number): small models stop before the last action ("... and email it to X").
            # While something is left that a tool could take, the plan goes on.
            left = self._unused_givens(steps) if steps else []
            can_end = not any(self._takes(name, v) for name in names for v in left)
            if not steps and self._abstains(f"{step_id}. ", DONE):
                break  # no tool fits: the model's preference for a step is too weak
            choice = cursor.choose([f"{step_id}. {name}(" for name in names] + [DONE] * can_end)
            if choice == len(names):
                break
            try:
                step = self._step(step_id, self._tools[names[choice]], steps)
            except _Ungrounded:
                break  # the step needs a value that neither the request nor a result has
            if any(step.tool == s.tool and step.args == s.args for s in steps):
                break  # a repeated call: small models loop; a plan never needs one twice
            if _reapplies(step, steps):
                break  # the same call again on its own output: a loop (summary of a summary)
            steps.append(step)
            on_step(step)
        return steps

    def _abstains(self, step: str, done: str) -> bool:
        """Whether the model's logit for starting `step` exceeds its logit for `done` by less
        than the abstain margin. Small models prefer some tool for almost any request; how
        much they prefer it separates the requests no tool fits (docs/benchmarks.md). The
        margin is kept in `first_margin`, to calibrate the threshold by."""
        self.first_margin = self._cursor.margin(step.encode(), done.encode())
        if self._abstain_margin is None or self.first_margin is None:
            return False
        return self.first_margin < self._abstain_margin

    def _unused_givens(self, steps: list[Step]) -> list[str]:
        """What the user gave (see `_givens`) that no step's arguments hold yet."""
        held = json.dumps([step.args for step in steps], ensure_ascii=False)
        digits = re.sub(r"[^0-9]+", " ", held).split()
        return [
            given
            for given in self._givens
            if given not in held and not (given.isdigit() and given in digits)
        ]

    def _takes(self, tool: str, given: str) -> bool:
        """Whether tool `tool` has a parameter that can hold `given` (see `_givens`)."""
        for schema in self._tools[tool].parameters.get("properties", {}).values():
            kind = value_kind(schema)
            if "@" in given:
                if schema.get("format") == "email":
                    return True
            elif given.startswith("/"):
                if kind == "text" and _PATH_PARAMETER.search(schema.get("description", "")):
                    return True
            elif _NUMERIC.match(given):
                if kind in ("integer", "number", "text"):
                    return True
            elif kind == "text":  # a code
                return True
        return False

    def _invented_number(self, value: Any) -> bool:
        """A literal number that the request does not state (options the model adds from
        habit: "max_words": 50)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        return not any(float(given) == value for given in self._givens if _NUMERIC.match(given))

    def _available(self, name: str, earlier: list[Step], unused: Sequence[Step]) -> bool:
        """Whether every required parameter of tool `name` that must be grounded (see
        `_grounded`) has a value to take. A first step may still write an identifier or a
        path freely (it must then appear in the request); a later one may not."""
        tool = self._tools[name]
        props = tool.parameters.get("properties", {})
        for param in tool.parameters.get("required", []):
            options = self._grounded(name, param, props.get(param, {}), earlier, unused)
            sourced = (name, param) in self._sources
            if options == [] and (sourced or earlier):
                return False
        return True

    def _step(self, step_id: int, tool: ToolDescriptor, earlier: list[Step]) -> Step:
        cursor = self._cursor
        props: dict[str, Any] = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        closings = [")\n", ") after "] if earlier else [")\n"]
        remaining = list(props)
        args: dict[str, Any] = {}
        while True:
            unused = self._unused(earlier, args)
            candidates: list[str] = []
            for name in remaining:
                grounded = self._grounded(tool.tool_name, name, props[name], earlier, unused)
                if grounded == [] and name not in required:
                    continue  # an optional identifier nothing grounds: left out
                candidates.append(name)
                if name in required:
                    break
            can_close = not required.intersection(remaining) and bool(
                args or not tool.parameters.get("minProperties")
            )
            separator = ", " if args else ""
            options = [f"{separator}{name}=" for name in candidates]
            choice = cursor.choose(options + (closings if can_close else []))
            if choice >= len(candidates):
                break
            name = candidates[choice]
            remaining = remaining[remaining.index(name) + 1 :]
            grounded = self._grounded(tool.tool_name, name, props[name], earlier, unused)
            if grounded is None:
                value = self._value(props[name], earlier, unused)
                if name in required or not self._invented_number(value):
                    args[name] = value  # an optional number the user never said is left out
            else:
                args[name] = self._identifier(
                    props[name], earlier, grounded, sourced=(tool.tool_name, name) in self._sources
                )
        after = self._after(earlier) if choice - len(candidates) == 1 else []
        return Step(id=step_id, tool=tool.tool_name, args=args, after=after)

    def _after(self, earlier: list[Step]) -> list[int]:
        cursor = self._cursor
        after: list[int] = []
        while True:
            left = [step for step in earlier if step.id not in after]
            after.append(left[cursor.choose([str(step.id) for step in left])].id)
            if len(after) == len(earlier):
                cursor.force("\n")
                return after
            if cursor.choose(["\n", ", "]) == 0:
                return after

    @staticmethod
    def _unused(earlier: list[Step], args: dict[str, Any]) -> list[Step]:
        """Earlier steps whose results nothing refers to yet."""
        used = {ref.step for step in earlier for ref in references(step.args)}
        used |= {ref.step for ref in references(args)}
        return [step for step in earlier if step.id not in used]

    def _value(
        self, schema: dict[str, Any], earlier: list[Step], unused: Sequence[Step] = ()
    ) -> Any:
        cursor = self._cursor
        kind = value_kind(schema)
        if kind == "enum":
            values = schema["enum"]
            return values[cursor.choose([_literal(value) for value in values])]
        if kind == "boolean":
            return cursor.choose(["True", "False"]) == 0
        if schema.get("format") == "email":
            return self._email(schema, earlier)
        floor = schema.get("minimum", schema.get("exclusiveMinimum"))
        numeric = [*"0123456789"] + (["-"] if floor is None or floor < 0 else [])
        starts = {"integer": numeric, "number": numeric, "array": ["["]}
        literal = starts.get(kind, ['"'])
        # Several results to deliver in one text parameter: a text citing each, not one whole.
        cites_all = "{$" in schema.get("description", "") and len(unused) > 1
        references = [] if cites_all else self._references(schema, unused or earlier)
        if not references and not cites_all:
            references = self._references(schema, earlier)
        options = literal + (["$"] if references else [])
        choice = cursor.choose(options)
        if choice == len(literal):
            return "$" + references[cursor.choose(references)]
        if kind == "array":
            items = schema.get("items", {"type": "string"})
            if "{$" in schema.get("description", "") and "description" not in items:
                items = {**items, "description": schema["description"]}  # "each may embed"
            return self._array(items, earlier, unused)
        if kind in ("integer", "number"):
            text, _ = cursor.sample(kind, b",)]", _SHORT_TOKENS)
            return _number(options[choice] + text, kind)
        if kind == "text":
            # A parameter documented to embed results ("{$N.field}") carries every result that
            # nothing else uses: a static plan has no other way to deliver them.
            text = self._text(earlier, unused if "{$" in schema.get("description", "") else ())
            if text.startswith("/") and text not in self._request:
                raise _Ungrounded  # an absolute path the user never gave: invented
            return text
        if kind == "code3" and (codes := _standard_codes(schema)):
            return codes[cursor.choose([f'{code}"' for code in codes])]
        if kind == "date":
            # One choice among real calendar dates: "20" and the dashes are forced, so a date
            # costs ~5 model passes instead of 10 (Qwen writes one digit a token).
            return self._dates[cursor.choose([f'{day}"' for day in self._dates])]
        text, _ = cursor.sample(kind, b'"', _SHORT_TOKENS)
        cursor.force('"')
        return text

    def _text(self, earlier: list[Step], must_use: Sequence[Step]) -> str:
        """Free text, in which each embedded reference (`{$N.path}`) the model opens is
        completed from earlier steps' result fields. Where the model would close the text
        before citing a step of `must_use`, a reference to that step is opened for it."""
        cursor = self._cursor
        embeddable = [f"{step.id}{path}}}" for step in earlier for path in self._paths(step)]
        pending = list(must_use)
        text = ""
        for _ in range(_MAX_REFERENCES + len(pending) + 1):
            chunk, opened = cursor.sample("text", b'"', _TEXT_TOKENS, openers=bool(embeddable))
            text += chunk
            cited = {ref.step for ref in references(text)}
            pending = [step for step in pending if step.id not in cited]
            if opened:
                if text.endswith("{"):
                    cursor.force("$")
                    text += "$"
                text += embeddable[cursor.choose(embeddable)]
            elif pending:
                step = pending.pop(0)
                options = [f"{step.id}{path}}}" for path in self._paths(step)[1:] or [""]]
                opening = " {$" if text and not text.endswith(" ") else "{$"
                cursor.force(opening)
                text += opening + options[cursor.choose(options)]
            else:
                break
        cursor.force('"')
        return text

    def _paths(self, step: Step) -> list[str]:
        return ["", *field_paths(self._tools[step.tool].returns)]

    def _email(self, schema: dict[str, Any], earlier: list[Step]) -> str:
        """An address the request names or an earlier result holds: a small model invents
        addresses ("your_email@example.com") for emails nobody asked to send."""
        references = [f"${ref}" for ref in self._references(schema, earlier)]
        options = [f'"{address}"' for address in self._emails] + references
        if not options:
            raise _Ungrounded
        chosen = options[self._cursor.choose(options)]
        return chosen.strip('"')

    def _grounded(
        self,
        tool: str,
        name: str,
        schema: dict[str, Any],
        earlier: list[Step],
        unused: Sequence[Step],
    ) -> list[str] | None:
        """The values a parameter the user or an earlier result must supply may take; None
        for other parameters. Small models fill such parameters with whatever is at hand
        ("hotel_id": "Paris", a path from the examples).

        - an absolute path (a parameter documented as a path or directory): one the request
          spells out, or an earlier result's field named like one (`path`, `files.0`);
        - an identifier (`customer_id`): a code the request gives ("C-20417"), or an earlier
          result's field of the same name;
        - a parameter documented to come from another tool ("A hotel_id from search_hotels
          results"): a code the request gives, or a field of that tool's results.
        References go to results nothing uses yet where there are any: each feeds one call."""
        source = self._sources.get((tool, name))
        path = value_kind(schema) == "text" and bool(
            _PATH_PARAMETER.search(schema.get("description", ""))
        )
        if source is None and not path and not _is_identifier(name, schema):
            return None
        steps = [step for step in earlier if source is None or step.tool == source]
        fresh = [step for step in steps if step in unused]
        found = self._references(schema, fresh or steps)
        if path:
            literals = self._paths_given
            named = [ref for ref in found if _PATH_FIELD.search(ref.split(".", 1)[-1])]
        else:
            literals = self._codes
            named = [ref for ref in found if ref.rsplit(".", 1)[-1] in (name, "id")]
        return [f'"{value}"' for value in literals] + [
            f"${ref}" for ref in named or (found if source else [])
        ]

    def _identifier(
        self, schema: dict[str, Any], earlier: list[Step], options: list[str], *, sourced: bool
    ) -> Any:
        """One of `options` (see `_grounded`). Without any, an identifier or a path is written
        freely but must appear in the request (an identifier is not an email address); a
        sourced value cannot be had."""
        if options:
            return options[self._cursor.choose(options)].strip('"')
        if sourced:
            raise _Ungrounded
        text = self._value(schema, earlier)
        if not isinstance(text, str) or "@" in text or text not in self._request:
            raise _Ungrounded  # a value the user never gave: invented
        return text

    def _array(
        self, items: dict[str, Any], earlier: list[Step], unused: Sequence[Step] = ()
    ) -> list[Any]:
        """A list; the results still to deliver are offered to its first item."""
        cursor = self._cursor
        values = [self._value(items, earlier, unused)]
        while len(values) < _MAX_ITEMS:
            if cursor.choose([", ", "]"]) == 1:
                return values
            values.append(self._value(items, earlier))
        cursor.force("]")
        return values

    def _references(self, schema: dict[str, Any], earlier: Sequence[Step]) -> list[str]:
        return [
            f"{step.id}{path}"
            for step in earlier
            for path in field_paths(self._tools[step.tool].returns, schema)
        ]


_PATH = re.compile(r"(?<![\w.])/[\w.-]+(?:/[\w.-]+)*\w")
_NUMERIC = re.compile(r"[0-9.]+$")
_PATH_PARAMETER = re.compile(r"\b(path|directory|folder)\b", re.IGNORECASE)
_PATH_FIELD = re.compile(r"(path|file|dir|folder)", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.,:/-])[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?(?![\w:/]|-[0-9]|[.,][0-9])")


def _givens(request: str) -> list[str]:
    """The values a request gives that a plan for it uses somewhere: quoted text, email
    addresses, absolute paths, codes ("C-20417") and whole numbers (thousands separators
    dropped)."""
    quoted = ["".join(groups) for groups in _QUOTED.findall(request)]
    rest = _QUOTED.sub(" ", request)
    emails = _EMAIL.findall(rest)
    rest = _EMAIL.sub(" ", rest)
    paths = _PATH.findall(rest)
    rest = _PATH.sub(" ", rest)
    codes = _CODE.findall(rest)
    rest = _CODE.sub(" ", rest)
    numbers = [number.replace(",", "") for number in _NUMBER.findall(rest)]
    return list(dict.fromkeys([*quoted, *emails, *paths, *codes, *numbers]))


def _reapplies(step: Step, earlier: list[Step]) -> bool:
    """Whether `step` makes an earlier step's call again, with that step's result in place of
    one argument and every other argument the same."""
    by_id = {s.id: s for s in earlier}
    for name, value in step.args.items():
        for ref in references({name: value}):
            source = by_id.get(ref.step)
            if source is not None and source.tool == step.tool:
                others = {k: v for k, v in step.args.items() if k != name}
                if others == {k: v for k, v in source.args.items() if k != name}:
                    return True
    return False


def _standard_codes(schema: dict[str, Any]) -> list[str]:
    """The codes of the ISO standard a three-letter code parameter names (currencies, ISO
    4217; countries, ISO 3166 alpha-3), so that a code is one that exists ("CNY", not "RMB")."""
    description = schema.get("description", "")
    if "ISO 4217" in description or "currency" in description.lower():
        return _iso_codes("currencies")
    if "ISO 3166" in description:
        return _iso_codes("countries")
    return []


@functools.cache
def _iso_codes(table: str) -> list[str]:
    """The sorted alpha-3 codes of a pycountry table, loaded on first use (not at import)."""
    import pycountry

    return sorted(entry.alpha_3 for entry in getattr(pycountry, table))


def _is_identifier(name: str, schema: dict[str, Any]) -> bool:
    return value_kind(schema) == "text" and (
        name.lower() == "id" or name.endswith(("_id", "Id", "_ID"))
    )


def _source(schema: dict[str, Any], tools: dict[str, ToolDescriptor], own: str) -> str | None:
    """The tool whose results a parameter's value comes from, where its description names
    one ("A hotel_id from search_hotels results.")."""
    description = schema.get("description", "")
    for name in tools:
        if name != own and re.search(rf"\bfrom {re.escape(name)}\b", description):
            return name
    return None


def _calendar_dates(today: date) -> list[str]:
    """Every date from two years before `today` to three years after it, ISO-formatted."""
    start = today.replace(year=today.year - 2, month=1, day=1)
    end = today.replace(year=today.year + 3, month=12, day=31)
    return [(start + timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]


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


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _number(text: str, kind: str) -> int | float:
    cleaned = text.strip(".") or "0"
    try:
        value = float(cleaned)
    except ValueError:
        value = 0.0
    if kind == "integer" or value.is_integer():
        return int(value)
    return value
