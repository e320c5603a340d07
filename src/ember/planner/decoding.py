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
  token and the best allowed token is taken (a walk down the token trie of the options,
  `ember.planner.vocabulary.Cursor`);
- values are sampled greedily under a per-kind token mask (dates: digits and `-`; currency
  codes: capitals; text: no quote, backslash or newline) until a closing token.

References are offered only to earlier steps and only to result fields whose type fits the
parameter, so a plan decoded here always passes the type checks that a free-running model fails.
Values the user or an earlier result must supply are grounded (`ember.planner.grounding`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

import msgspec

from ember.errors import PlannerError
from ember.plan import ITEM, ITEM_TOOL, Step, references, step_ref
from ember.planner import grounding
from ember.planner.compact import (
    DONE,
    FOR_EACH,
    field_paths,
    json_type,
    list_paths,
    literal_start,
    value_kind,
)
from ember.planner.quotes import quoted_texts
from ember.tools.descriptor import ToolDescriptor

if TYPE_CHECKING:  # numpy, which the vocabulary needs, is the embedded planner's extra
    from ember.planner.vocabulary import ContextCursor

__all__ = ["MAX_STEPS", "RULES", "PlanDecoder", "check_rules"]

MAX_STEPS = 12
# Rules that can be switched off (`PlanDecoder(off=...)`), to measure what each one buys:
# the bound on steps a plan is made to go on for, the schema constraints of unseen catalogues
# (stated choices, pattern spans, numeric ids, unoffered options), dates among those the
# request names, numbers in words or units, the check of a first call made in doubt (the
# request gives its values; and it names the tool, or gives a path, address or currency), steps
# over lists, optional short texts the request does not say (a habitual glob "*.pdf"), tools
# that act offered to a question that does not name their action, the ordering of a call
# after an earlier one that changes a path it touches, optional times of day never said,
# tools that act offered to a request that declines their action ("don't book"), a
# recipient's address offered to a tool that only reads (a lookup of the mail's recipient),
# timers offered to a request that asks for no wait, a structured value (an object, a
# list's object item) written as a literal instead of an earlier result, and a path given in
# the wrong role (a file's name as a folder, a CSV ledger as a Markdown summary), a first
# step chosen again when the one the model wanted strongly cannot be grounded, and a text
# ended where it has copied a sentence the request quotes whole ("... 09:00." not "... 09:00.
# after 1"), a later step chosen again when its values cannot be had while something the
# user gave is still unused, a later lookup not made before chosen again (or the plan
# ended) when all the user gave is used and the request does not name its tool, and a first
# call in doubt whose tool the request does not name kept if the next step, named, uses it,
# and a later step chosen again when it uses something the request says after something it gives
# or lists that the plan has still to do (one mail sent before the second city is searched),
# a lookup of a file the plan itself wrote (an invoice read from the report just made), and
# steps over lists offered for "both" or "the three files" (a count: each a step of its own),
# and a free text that is a word another parameter's pattern takes, moved to it, and a name
# given a code another tool's parameter takes (the tool chosen again), and an optional date
# the request does not name (left out), and a name looked up in a role the request does not
# give it (a patient's name with the doctors' lookup: chosen again among lookups of names),
# and a later lookup the request does not name kept where it leads to a tool the request names,
# and an optional text the model composed that the request does not ask for (left out), and
# an identifier from an earlier result already used where no unused one holds it, and a file
# a result points to by a field the request names (a lab report: read before the plan ends),
# and a code a parameter's pattern asks for taken from a result field of the same kind of code
# (a patient's phone number to text, not the freshest result's doctor's name), and a day and
# a stated choice the request names counted as its values in the check of a first call in doubt,
# and a phone number in the international form its parameter documents, and a file a tool
# documents by path offered where the request names what it is, and a lookup in doubt kept when
# the next lookup leads to a tool the request names (no way through an action nobody asked for),
# and a step acting on a thing the request says another action on chosen again (no booking
# where it says cancel), and any first step whose values cannot be had chosen again,
# and a file the request names that no step passed attached where a tool that acts takes one,
# and a first call held in doubt that the next step, one that acts and whose action the request
# says, does not use: the plan begun again without it (not dropped whole),
# and no later lookup named by a value an earlier step took, and a first lookup by the
# request's codes whose result the next action only passes back given up (the plan begun
# again without it, with that action), and a document an earlier step made delivered where
# a later one that acts takes files (the invoice attached to the mail that sends it).
RULES = (
    "push-bound",
    "schema",
    "named-dates",
    "numbers",
    "doubt-check",
    "names-tool",
    "for-each",
    "optional-text",
    "questions-read",
    "write-order",
    "times",
    "declined",
    "recipients",
    "waits",
    "object-items",
    "path-roles",
    "retry-first",
    "quote-ends",
    "retry-later",
    "named-later",
    "feeds-named",
    "said-order",
    "read-back",
    "counted",
    "pattern-place",
    "coded-name",
    "optional-dates",
    "role-lookup",
    "leads-named",
    "unasked-text",
    "fan-out",
    "named-file",
    "coded-fields",
    "named-values",
    "phone-forms",
    "documented-paths",
    "lookup-chain",
    "said-action",
    "retry-ungrounded",
    "sends-named",
    "acts-by-name",
    "code-prefix",
    "result-codes",
    "code-sources",
    "detours",
    "fresh-addresses",
    "held-replaced",
    "spent-values",
    "code-lookup",
    "sends-made",
)


def check_rules(off: frozenset[str]) -> None:
    """Raise a `PlannerError` naming any rule in `off` that is not one of `RULES`."""
    unknown = sorted(off - set(RULES))
    if unknown:
        raise PlannerError(
            f"no decoding rule named {', '.join(unknown)}: the rules are {', '.join(RULES)}"
        )


_TEXT_TOKENS = 120  # longest free text, in tokens
_SHORT_TOKENS = 16  # longest date, code, time or number
_MAX_ITEMS = 8  # longest list argument
_MAX_REFERENCES = 6  # embedded references in one text
_MAX_PUSHED = 2  # steps in a row a plan is made to go on for without using what was given
_MAX_GIVEN_UP = 2  # first tools chosen again after one whose values could not be had
_LEFT_OUT = object()  # an optional argument's value that is not written (`PlanDecoder._argument`)


class _Ungrounded(Exception):
    """A step needs a value that neither the request nor an earlier result provides."""


class _InventedPath(_Ungrounded):
    """A first step's path, written freely, is none the request gives: the model took the
    request for one about a file ("summarize this: '...'" read as a file to read)."""


class _CodedName(_Ungrounded):
    """A name is given a code other tools take (`grounding.coded_name_takers`): the request
    acts on what the code names, with one of them (`PlanDecoder._instead`)."""


class _OtherLookup(_Ungrounded):
    """A name is looked up in a role the request does not give it, and another lookup of
    names leads to more of what the request names (`PlanDecoder._rival_lookups`): the step
    is chosen again among those (`PlanDecoder._instead`), where it can be; where not, `step`
    stands."""

    def __init__(self, step: Step) -> None:
        super().__init__()
        self.step = step


class _Reordered:
    """The steps of a plan chosen again for coming before what the request says before them
    (rule `said-order`): by step id, the tools among which each is chosen again (`only`: those
    that took the like of what it skipped), and where it was first chosen, to go back to."""

    def __init__(self, cursor: ContextCursor) -> None:
        self._cursor = cursor
        self.only: dict[int, list[str]] = {}
        self._first: dict[int, tuple[object, str]] = {}  # the mark before it, its tool
        self.kept: set[int] = set()  # steps gone back to: kept as first chosen
        self.strict: set[int] = set()  # steps gone back to where none of `only` is offered

    def choose_again(self, step_id: int, tools: list[str], mark: object, tool: str) -> None:
        """Step `step_id`, of `tool`, chosen at `mark`, is chosen again among `tools`."""
        self.only[step_id] = tools
        self._first.setdefault(step_id, (mark, tool))

    def go_back(self, step_id: int, given_up: list[str]) -> bool:
        """Where the step chosen again in place of step `step_id` cannot be made (no such
        call, or one that ends the plan), go back to choose it as first chosen, its tool no
        longer given up (`given_up`): the request's order is not worth a step it asked for.
        Whether it went back."""
        if step_id not in self.only:
            return False
        mark, tool = self._first.pop(step_id)
        del self.only[step_id]
        given_up.remove(tool)
        self.kept.add(step_id)
        self._cursor.rewind(mark)
        return True


class PlanDecoder:
    """Decodes one plan over `catalogue` for `request` (made on `today`), step by step, through
    `cursor`: a model's context that already holds the prompt's prefix. Values the user must
    supply are grounded in the request: an email address is one the request names (or an
    earlier result holds), an absolute path one it spells out, an identifier (`customer_id`) a
    code it gives or an earlier result's field of that name; a step that would need an
    invented one ends the plan. A parameter documented to come from another tool's results
    ("A hotel_id from search_hotels results") takes a reference to that tool's step, or a code
    the user gave: until one of the two exists, its tool is not offered."""

    def __init__(
        self,
        cursor: ContextCursor,
        catalogue: Sequence[ToolDescriptor],
        *,
        today: date,
        request: str,
        abstain: tuple[float, float] | None = None,
        off: frozenset[str] = frozenset(),
    ) -> None:
        self._abstain = abstain
        self._off = off
        self.first_margin: float | None = None  # logit(step) - logit(done) at the first choice
        # by step id: the tool given up (a name given a code, or looked up in the wrong role)
        # and the tools the step is chosen again among (`coded-name`, `role-lookup`)
        self._instead: dict[int, tuple[str, list[str]]] = {}
        self.end_margins: list[float] = []  # the same after each step, where `done` was offered
        # first tools given up for values they could not have yet (`retry-ungrounded`): the
        # next first step is kept only as one in doubt is, its values given and its tool
        # named; they may be later steps (the jobs listed once the vehicle is found)
        self._unready: set[str] = set()
        # a first lookup by codes the request gives, held until the next step (`_passes_code`)
        self._code_held: Step | None = None
        self._restarts = 0  # times the plan began again without a first call (`_begin_again`)
        self._unneeded: set[str] = set()  # lookups the first action did not need (`_given_up`)
        # (not where the values check cannot judge the next choice: a request in Chinese)
        self._retries_ungrounded = "retry-ungrounded" not in off and not grounding.unspaced(request)
        self._cursor = cursor
        spoken = "numbers" not in off
        self._grounds = grounding.Grounds(catalogue, request, today, spoken=spoken, off=off)
        self._tools = dict(self._grounds.tools)  # addresses marked as the grounds mark them
        self._request = request
        self._givens = grounding.givens(request, spoken=spoken, phones="phone-forms" not in off)
        # where the user gives each given, and the names the request lists (`said-order`)
        self._said = {
            given[0]: at
            for given in self._givens
            if (at := grounding.said_at(request, given)) is not None
        }
        self._listed = [] if "said-order" in off else grounding.listed_names(request)
        # Steps over lists are offered when the request asks for something done to each
        # (every, all) of several things it does not count ("both" and "the three files" are
        # steps of their own: rule `counted`).
        self._each_asked = "for-each" not in off and grounding.asks_for_each(
            request, counted_too="counted" in off
        )
        # A text that has copied a quoted sentence whole is complete: the model ran on past
        # such an end into plan syntax (`... until Monday 09:00. after 1`).
        self._quote_ends = (
            []
            if "quote-ends" in off
            else [q for q in quoted_texts(request) if q.endswith((".", "!", "?", "。", "！", "？"))]
        )

    def decode(
        self,
        prompt: str | Sequence[int],
        on_step: Callable[[Step], None],
        on_first_token: Callable[[], None] | None = None,
        *,
        earlier: Sequence[Step] = (),
        failed: Sequence[Step] = (),
        max_steps: int = MAX_STEPS,
    ) -> list[Step]:
        """Append `prompt` (text, special tokens allowed, or tokens) to the context and decode
        a plan after it. `on_step` gets each step as soon as it is complete (a first call held
        in doubt, with the next step that uses it, or never: `feeds-named`; a first lookup by
        the request's codes, with the next step, or when the plan ends, or never where the
        next step only passes its codes back: `code-lookup`); `on_first_token`
        is called once, when the model has read the prompt. `earlier`: steps already run (a
        round of planning on: the prompt ends with them), which new steps follow and may use;
        only the new steps are returned. `failed`: calls that failed in this run (a round after
        a failure), which are not made again; `max_steps`: at most this many new steps (at most
        `MAX_STEPS`)."""
        cursor = self._cursor
        cursor.on_first_logits = on_first_token
        cursor.read(prompt)
        steps: list[Step] = list(earlier)
        pushed = 0  # steps in a row the plan was made to go on for that used nothing given
        # how the first choice is decided (see `_doubt`), where this plan starts one
        first = None if steps else self._doubt("1. ", DONE)
        tried: dict[int, list[str]] = {}  # by step id: tools chosen that could not be grounded
        held: Step | None = None  # a first call in doubt, until the next step uses its result
        start = cursor.mark()  # where the plan begins again without a held call (`_unheld`)
        order = _Reordered(cursor)  # steps chosen again for coming early (`said-order`)
        while len(steps) < min(max_steps, MAX_STEPS) + len(earlier):
            step_id = max((step.id for step in steps), default=0) + 1
            unused = self._unused(steps, {})
            passed = tried.setdefault(step_id, [])
            unread = self._unread(steps)  # a file the request is about, found, to read next
            # a first tool given up stays given up (`passed` is this step's)
            names = self._offered(
                steps,
                unused,
                failed,
                self._given_up(tried, step_id),
                order.only.get(step_id) or self._instead.get(step_id, ("", None))[1] or unread,
            )
            if self._stranded(order, step_id, names, passed):
                continue  # (the action begun with cannot be called: as the model chose)
            # A plan begun leaves nothing the user gave unused (an address, a path, a code, a
            # number): small models stop before the last action ("... and email it to X").
            # While something is left that a tool could take, the plan goes on, for at most
            # two steps in a row that use none of it (a step in between may be needed).
            left, can_end = self._ending(steps, names, unread, pushed, early=step_id in order.only)
            doubt = first if not steps else None
            if doubt == "abstain":
                break  # no tool fits: the model's preference for a step is too weak
            mark = cursor.mark() if self._chooses_again(steps, doubt, left, passed) else None
            # (no step over a list for a step chosen again for coming too early: it is one of
            # the tools' calls; nor `done`, see `_may_end`)
            choice, lists = self._choose(
                step_id, names, unused, steps, can_end=can_end, each=step_id not in order.only
            )
            if choice == len(names) + len(lists):
                break
            step = self._attempt(
                step_id, choice, names, lists=lists, steps=steps, unused=unused, mark=mark
            )
            if not isinstance(step, Step):
                # (a first step is chosen again only for a path the request never names, a
                # later one only while something the user gave is unused)
                if step is not None and self._again_for(step, steps, left, doubt, names[choice]):
                    self._give_up(names[choice], passed, mark)
                    continue
                if self._go_back(order, step_id, passed):
                    continue
                break  # the step needs a value that neither the request nor a result has
            verdict = self._verdict(
                step,
                steps,
                failed=failed,
                doubt=doubt,
                passed=passed,
                left=left,
                held=held,
                ordered=step_id in order.kept,
                fresh_start=self._restarts < _MAX_GIVEN_UP,
            )
            if verdict in ("again", "early") and mark is not None and choice < len(names):
                self._choose_again(
                    step,
                    steps,
                    failed,
                    passed,
                    mark=mark,
                    order=order if verdict == "early" else None,
                )
                continue
            if verdict == "unheld" and held is not None:
                tried, order = self._begin_again(tried, held, start, step.tool)
                steps, held, pushed = list(earlier), None, 0
                continue
            if verdict not in ("keep", "hold", "early"):  # (no choice left: in order enough)
                if self._go_back(order, step_id, passed):
                    continue
                break
            steps.append(step)
            held = self._emit(steps, step if verdict == "hold" else held, on_step)
            pushed = 0 if can_end or len(self._unused_givens(steps)) < len(left) else pushed + 1
        return self._finish(steps[len(earlier) :], held, on_step)

    def _attempt(
        self,
        step_id: int,
        choice: int,
        names: Sequence[str],
        *,
        lists: Sequence[str],
        steps: list[Step],
        unused: Sequence[Step],
        mark: object,
    ) -> Step | _Ungrounded | None:
        """Step `step_id` as choice `choice` makes it (a call of one of `names`, else a step
        over one of `lists`); else why it cannot be made, where a call of another tool may be
        chosen instead (a `mark` to go back to), or None. A lookup of a name in a role the
        request does not give it that cannot be chosen again stands (`role-lookup`)."""
        try:
            if choice < len(names):
                return self._step(step_id, self._tools[names[choice]], steps)
            return self._each(step_id, lists[choice - len(names)], steps, unused)
        except _Ungrounded as ungrounded:
            if choice >= len(names):
                return None
            if mark is not None:
                return ungrounded
            if isinstance(ungrounded, _OtherLookup):
                self._instead.pop(step_id, None)
                return ungrounded.step
            return None

    def _choose(
        self,
        step_id: int,
        names: Sequence[str],
        unused: Sequence[Step],
        steps: list[Step],
        *,
        can_end: bool,
        each: bool,
    ) -> tuple[int, list[str]]:
        """The model's choice of step `step_id`: a call of one of `names`, a step over a list in
        a result nothing uses yet (`unused`; where the request asks for something done to each
        of several things and `each`), or `done` where the plan `can_end` (in that order).
        Returns the choice's index and the lists offered."""
        cursor = self._cursor
        lists = [ref for ref, _ in self._lists(unused)] if each and self._asks_each(steps) else []
        calls = [f"{step_id}. {name}(" for name in names]
        each_options = [f"{step_id}. {FOR_EACH}${ref}: " for ref in lists]
        choice = cursor.choose(calls + each_options + [DONE] * can_end)
        if can_end and steps and cursor.scores:  # how much the model wanted to go on
            self.end_margins.append(max(cursor.scores[:-1]) - cursor.scores[-1])
        return choice, lists

    def _emit(
        self, steps: list[Step], held: Step | None, on_step: Callable[[Step], None]
    ) -> Step | None:
        """Hand the step just added to `on_step`, unless it is a first call in doubt `held`
        until the next step, which must use its result (`_feeds_named`): then the two go
        together. Returns the call still held, if any."""
        if held is steps[-1]:
            return held
        for step in steps[-2:] if held is not None else steps[-1:]:
            on_step(step)
        return None

    def _ending(
        self,
        steps: list[Step],
        names: Sequence[str],
        unread: Sequence[str],
        pushed: int,
        *,
        early: bool,
    ) -> tuple[list[str], bool]:
        """What the user gave that `steps` leave unused, and whether the plan may end here:
        not while a file the request is about is `unread`, else as `_may_end` says."""
        left = self._unused_givens(steps) if steps else []
        return left, not unread and self._may_end(names, left, pushed, early=early)

    def _may_end(
        self, names: Sequence[str], left: Sequence[str], pushed: int, *, early: bool
    ) -> bool:
        """Whether the plan may end here: no tool is offered (`names`); or the step is not one
        chosen again for coming too early (`early`: what was said before it is still to do,
        `said-order`) and nothing the user gave is left (`left`) that a tool offered could
        take, or the plan has been made to go on for `pushed` steps in a row that used none of
        it (bounded: rule `push-bound`)."""
        if not names:
            return True
        if early:
            return False
        if pushed >= _MAX_PUSHED and "push-bound" not in self._off:
            return True
        return not any(self._takes(name, given) for name in names for given in left)

    def _given_up(self, tried: dict[int, list[str]], step_id: int) -> list[str]:
        """The tools not offered for step `step_id`: those given up for it, and those given up
        for the first step, which stay given up, but for the one chosen again instead
        (`_instead`: given a code as a name, or a name in another role): it may be the lookup
        a later step needs (`coded-name`, `role-lookup`); but for those given up for values
        they could not have yet (`retry-ungrounded`); and but for a lookup by codes the first
        action only passed back (`code-lookup`), which a later step may need."""
        coded = self._instead.get(1, ("", None))[0]
        first = [
            tool
            for tool in tried.get(1, ())
            if step_id == 1
            or (tool != coded and tool not in self._unready and tool not in self._unneeded)
        ]
        return [*first, *tried.get(step_id, ())]

    def _stranded(
        self, order: _Reordered, step_id: int, names: Sequence[str], passed: list[str]
    ) -> bool:
        """Where step `step_id` must be one of `order`'s tools (`_Reordered.strict`: the action
        a plan began again with) and none is among `names`, go back to choose it as first
        chosen (`_go_back`); whether it went back."""
        only = order.only.get(step_id, ())
        stranded = step_id in order.strict and not set(names) & set(only)
        return stranded and self._go_back(order, step_id, passed)

    def _go_back(self, order: _Reordered, step_id: int, passed: list[str]) -> bool:
        """`order.go_back`, the step no longer chosen again among other tools (`_instead`)."""
        self._instead.pop(step_id, None)
        return order.go_back(step_id, passed)

    def _takers(self, tool: ToolDescriptor, args: dict[str, Any], earlier: list[Step]) -> list[str]:
        """The tools that take a code `args` gives as a name (`grounding.coded_name_takers`)
        and can be offered now; none: the step stands."""
        takers = grounding.coded_name_takers(tool, args, self._request, self._tools.values())
        if not takers:  # (most steps: no name given a code)
            return []
        unused = self._unused(earlier, {})
        return [name for name in takers if self._available(name, earlier, unused)]

    def _rival_lookups(
        self, tool: ToolDescriptor, args: dict[str, Any], earlier: list[Step]
    ) -> list[str]:
        """The other lookups of names to choose step instead of this lookup of a name in `args`
        (`grounding.name_rivals`), where the request does not say the name as what this one
        looks up (`grounding.said_as`): those it says the name as ("Book Tomás Ortega into Dr.
        Petrova's first free slot": no doctor is Tomás Ortega), else those whose result leads
        to more of the tools the request names, and to all this one's leads to (`_leads_to`:
        a patient found leads to the appointments to move, a doctor to free slots). Small
        models look a name up with the lookup the request's topic brings to mind (a doctor's,
        for an appointment). Empty: the step stands (rule `role-lookup`)."""
        if "role-lookup" in self._off:
            return []
        name, rivals = grounding.name_rivals(tool, args, self._tools.values())
        if not rivals or grounding.said_as(self._request, name, tool):
            return []
        unused = self._unused(earlier, {})
        rivals = [other for other in rivals if self._available(other, earlier, unused)]
        request = self._request
        said = [other for other in rivals if grounding.said_as(request, name, self._tools[other])]
        if said:
            return said
        lookups = {tool.tool_name, *rivals}
        own = self._leads_to(tool.tool_name, earlier, lookups)
        return [other for other in rivals if own < self._leads_to(other, earlier, lookups)]

    def _leads_to(self, tool: str, earlier: list[Step], lookups: set[str]) -> frozenset[str]:
        """The tools the request names (`grounding.names_tool`) that a plan could call after
        `earlier` and a call of `tool`, one of `lookups`, and not without it, no other of
        `lookups` called (`_reach`)."""
        gained = self._reach([*earlier, _made(tool, earlier)], lookups) - self._reach(
            earlier, lookups
        )
        return frozenset(name for name in gained if self._named(Step(id=1, tool=name)))

    def _reach(self, earlier: list[Step], not_called: set[str]) -> frozenset[str]:
        """The tools but `not_called` that a plan could call after `earlier`, one after
        another, each call's result at hand for the next (`_available`, a call of each taken
        as made). A tool that acts is a way on only where the request names it (rule
        `lookup-chain`): no plan books a job nobody asked for to have a job to cancel."""
        steps = list(earlier)
        reached: set[str] = set()
        grown = True
        chain = "lookup-chain" not in self._off
        while grown:
            grown = False
            for name in self._tools:
                if name in reached or name in not_called or name in self._grounds.unasked:
                    continue
                if (
                    chain
                    and not grounding.is_lookup(self._tools[name])
                    and not self._named(Step(id=1, tool=name))
                ):
                    continue
                if self._available(name, steps, steps):
                    reached.add(name)
                    steps.append(_made(name, steps))
                    grown = True
        return frozenset(reached)

    def _unread(self, steps: list[Step]) -> list[str]:
        """The tools that can read a file an earlier lookup's result points to by a field the
        request names (`_named_files`: `report_path` for "Pull up Maria Keller's latest lab
        report", after her lab results are listed), where no step has read it yet: the next
        step is one of them, and the plan does not end before it (rule `named-file`). Small
        models end with the listing, or mail the report's path instead of its text."""
        if not self._named_files(steps) - self._files_read(steps):
            return []
        unused = self._unused(steps, {})
        return [
            name
            for name in self._tools
            if self._tools[name].read_only is not False
            and any(self._reads(name, param) for param in self._params(name))
            and self._available(name, steps, unused)
        ]

    def _named_files(self, steps: list[Step]) -> set[tuple[int, str]]:
        """(step id, field name) of each result field of a lookup of `steps` that holds a path
        to a file the request names (`grounding.named_files`; rule `named-file`)."""
        if "named-file" in self._off:
            return set()
        return {
            (step.id, path.rsplit(".", 1)[-1])
            for step in steps
            if self._tools[step.tool].read_only is not False
            for path in grounding.named_files(self._request, self._tools[step.tool].returns)
        }

    def _made_files(self, steps: list[Step]) -> set[tuple[int, str]]:
        """(step id, field name) of each field of a result of a step of `steps` that acts and
        names the file it made (`issue_invoice`'s `document_path`, `create_invoice`'s
        `pdf_path`; `grounding.file_fields`): a document the plan made, to deliver where it
        sends something (rule `sends-made`)."""
        if "sends-made" in self._off:
            return set()
        return {
            (step.id, path.rsplit(".", 1)[-1])
            for step in steps
            if self._tools[step.tool].read_only is False and step.each is None
            for path, _ in grounding.file_fields(self._tools[step.tool].returns)
            if path.count(".") == 1  # (a field of the result itself, not of a list in it)
        }

    def _files_read(self, steps: list[Step]) -> set[tuple[int, str]]:
        """(step id, field name) of each result field a step of `steps` passes as a path (a
        step over a list, `$item.report_path`: the list's step)."""
        read = set()
        for step in steps:
            listed = next(references(step.each), None) if step.each else None
            for name, value in step.args.items():
                if not self._reads(step.tool, name):
                    continue
                for ref in references(value):
                    source = listed.step if ref.step == ITEM and listed else ref.step
                    read |= {(source, ref.path[-1])} if ref.path else set()
        return read

    def _read_named(self, earlier: list[Step], unused: Sequence[Step]) -> list[Step]:
        """The steps of `unused` (nothing uses their results) that read a file the request
        names (`_named_files`): a text written after them cites what they read, not the file's
        path or another field (rule `named-file`)."""
        named = self._named_files(earlier)
        return [step for step in unused if named & self._files_read([step])]

    def _params(self, tool: str) -> dict[str, Any]:
        properties: dict[str, Any] = self._tools[tool].parameters.get("properties", {})
        return properties

    def _reads(self, tool: str, name: str) -> bool:
        """Whether parameter `name` of tool `tool` takes a path, or a list of them."""
        schema = self._params(tool).get(name, {})
        return grounding.is_path(name, self._path_items(schema) or schema)

    @staticmethod
    def _path_items(schema: dict[str, Any]) -> dict[str, Any] | None:
        """The item schema of `schema`, a list, with the list's description where the item
        has none ("Files to attach, by absolute path."); None for a parameter that is no
        list."""
        if value_kind(schema) != "array":
            return None
        items: dict[str, Any] = schema.get("items", {})
        if "description" not in items and "description" in schema:
            items = {**items, "description": schema["description"]}
        return items

    def _choose_again(
        self,
        step: Step,
        steps: list[Step],
        failed: Sequence[Step],
        passed: list[str],
        *,
        mark: object,
        order: _Reordered | None,
    ) -> None:
        """Give `step`'s tool up and go back to `mark` to choose the step again: among the tools
        that take what it skipped where it came too `early` (an `order` to keep: `said-order`)."""
        if order is not None:
            tools = self._continuing(step, steps, failed, passed)
            order.choose_again(step.id, tools, mark, step.tool)
        self._give_up(step.tool, passed, mark)

    def _begin_again(
        self, tried: dict[int, list[str]], held: Step, start: object, tool: str
    ) -> tuple[dict[int, list[str]], _Reordered]:
        """Go back to `start`, the plan's beginning, with the tool of the first call `held`
        given up for the first step (`_unheld`, `_passed_back`), which is a call of `tool`,
        that of the step that showed it was not needed: the model's plan without it. Returns
        the tools given up so (all that was chosen again belonged to the plan given up), and
        the order that makes the first step one of `tool` where it can be made (else it is
        chosen as first chosen, `_Reordered.go_back`, where none of its calls can be made)."""
        self._instead.clear()
        if held is self._code_held:
            self._unneeded.add(held.tool)  # (a later step may need it: `_given_up`)
        self._code_held = None
        self._restarts += 1
        self._cursor.rewind(start)
        given_up = {1: [*tried.get(1, ()), held.tool]}
        order = _Reordered(self._cursor)
        order.choose_again(1, [tool], start, held.tool)
        order.strict.add(1)
        return given_up, order

    def _finish(
        self, steps: list[Step], held: Step | None, on_step: Callable[[Step], None]
    ) -> list[Step]:
        """The plan's new `steps` once it ends: none where a first call `held` in doubt was
        used by no next step the request names (no tool fits); all, the lookup `held` by the
        codes the request gives handed on, where it was the whole plan (`_passes_code`)."""
        if held is not None and held is self._code_held:
            on_step(held)  # "what's on EVT-261044?": the request asked for the lookup
            return steps
        return steps if held is None else []

    def _give_up(self, tool: str, passed: list[str], mark: object) -> None:
        """Give tool `tool` up for this step and go back to choose the step again."""
        passed.append(tool)
        self._cursor.rewind(mark)

    def _verdict(
        self,
        step: Step,
        steps: list[Step],
        *,
        failed: Sequence[Step],
        doubt: str | None,
        passed: Sequence[str],
        left: Sequence[str],
        held: Step | None,
        ordered: bool = False,
        fresh_start: bool = False,
    ) -> str:
        """What becomes of a step just decoded: "keep" it, "hold" it (a first call in doubt
        that the next step must use), choose the step "again" (where the decoder may), choose it
        again as "early" (where the decoder may, and the step is not `ordered`: chosen again
        once for it already; else it is kept), "end" the plan before it, or begin the plan
        again without the first call `held` ("unheld", where it may: `fresh_start`)."""
        if any(step.tool == s.tool and step.args == s.args for s in [*steps, *failed]):
            return "end"  # a repeated call: small models loop; a plan never needs one twice
        if grounding.reapplies(step, steps):
            return "end"  # the same call again on its own output (a summary of a summary)
        if "read-back" not in self._off and grounding.reads_back(step, steps, self._tools):
            return "end"  # a lookup of a file the plan wrote: a run-away plan
        doubted = self._doubted(step, doubt, passed)
        if doubted == "unnamed" and "feeds-named" not in self._off:
            return "hold"  # kept only if a step the request names uses its result
        if doubted == "unsupported" and not steps and self._retries_ungrounded:
            self._unready.add(step.tool)
            return "again"  # a first call of values nobody gave: the model's next choice
        if doubted:
            return "end"  # a weak preference, or a second choice, the request does not support
        if not steps and self._passes_code(step):
            self._code_held = step
            return "hold"  # kept unless the next step only passes its codes back
        if self._action_unsaid(step):
            return "again"  # a booking where the request says to cancel (or move) one
        if steps and not left and self._unnamed(step, steps, failed):
            return "again"  # a step nobody asked for, after all that was asked
        if steps and left and self._detour(step, steps, failed, left):
            return "again"  # a step nobody asked for, before what was given is used
        if held is not None and held is self._code_held:
            if fresh_start and self._passed_back(step, held):
                return "unheld"  # the plan begins again, without the lookup
        elif held is not None and not self._feeds_named(step, held, steps):
            if fresh_start and self._unheld(step, held):
                return "unheld"  # the plan begins again, without the call held in doubt
            return "end"  # the call held in doubt was no lookup this step needs
        if steps and not ordered and self._continuing(step, steps, failed, passed):
            return "early"  # something the request says before what it uses is still to do
        return "keep"

    def _chooses_again(
        self, steps: list[Step], doubt: str | None, left: Sequence[str], tried: Sequence[str]
    ) -> bool:
        """Whether the next step, if its values cannot be had, is chosen again among the other
        tools (at most twice; `tried`: those given up for it so far) rather than ending the
        plan. A first step the model wants strongly on a file the request never names was
        the wrong tool (a file read for a text the request quotes; rule `retry-first`): the
        second choice is kept only if the request gives its values, as in doubt. A later
        step, while something the user gave is still unused (`left`), was the wrong tool for
        it (a chat message to "SRCH-77" for "comment on SRCH-77"; rule `retry-later`); one
        made when nothing is left, if the request does not name its tool (`_unnamed`)."""
        if len(tried) >= _MAX_GIVEN_UP:
            return False
        if not steps:  # (in doubt: for a coded name only, `_again_for`)
            return doubt in ("plan", "check")
        if not left:  # a step the request does not name is chosen again (`_unnamed`)
            return "named-later" not in self._off
        return "retry-later" not in self._off

    def _again_for(
        self,
        ungrounded: _Ungrounded,
        steps: list[Step],
        left: Sequence[str],
        doubt: str | None,
        tool: str,
    ) -> bool:
        """Whether a step whose values cannot be had is chosen again (where `_chooses_again`
        allows): a later one while something the user gave is unused (`left`); a first one
        given a code as a name, among the tools that take the code (rule `coded-name`), or,
        wanted strongly, on a file the request never names (rule `retry-first`), or any
        first step whose values cannot be had (rule `retry-ungrounded`: jobs listed by a day
        nobody named, where the request gives a plate to look the vehicle up by)."""
        if isinstance(ungrounded, _OtherLookup):
            return True
        if steps:
            return bool(left)
        if isinstance(ungrounded, _CodedName):
            return True
        if (
            isinstance(ungrounded, _InventedPath)
            and doubt == "plan"
            and "retry-first" not in self._off
        ):
            return True
        if not self._retries_ungrounded:
            return False
        self._unready.add(tool)
        return True

    def _offered(
        self,
        steps: list[Step],
        unused: Sequence[Step],
        failed: Sequence[Step],
        given_up: Sequence[str],
        only: Sequence[str] | None = None,
    ) -> list[str]:
        """The tools a next step may call: those whose grounded values can be had, not only a
        call that failed again, not an action the request does not ask for, not a first tool
        given up on; among them, those in `only` where any is (a step chosen again for coming
        too early: `_continuing`)."""
        names = [
            name
            for name in self._tools
            if self._available(name, steps, unused)
            and not self._only_again(name, steps, unused, failed)
            and name not in self._grounds.unasked
            and name not in given_up
        ]
        return [name for name in names if name in (only or ())] or names

    def _lists(self, unused: Sequence[Step]) -> list[tuple[str, dict[str, Any]]]:
        """`N.path` and the items' schema of each list in a result nothing uses yet (a step
        over a list returns the list of its calls' results)."""
        found = []
        for step in unused:
            returns = self._tools[step.tool].returns
            if step.each is not None:
                found.append((str(step.id), returns or {}))
            else:
                found += [(f"{step.id}{path}", items) for path, items in list_paths(returns)]
        return found

    def _each(self, step_id: int, ref: str, earlier: list[Step], unused: Sequence[Step]) -> Step:
        """A step over the list `ref` (`2.files`), the `for each item in $2.files: ` written:
        its tool and arguments, with the current item (`$item`) offered as an earlier result.
        A step that does not use its item is no step over a list: it is kept as a plain one;
        so is a call on a tool that takes the whole list, decoded without the item."""
        items = dict(self._lists(unused))[ref]
        returns = items if json_type(items) == "object" else {"type": "object", "properties": {}}
        item_tool = ToolDescriptor(ITEM_TOOL, {"type": "object"}, returns=returns)
        self._tools[ITEM_TOOL] = self._grounds.tools[ITEM_TOOL] = item_tool
        self._grounds.item = (ref, items)
        try:
            with_item = [*earlier, Step(ITEM, ITEM_TOOL, each=f"${ref}")]  # the list is used
            names = [
                name
                for name in self._tools
                if name != ITEM_TOOL
                and name not in self._grounds.unasked
                and self._available(name, with_item, self._unused(with_item, {}))
            ]
            if not names:
                raise _Ungrounded
            name = names[self._cursor.choose([f"{name}(" for name in names])]
            whole = "for-each" not in self._off and self._takes_whole(name, ref, earlier)
            # a tool that takes the whole list (mail_merge's rows) is called once, with it
            step = self._step(step_id, self._tools[name], earlier if whole else with_item)
        finally:
            del self._tools[ITEM_TOOL], self._grounds.tools[ITEM_TOOL]
            self._grounds.item = None
        if not any(r.step == ITEM for r in references(step.args)):
            return step  # a call that does not use the item is made once, as a plain step
        return msgspec.structs.replace(step, each=f"${ref}")

    def _takes_whole(self, name: str, ref: str, earlier: list[Step]) -> bool:
        """Whether tool `name` has a parameter named like the list `ref` (`rows` of `1.rows`)
        that takes it as it is (a `to` list of addresses is not `1.members`)."""
        props = self._tools[name].parameters.get("properties", {})
        field = grounding.last_field(ref)
        schema = props.get(field)
        return schema is not None and ref in self._grounds.references(schema, earlier)

    @property
    def passes(self) -> int:
        """Forward passes of the model so far, after the one that read the request."""
        return max(0, self._cursor.passes - 1)

    def _doubt(self, step: str, done: str) -> str:
        """How the first choice is decided, from the model's logit for starting `step` over
        its logit for `done` (`first_margin`): below the abstain band's low end, no tool fits
        ("abstain"); within the band, the first call is made and kept only if the request
        gives its values ("check", `grounding.unsupported`); above it, "plan". Small models
        prefer some tool for almost any request; how much separates the requests no tool
        fits, but not by a margin that holds across catalogues (docs/benchmarks.md)."""
        self.first_margin = self._cursor.margin(step.encode(), done.encode())
        if self._abstain is None or self.first_margin is None:
            return "plan"
        low, high = self._abstain
        if self.first_margin < low:
            return "abstain"
        return "check" if self.first_margin < high else "plan"

    def _doubted(self, step: Step, doubt: str | None, given_up: Sequence[str]) -> str | None:
        """Why a first call made in doubt, or chosen again after a first tool was given up, is
        dropped, if it is: the request does not give its values ("unsupported":
        `grounding.unsupported`), or, in doubt or chosen again for values the first could not
        have, does not name its tool ("unnamed": `grounding.names_tool`)."""
        if doubt is None or (doubt != "check" and not given_up):
            return None
        tool = self._tools[step.tool]
        days = self._grounds.stated_days
        if "doubt-check" not in self._off and grounding.unsupported(
            step,
            tool,
            self._request,
            days,
            documented=self._grounds.documented_paths,
            composed=not self._unready,  # a first step chosen again takes what the user gave
            off=self._off,
        ):
            return "unsupported"
        named = "names-tool" in self._off or self._named(step)
        if (doubt == "check" or self._unready) and not named:
            return "unnamed"
        return None

    def _unheld(self, step: Step, held: Step) -> bool:
        """Whether `step`, the one after a first call `held` in doubt, neither uses it nor needs
        it, and acts, and the request says its action: then the request asked for `step`, not
        for the call held ("Book Tomasz ... His mobile is ...": no lookup of a tenant first),
        and the plan begins again without it, rather than ending empty (rule `held-replaced`).
        A lookup named by a value it takes is not enough: "we're short forty chairs for
        Saturday, order some from the supplier" (no tool fits) became a search for rooms for
        forty on Saturday, then a booking."""
        tool = self._tools[step.tool]
        return (
            "held-replaced" not in self._off
            and step.tool != held.tool
            and not any(ref.step == held.id for ref in references(step.args))
            and step.each is None
            and not grounding.is_lookup(tool)
            and grounding.says_action(tool, self._request)
            and self._named(step)
        )

    def _passes_code(self, step: Step) -> bool:
        """Whether `step`, a plan's first, is a lookup by codes alone that the request gives,
        of a thing that tools that act take by the same parameter (`get_booking(booking_id=
        "EVT-261044")`, where `cancel_booking` takes a `booking_id`): small models look the
        thing up before they act on it by habit, and the action then passes the code back
        (`booking_id=$1.booking_id`). Such a lookup is held until the next step shows whether
        it was needed (`_passed_back`; rule `code-lookup`). Not where the request asks to
        know something (`grounding.inquires`): the lookup may be the answer."""
        if "code-lookup" in self._off or not step.args or grounding.inquires(self._request):
            return False  # ("...; what does she have now?": the lookup is asked for)
        if not grounding.is_lookup(self._tools[step.tool]):
            return False
        codes = {given[0] for given in self._givens if grounding.CODE.fullmatch(given[0])}
        if not all(isinstance(value, str) and value in codes for value in step.args.values()):
            return False
        return any(
            not grounding.is_lookup(tool) and set(step.args) <= set(self._params(name))
            for name, tool in self._tools.items()
            if name != step.tool
        )

    def _passed_back(self, step: Step, held: Step) -> bool:
        """Whether `step`, the one after `held` (a lookup by codes the request gives:
        `_passes_code`), acts, not over a list, on the thing looked up (it takes the same
        codes, as given or as `$1.booking_id`), and uses nothing of the lookup's result but
        those codes: the lookup was not needed, and the plan begins again without it (the
        lookup may still come later, where a later step needs it: `_given_up`). A step that
        uses more of it (the client's contact, for a mail), acts on something else, or looks
        something else up keeps it."""
        if step.each is not None or grounding.is_lookup(self._tools[step.tool]):
            return False
        if any(
            step.args.get(name) not in (value, f"${held.id}.{name}")
            for name, value in held.args.items()
        ):
            return False  # it acts on something else ("... and email ops that it's checked")
        return all(
            len(ref.path) == 1 and ref.path[0] in held.args
            for ref in references(step.args)
            if ref.step == held.id
        )

    def _feeds_named(self, step: Step, first: Step, steps: list[Step]) -> bool:
        """Whether `step`, the one after `first` (a first call in doubt whose tool the request
        does not name) and of another tool, uses its result and the request names its tool:
        then `first` is the lookup it needs ("Look up Dev Patel and show me his open pull
        requests": the person found, then the pull requests by the address found; rule
        `feeds-named`). Or `step` is a lookup that leads to a tool the request names
        (`_leads_to`, after `steps`; rule `lookup-chain`): "cancel Lisa Brandt's booking" is
        the customer, her bookings, then the cancellation. Only the next step may: a held
        plan costs passes until it is judged, and a plan no tool fits would otherwise be
        decoded whole before it is dropped."""
        if step.tool == first.tool:
            return False  # the same call for another thing: no more named than the first
        uses = any(ref.step == first.id for ref in references(step.args)) or (
            step.each is not None and step.each.startswith(f"${first.id}")
        )
        if not uses:
            return False
        if self._named(step):
            return True
        return (
            "lookup-chain" not in self._off
            and grounding.is_lookup(self._tools[step.tool])
            and bool(self._leads_to(step.tool, steps, {step.tool}))
        )

    def _named(self, step: Step, earlier: Sequence[Step] = ()) -> bool:
        """Whether the request names what `step`'s tool is for (`grounding.names_tool`). A
        value a step of `earlier` already took names no later tool: the day named for a room
        search does not name the staff rota looked up for it after (rule `spent-values`)."""
        tool = self._tools[step.tool]
        if earlier and "spent-values" not in self._off:
            spent = set(_leaves([other.args for other in earlier]))
            fresh = {
                name: value
                for name, value in step.args.items()
                if not (isinstance(value, str) and value in spent)
            }
            step = msgspec.structs.replace(step, args=fresh)
        return grounding.names_tool(
            step,
            tool,
            self._request,
            self._grounds.stated_days,
            others=self._tools.values(),
            off=self._off,
        )

    def _action_unsaid(self, step: Step) -> bool:
        """Whether `step` acts on a thing other tools act on too and the request says
        another's action, not this one's ("Please cancel it": no booking;
        `grounding.shared_subjects`, rule `said-action`)."""
        if "said-action" in self._off:
            return False
        tool = self._tools[step.tool]
        return bool(
            grounding.shared_subjects(tool, self._tools.values(), self._request)
        ) and not grounding.says_action(tool, self._request)

    def _unnamed(self, step: Step, steps: list[Step], failed: Sequence[Step]) -> bool:
        """Whether a later step, made when all the user gave is used, is a lookup (a tool not
        known to act) that no earlier step (of `steps`, or `failed`) made and the request does
        not name (`grounding.names_tool`; rule `named-later`), nor needs: it leads to no tool
        the request names that the plan cannot call without it (`_leads_to`; rule
        `leads-named`: the patient to book a doctor's slot for, the request naming the
        booking). The model's wish to go on is strong (+4 to +12 logits over `done`): after
        all that was asked it adds lookups nobody asked for (an on-call lookup before a
        deploy, a person looked up for a result's address, a metric after the answer). A
        lookup a request implies but does not name comes before what it names, while a value
        the request gave is still unused; the same lookup again for another thing ("the
        weather in Oslo and in Bergen") is the request's; a value an earlier step took names
        no later lookup (`_named`: the rota of the day a room was searched for)."""
        if "named-later" in self._off or self._tools[step.tool].read_only is False:
            return False
        if any(other.tool == step.tool for other in [*steps, *failed]):
            return False
        if self._named(step, steps):
            return False
        if step.tool in self._unread(steps):
            return False  # it reads the file the request is about (`named-file`)
        return "leads-named" in self._off or not self._leads_to(step.tool, steps, {step.tool})

    def _detour(
        self, step: Step, steps: list[Step], failed: Sequence[Step], left: Sequence[str]
    ) -> bool:
        """Whether a later step, made while something the user gave is still unused (`left`),
        is a lookup nobody asked for (`_unnamed`) that uses none of it: a detour (the rent
        ledger looked up where the request asks for a notice of entry "for the 14th at 10am").
        A lookup the request implies but does not name takes a value it gave, or leads to a
        tool it names (rule `detours`)."""
        if "detours" in self._off or not self._unnamed(step, steps, failed):
            return False
        return len(self._unused_givens([*steps, step])) == len(left)

    def _asks_each(self, steps: list[Step]) -> bool:
        """Whether the request asks for something done to each of several things that `steps`
        have not each done yet. Its "each" of names it lists ("Lyon and Bordeaux ... the
        cheapest hotel in each"; "both" too with rule `counted` off) is done once a step has
        used every one of them: a list in a result is then no list the request asked to go
        through (one mail for each hotel found in Lyon)."""
        if not self._each_asked:
            return False
        held = _values(steps)
        return not self._listed or any(
            not _holds(held, name) for names in self._listed for name, _ in names
        )

    def _skipped(self, step: Step, steps: list[Step]) -> str | None:
        """What `step`, a later one, skips, if anything: the first thing the request says
        before what the step uses that the plan has still to do. That is a name listed with
        one a step used ("between Lyon and Bordeaux", `grounding.listed_names`), or a given no
        step has used, said after one an earlier step used (the plan has begun on the request's
        values in its order and skipped it). Small models finish the first of several things
        the request lists, mail it, and only then go on to the next: two mails where one was
        asked for both (rule `said-order`)."""
        if "said-order" in self._off:
            return None
        before, after = self._pending(steps), self._pending([*steps, step])
        uses = [at for item, at in before.items() if item not in after]
        begun = min((at for given, at in self._said.items() if given not in before), default=None)
        skipped = [
            (at, item)
            for item, at in after.items()
            if uses
            and at < min(uses)
            and (
                item not in self._said  # a name listed with one already used
                or (
                    begun is not None
                    and at > begun
                    and any(self._takes(name, item) for name in self._tools)
                )
            )
        ]
        return min(skipped)[1] if skipped else None

    def _continuing(
        self, step: Step, steps: list[Step], failed: Sequence[Step], given_up: Sequence[str]
    ) -> list[str]:
        """The tools the plan continues with where `step` skips something (`_skipped`): those
        of earlier steps that took its like (a name listed with it, or a given of its kind: an
        address, a path, a number, a code), other than `step`'s own, that may be offered now
        (`given_up`: the tools given up for this step). The step is chosen again among them: a
        model that wants to mail after the first city prefers a booking to the second city's
        search. None where nothing is skipped, or where only `step`'s own tool took its like:
        the same kind of call in another order ("30 years" before "20") is no step skipped."""
        skipped = self._skipped(step, steps)
        if skipped is None:
            return []
        listed = [[name for name, _ in names] for names in self._listed]
        group = next((names for names in listed if skipped in names), None)
        tools = []
        for earlier in steps:
            if group is not None:
                held = _values([earlier])
                took = any(_holds(held, name) for name in group)
            else:
                gave = set(self._said) - set(self._unused_givens([earlier]))
                took = any(_kind(given) == _kind(skipped) for given in gave)
            tools += [earlier.tool] if took and earlier.tool not in tools else []
        unused = self._unused(steps, {})
        offered = self._offered(steps, unused, failed, [*given_up, step.tool])
        return [tool for tool in tools if tool in offered]

    def _pending(self, steps: list[Step]) -> dict[str, int]:
        """What the user gave or listed that `steps` have still to use, with where the request
        says it: the givens no step holds, and the names listed with one a step holds."""
        pending = {g: self._said[g] for g in self._unused_givens(steps) if g in self._said}
        held = _values(steps)
        for names in self._listed:
            if any(_holds(held, name) for name, _ in names):
                pending.update({n: at for n, at in names if not _holds(held, n)})
        return pending

    def _unused_givens(self, steps: list[Step]) -> list[str]:
        """What the user gave (see `grounding.givens`) that no step's arguments hold yet, each
        in the form it was written. A number counts as held by its value ("8" by "2026-03-08",
        "120" by 120)."""
        held = json.dumps([step.args for step in steps], ensure_ascii=False)
        numbers = {float(n) for n in _DECIMAL.findall(held)}
        return [
            given[0]
            for given in self._givens
            if not any(
                float(form) in numbers
                if _DECIMAL.fullmatch(form) and len(form) < _LONG_NUMBER
                else form in held
                for form in given
            )
        ]

    def _only_again(
        self, name: str, earlier: list[Step], unused: Sequence[Step], failed: Sequence[Step]
    ) -> bool:
        """Whether every call of tool `name` the grounding rules allow is one that failed: each
        required parameter grounded, its one option the failed call's value (extract_invoice
        of the one path the request gives, which is no invoice). Such a tool is not offered."""
        tool = self._tools[name]
        required = tool.parameters.get("required", [])
        props = tool.parameters.get("properties", {})
        for call in failed:
            if call.tool != name:
                continue
            options = {
                param: self._grounds.options(name, param, props.get(param, {}), earlier, unused)
                for param in required
            }
            if required and all(
                grounded is not None
                and len(grounded) == 1
                and grounded[0]
                in (json.dumps(call.args.get(param), ensure_ascii=False), call.args.get(param))
                for param, grounded in options.items()
            ):
                return True
        return False

    def _takes(self, tool: str, given: str) -> bool:
        """Whether tool `tool` has a parameter that can hold `given` (see `grounding.givens`)."""
        for name, schema in self._tools[tool].parameters.get("properties", {}).items():
            kind = value_kind(schema)
            if "@" in given:
                if schema.get("format") == "email":
                    return True
            elif given.startswith("/"):
                if grounding.is_path(name, schema):
                    return True
            elif grounding.NUMERIC.match(given):
                if kind in ("integer", "number", "text"):
                    return True
            elif kind == "text":  # a code
                return True
        return False

    def _available(self, name: str, earlier: list[Step], unused: Sequence[Step]) -> bool:
        """Whether every required parameter of tool `name` that must be grounded (see
        `Grounds.options`) has a value to take. A first step may still write a path freely
        (it must then appear in the request: the request's paths are found by a pattern),
        unless the request gives paths and none fits the parameter's role; an identifier it
        may not."""
        tool = self._tools[name]
        props = tool.parameters.get("properties", {})
        if tool.parameters.get("minProperties") and not tool.parameters.get("required"):
            # one of its optional values at least (lookup_customer: an id or an address)
            grounded = [self._grounds.options(name, p, props[p], earlier, unused) for p in props]
            if all(options == [] for options in grounded):
                return False
        for param in tool.parameters.get("required", []):
            schema = props.get(param, {})
            objects = self._objects(schema)
            if objects is not None and not self._grounds.references(objects, earlier):
                return False  # no earlier result has the fields its objects need
            options = self._grounds.options(name, param, schema, earlier, unused)
            if options is None and self._unheld_code(schema, earlier):
                return False
            path = value_kind(schema) == "text" and not grounding.is_identifier(param, schema)
            if options == [] and (
                earlier
                or not path
                or (name, param) in self._grounds.sources
                or self._grounds.misfits(param, schema)
            ):
                return False
        return True

    def _objects(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """The object schema of a parameter that takes an object or a list of objects (see
        `_value`); None for any other parameter."""
        items = schema.get("items", {}) if json_type(schema) == "array" else schema
        return items if self._objects_by_reference(items) else None

    def _objects_by_reference(self, schema: dict[str, Any]) -> bool:
        return "object-items" not in self._off and json_type(schema) == "object"

    def _step(self, step_id: int, tool: ToolDescriptor, earlier: list[Step]) -> Step:
        props: dict[str, Any] = tool.parameters.get("properties", {})
        # files the request names that nothing has passed yet, for an optional path of a tool
        # that acts (a mail's attachment): given, one of them (`sends-named`)
        deliver = self._deliveries(tool, earlier)
        required = set(tool.parameters.get("required", [])) | set(deliver)
        closings = [")\n", ") after "] if [s for s in earlier if s.id != ITEM] else [")\n"]
        remaining = list(props)
        args: dict[str, Any] = {}
        while True:
            unused = self._unused(earlier, args)
            candidates: list[str] = []
            for name in remaining:
                grounded = deliver.get(name) or self._grounds.options(
                    tool.tool_name, name, props[name], earlier, unused
                )
                if grounded == [] and name not in required:
                    continue  # an optional identifier nothing grounds: left out
                if name not in required and self._grounds.never_stated(props[name]):
                    continue  # an optional number or choice it could never keep: no pass
                candidates.append(name)
                if name in required:
                    break
            can_close = not required.intersection(remaining) and bool(
                args or not tool.parameters.get("minProperties")
            )
            if not candidates and not can_close:
                raise _Ungrounded  # it needs one of its optional values, and none is grounded
            separator = ", " if args else ""
            options = [f"{separator}{name}=" for name in candidates]
            waits = (
                []
                if "write-order" in self._off
                else grounding.writes_before(tool, args, earlier, self._tools)
            )
            ends = closings if not waits else [") after "]
            choice = self._cursor.choose(options + (ends if can_close else []))
            if choice >= len(candidates):
                break
            name = candidates[choice]
            remaining = remaining[remaining.index(name) + 1 :]
            grounded = deliver.get(name) or self._grounds.options(
                tool.tool_name, name, props[name], earlier, unused
            )
            value = self._argument(
                tool,
                name,
                earlier,
                unused,
                grounded=grounded,
                args=args,
                required=name in required,
                delivered=name in deliver,
            )
            if value is not _LEFT_OUT:
                args[name] = value
        closed_after = ends[choice - len(candidates)] == ") after "
        after = self._after(earlier, waits) if closed_after else []
        if "pattern-place" not in self._off:  # a project key written as the words to look for
            args = grounding.placed(tool, args, self._request)
        if "coded-name" not in self._off and (coded := self._takers(tool, args, earlier)):
            self._instead[step_id] = (tool.tool_name, coded)  # chosen again among them
            raise _CodedName  # "cancel A2604417" is no lookup of a patient of that name
        step = Step(id=step_id, tool=tool.tool_name, args=args, after=after)
        if step_id not in self._instead and (rivals := self._rival_lookups(tool, args, earlier)):
            self._instead[step_id] = (tool.tool_name, rivals)
            raise _OtherLookup(step)  # "move Aisha Rahman's next appointment": no doctor's name
        return step

    def _argument(
        self,
        tool: ToolDescriptor,
        name: str,
        earlier: list[Step],
        unused: Sequence[Step],
        *,
        grounded: list[str] | None,
        args: dict[str, Any],
        required: bool,
        delivered: bool = False,
    ) -> Any:
        """The value of `tool`'s parameter `name` after `args`: one of the values `grounded`
        offers where it offers any (`_identifier`; the files to deliver, `delivered`, all of
        them where the parameter is a list), else the model's within its kind (`_value`);
        `_LEFT_OUT` for an optional one (not `required`: by the tool, or as a file it must
        deliver) the request never says or that another argument already is (`cc` the very
        address `to` is: `_repeats`)."""
        schema = tool.parameters["properties"][name]
        if grounded and delivered and value_kind(schema) == "array":
            # every file to deliver, as a list (`_undelivered`): "send both" invoices
            self._cursor.force(f"[{', '.join(grounded)}]")
            return [chosen if chosen.startswith("$") else json.loads(chosen) for chosen in grounded]
        if grounded is not None:
            value = self._identifier(
                name,
                schema,
                earlier,
                grounded,
                sourced=(tool.tool_name, name) in self._grounds.sources,
            )
            return value if required or not _repeats(value, args, schema) else _LEFT_OUT
        value = self._value(
            schema, earlier, unused, body=_body(tool) == name, optional=not required
        )
        if grounding.breaks_pattern(schema, value):
            if required:
                raise _Ungrounded  # a value its tool would refuse ("#" missing)
            return _LEFT_OUT
        if required or not (
            self._grounds.unsaid(schema, value, name) or _repeats(value, args, schema)
        ):
            return value
        return _LEFT_OUT  # an optional number or choice never said

    def _deliveries(self, tool: ToolDescriptor, earlier: list[Step]) -> dict[str, list[str]]:
        """By optional parameter of `tool`, the values it must take one of (`_undelivered`)."""
        required = tool.parameters.get("required", [])
        return {
            name: files
            for name in tool.parameters.get("properties", {})
            if name not in required and (files := self._undelivered(tool, name, earlier))
        }

    def _undelivered(self, tool: ToolDescriptor, name: str, earlier: list[Step]) -> list[str]:
        """The values optional path parameter `name` of `tool`, a tool that acts (a mail's
        attachment; or each of a list of them), must take one of: the files the request names
        that no step has passed yet, documented by path (`Grounds.documented_paths`: "email
        her our courtesy car policy") or pointed to by a field of an earlier result the request
        names (`report_path` and "the report"; `_named_files`), or made by an earlier step that
        acts (the invoice just issued, for "and send it to their billing contact";
        `_made_files`). Empty: the parameter is the model's to give or not (rule
        `sends-named`). Small models mention the attachment in the body and attach nothing."""
        schema = tool.parameters.get("properties", {}).get(name, {})
        items = self._path_items(schema)  # (a list: only files earlier results point to)
        schema = items or schema
        if (
            "sends-named" in self._off
            or grounding.is_lookup(tool)
            or not grounding.is_path(name, schema)
        ):
            return []
        held = json.dumps([step.args for step in earlier], ensure_ascii=False)
        pending = (self._named_files(earlier) | self._made_files(earlier)) - self._files_read(
            earlier
        )
        options = self._grounds.options(tool.tool_name, name, schema, earlier, earlier)
        return [
            option
            for option in options or []
            if (
                not option.startswith("$")
                and items is None
                and json.loads(option) in self._grounds.documented_paths
                and option not in held
            )
            or (
                option.startswith("$")
                and (int(option[1:].split(".", 1)[0]), grounding.last_field(option)) in pending
            )
        ]

    def _after(self, earlier: list[Step], waits: list[int]) -> list[int]:
        """The steps a step is written to run after: `waits` (forced), then those the model
        adds."""
        cursor = self._cursor
        earlier = [step for step in earlier if step.id != ITEM]
        after: list[int] = list(waits)
        if waits:
            cursor.force(", ".join(map(str, waits)))
            if len(after) == len(earlier):
                cursor.force("\n")
                return after
            if cursor.choose(["\n", ", "]) == 0:
                return after
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
        used = {ref.step for step in earlier for ref in references([step.args, step.each])}
        used |= {ref.step for ref in references(args)}
        return [step for step in earlier if step.id not in used]

    def _value(
        self,
        schema: dict[str, Any],
        earlier: list[Step],
        unused: Sequence[Step] = (),
        *,
        body: bool = False,
        optional: bool = False,
    ) -> Any:
        """A value for `schema`; `body`: a text is its tool's last required one (a mail's body,
        not its subject), which cites a file the plan read for the request (`_read_named`);
        `optional`: the parameter may be left out (a code the request does not give is then
        the model's to take from a result or not: `_result_codes`)."""
        cursor = self._cursor
        kind = value_kind(schema)
        if kind == "enum":
            values = schema["enum"]
            return values[cursor.choose([_literal(value) for value in values])]
        if kind == "boolean":
            return cursor.choose(["True", "False"]) == 0
        if schema.get("format") == "email":
            return self._email(schema, earlier)
        if self._objects_by_reference(schema):
            # a structured value (docs_slide_outline's statements) is an earlier result: the
            # compact syntax writes no object, and a path or a name in its place is refused
            found = self._grounds.references(schema, unused or earlier)
            found = found or self._grounds.references(schema, earlier)
            if not found:
                raise _Ungrounded
            return "$" + found[cursor.choose([f"${ref}" for ref in found])]
        floor = schema.get("minimum", schema.get("exclusiveMinimum"))
        numeric = [*"0123456789"] + (["-"] if floor is None or floor < 0 else [])
        starts = {"integer": numeric, "number": numeric, "array": ["["]}
        literal = starts.get(kind, ['"'])
        # Several results to deliver in one text parameter: a text citing each, not one whole.
        cites_all = "{$" in schema.get("description", "") and len(unused) > 1
        references = [] if cites_all else self._references(schema, earlier, unused)
        if kind == "text" and not optional and (coded := self._result_codes(schema, earlier)):
            return "$" + coded[cursor.choose([f"${ref}" for ref in coded])]
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
        spans = [] if "schema" in self._off else self._spelled(schema)
        if kind == "text" and spans:
            # a value the pattern constrains, and the request spells: one of those spans
            return spans[cursor.choose([_literal(span)[1:] for span in spans])]
        if kind == "text":
            # A parameter documented to embed results ("{$N.field}") carries every result that
            # nothing else uses: a static plan has no other way to deliver them.
            if grounding.is_template(schema):  # its braces are the tool's placeholders: "{name}"
                text = self._text([], ())
            else:
                cites = "{$" in schema.get("description", "")
                must = unused if cites else self._read_named(earlier, unused) if body else ()
                text = self._text(earlier, must)
            if text.startswith("/") and text not in self._request:
                raise _Ungrounded  # an absolute path the user never gave: invented
            if any(a not in self._grounds.emails for a in grounding.EMAIL.findall(text)):
                raise _Ungrounded  # an address the user never gave (a result's text may ask)
            return text
        if kind == "code3" and (codes := grounding.standard_codes(schema)):
            return codes[cursor.choose([f'{code}"' for code in codes])]
        if kind == "date":
            # The dates the request names, written out ("tomorrow (2026-03-03)"): one pass
            # or none. A request that names none: one choice among real calendar dates, "20"
            # and the dashes forced, ~5 passes (Qwen writes one digit a token).
            named = [] if "named-dates" in self._off else self._grounds.named_dates
            days = named or self._grounds.dates
            return days[cursor.choose([f'{day}"' for day in days])]
        text, _ = cursor.sample(kind, b'"', _SHORT_TOKENS)
        cursor.force('"')
        return text

    def _unheld_code(self, schema: dict[str, Any], earlier: list[Step]) -> bool:
        """Whether `schema` takes a code (a pattern that starts with literal text) that no
        word of the request is and no earlier result holds: a tool that needs one is not
        offered (rule `code-sources`; a deposit's `^TCY-` tenancy for "27 Redland Grove":
        the tenancy is found first)."""
        if "code-sources" in self._off or value_kind(schema) != "text":
            return False
        return self._ungiven_code(schema) and not self._grounds.coded_references(schema, earlier)

    def _ungiven_code(self, schema: dict[str, Any]) -> bool:
        """Whether `schema` takes a code (a pattern that starts with literal text) that no
        word of the request is (`_spelled`)."""
        return literal_start(schema) is not None and not self._spelled(schema)

    def _spelled(self, schema: dict[str, Any]) -> list[str]:
        """The words of the request (or its phone numbers, in the form asked for) that a
        parameter's selective pattern takes (`grounding.spans_matching`)."""
        phones = "phone-forms" not in self._off
        codes = self._grounds.calling_codes
        return grounding.spans_matching(self._request, schema, phones=phones, codes=codes)

    def _result_codes(self, schema: dict[str, Any], earlier: list[Step]) -> list[str]:
        """For a required code (a pattern that starts with literal text: `^TCY-`, `^\\+`) that
        no word of the request is, the earlier results' fields of that kind of code, if any:
        the value is one of them (rule `result-codes`). Written out instead, it is a code the
        model makes up, or one of the request's other codes: "PRP-15508" for a tenancy's
        `^TCY-`, which its tool would refuse. (An optional one stays the model's to give or
        not: the first customer's phone is no filter for the second's search.)"""
        if "result-codes" in self._off or not self._ungiven_code(schema):
            return []
        return self._grounds.coded_references(schema, earlier)

    def _references(
        self, schema: dict[str, Any], earlier: list[Step], unused: Sequence[Step]
    ) -> list[str]:
        """The results a value of `schema` may be: those holding its kind of code where any
        does (`Grounds.coded_references`, list items too), else those of `unused` steps where
        any fits, else any earlier one; for a text, no one item of a list (the text embeds
        them)."""
        grounds = self._grounds
        if coded := grounds.coded_references(schema, earlier):
            return coded  # a code: one item's (the first patient's phone) is the value
        references = grounds.references(schema, unused or earlier)
        references = references or grounds.references(schema, earlier)
        if value_kind(schema) == "text":
            references = [ref for ref in references if not _indexed(ref)]
        return references

    def _text(self, earlier: list[Step], must_use: Sequence[Step]) -> str:
        """Free text, in which each embedded reference (`{$N.path}`) the model opens is
        completed from earlier steps' result fields. Where the model would close the text
        before citing a step of `must_use`, a reference to that step is opened for it."""
        cursor = self._cursor
        # a path to a file the request names, and a step has read, is cited by its text
        read = self._named_files(earlier) & self._files_read(earlier)
        embeddable = [
            f"{step_ref(step.id)}{path}}}" for step in earlier for path in self._cited(step, read)
        ]
        pending = list(must_use)
        text = ""
        for _ in range(_MAX_REFERENCES + len(pending) + 1):
            ends = [end[len(text) :] for end in self._quote_ends if end.startswith(text)]
            chunk, opened = cursor.sample(
                "text", b'"', _TEXT_TOKENS, openers=bool(embeddable), ends=ends
            )
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
                name = step_ref(step.id)
                fields = [path for path in self._cited(step, read) if path]
                options = [f"{name}{path}}}" for path in fields or [""]]
                opening = " {$" if text and not text.endswith(" ") else "{$"
                cursor.force(opening)
                text += opening + options[cursor.choose(options)]
            else:
                break
        cursor.force('"')
        # The step-over-a-list hint after the request, copied into a text as if it were the
        # user's words ("for each item in 1.list: read_file(path={$1.name})"): not the text's.
        return " ".join(_PLAN_SYNTAX.sub(" ", text).split()) if FOR_EACH in text else text

    def _paths(self, step: Step) -> list[str]:
        return ["", *field_paths(self._grounds.returns(step))]

    def _cited(self, step: Step, read: set[tuple[int, str]]) -> list[str]:
        """The paths of `step`'s result a text may cite (`_paths`), but for the paths to files
        the request names that a step read (`read`: (step id, field name)), and the paths
        that step read them by: its text is cited instead (rule `named-file`)."""
        paths = self._paths(step)
        if self._files_read([step]) & read:  # the read itself: its text, not its path again
            return [path for path in paths if path and not grounding.PATH_FIELD.search(path)]
        return [path for path in paths if (step.id, path.rsplit(".", 1)[-1]) not in read]

    def _email(self, schema: dict[str, Any], earlier: list[Step]) -> str:
        """An address the request names or an earlier result holds (list items too): a small
        model invents addresses ("your_email@example.com") for emails nobody asked to send."""
        options = self._grounds.options("", "", schema, earlier, earlier) or []
        if not options:
            raise _Ungrounded
        chosen = options[self._cursor.choose(options)]
        return chosen.strip('"')

    def _identifier(
        self,
        name: str,
        schema: dict[str, Any],
        earlier: list[Step],
        options: list[str],
        *,
        sourced: bool,
    ) -> Any:
        """One of `options` (see `_grounded`). Without any, an identifier or a path is written
        freely but must appear in the request (an identifier is not an email address); a
        sourced value cannot be had."""
        if options:
            chosen = options[self._cursor.choose(options)]
            return chosen if chosen.startswith("$") else json.loads(chosen)
        if sourced or schema.get("format") == "email":
            raise _Ungrounded
        text = self._value(schema, earlier)  # a path on the first step (see `_available`)
        if not isinstance(text, str) or "@" in text or text not in self._request:
            if grounding.is_path(name, schema):
                raise _InventedPath  # a file the user never named
            raise _Ungrounded  # a value the user never gave: invented
        if "path-roles" not in self._off and not grounding.fits_role(name, schema, text):
            raise _Ungrounded  # a file's name where a folder is asked for, or the like
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


_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_LONG_NUMBER = 8  # digits of a number held as written, not by value (a phone's "7700900123")


def _body(tool: ToolDescriptor) -> str | None:
    """The last of a tool's required free-text parameters (a mail's `body`, after `subject`)."""
    props = tool.parameters.get("properties", {})
    required = tool.parameters.get("required", [])
    texts = [name for name in props if name in required and grounding.free_text(props[name])]
    return texts[-1] if texts else None


def _made(tool: str, earlier: Sequence[Step]) -> Step:
    """A call of `tool` after `earlier`, its arguments left out: what its result makes
    possible (`PlanDecoder._reach`)."""
    return Step(id=max((step.id for step in earlier), default=0) + 1, tool=tool)


def _kind(given: str) -> str:
    """What kind of value the user gave (`grounding.givens`): an address, a path, a number, or a
    code or quoted text."""
    if "@" in given:
        return "address"
    if given.startswith("/"):
        return "path"
    return "number" if grounding.NUMERIC.match(given) else "text"


_PLAN_SYNTAX = re.compile(re.escape(FOR_EACH) + r"\$?[\w.]+:\s*\w+\([^)]*\)?")


def _values(steps: Sequence[Step]) -> str:
    """The values of `steps`' arguments (not their parameters' names), one a line."""
    return "\n".join(leaf for step in steps for leaf in _leaves(step.args))


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [str(value)]


def _holds(values: str, name: str) -> bool:
    """Whether `values` (see `_values`) say `name`, a capitalised name, as written and as a
    word of its own: "Nice" is not said by "a nice hotel", nor "Max" by `max_price`."""
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", values) is not None


def _indexed(reference: str) -> bool:
    """Whether a reference (`1.files.0`) points at one item of a list."""
    return any(segment.isdigit() for segment in reference.split(".")[1:])


def _repeats(value: Any, args: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether `value`, of `schema`, is a text another argument of the call already is: an
    optional `previous=$1.value` beside `value=$1.value` passes the same result twice, `cc`
    beside `to` the same address, a `negotiator` the applicant's own name. Not a day or a time
    of day: a range's two ends may be one (`date_from` and `date_to` of a one-day list)."""
    return (
        isinstance(value, str)
        and bool(value)
        and value in args.values()
        and value_kind(schema) not in ("date", "hhmm")
    )


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
