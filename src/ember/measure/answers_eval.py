"""`ember eval answers`: requests run end to end, with real tool execution, scored on the final
state and the final answer (evals/answers/tasks.jsonl).

Each task runs in a fresh work folder: the demo world (files, customers, orders, hotels,
weather; its 14 tools, the planner task set's catalogue) and, for the `packs` catalogue, the
files, sql and mail packs over the same data (the files pack rooted in the demo's sandbox,
`{root}` in a request; the shop database is the demo's own). A task still running after
`timeout_s` fails. A task passes when every check holds:

- `answer`: each string appears in the run's answer (case folded; a number matches a number
  the answer states, thousands separators and trailing zeros aside);
- `outbox`: for each entry, a sent message to `to` whose text holds each of `contains`;
  `outbox_count`: exactly this many messages sent;
- `effects`: for each entry, a side effect of `tool` whose arguments hold each given value,
  a different one for each entry (one event titled "passport, plumber, Porto" is not three);
- `files`: each path exists (in the sandbox) and holds each given text.

Tasks carry a `split`: `dev`, or `heldout` (kept aside: reported, never tuned on).
"""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import fcntl
import json
import os
import re
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

from ember.config import FilesPack, MailPack, Packs, SqlPack
from ember.errors import UserError
from ember.executor import RunResult, Runtime, StepReport
from ember.journal import SQLiteJournal
from ember.planner.base import Planner
from ember.tools.demo import DemoWorld, demo_registry
from ember.tools.packs import register_packs
from ember.tools.registry import ToolRegistry

__all__ = ["TODAY", "WORK", "check_task", "evaluate_answers", "load_tasks"]

TODAY = date(2026, 3, 2)
_NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")


def load_tasks(path: str | Path) -> list[dict[str, Any]]:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class _Work:
    """One task's world: the demo's data, the tools of its catalogue, where effects land."""

    def __init__(self, root: Path, catalogue: str) -> None:
        self.world = DemoWorld(root / "demo")
        self.data = root / "data"
        if catalogue == "packs":
            self.registry = ToolRegistry()
            packs = Packs(
                files=FilesPack(roots=[str(self.world.sandbox)]),
                sql=SqlPack(databases={"shop": f"sqlite:{root / 'demo' / 'world.db'}"}),
                mail=MailPack(),
            )
            register_packs(self.registry, packs, data_dir=self.data)
        else:
            self.registry = demo_registry(self.world, timers=False)  # the 14 demo tools

    def request(self, text: str) -> str:
        return text.replace("{root}", str(self.world.sandbox))

    def messages(self) -> list[tuple[str, str]]:
        """(recipient, whole text) of every message sent: the demo's outbox, the Maildir's."""
        found = [
            (_header(path.read_text(encoding="utf-8"), "To"), path.read_text(encoding="utf-8"))
            for path in sorted(self.world.outbox.glob("*.eml"))
        ]
        for path in sorted(self.data.glob("**/outbox/new/*")):
            message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            body = message.get_body(("plain",))
            text = body.get_content() if body is not None else ""
            found.append((str(message["To"] or ""), f"{message['Subject']}\n{text}"))
        return found

    def effects(self) -> list[tuple[str, dict[str, Any]]]:
        db = sqlite3.connect(self.world.root / "world.db")
        try:
            rows = db.execute("SELECT tool, args FROM effects ORDER BY rowid").fetchall()
        finally:
            db.close()
        return [(tool, json.loads(args)) for tool, args in rows]


def _header(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(f"{name}: "):
            return line[len(name) + 2 :].strip()
    return ""


def _has(text: str, wanted: str) -> bool:
    """`wanted` in `text`, case folded; a number as a number (1845 in "1,845.00")."""
    if _NUMBER.fullmatch(wanted):
        value = float(wanted.replace(",", ""))
        stated = [float(n.replace(",", "")) for n in _NUMBER.findall(text) if n.strip(",-")]
        return any(abs(n - value) < 0.005 for n in stated)
    return wanted.casefold() in text.casefold()


def check_task(task: dict[str, Any], result: RunResult, work: _Work) -> list[str]:
    """What did not hold (empty: the task passed)."""
    failed = [f"answer lacks {w!r}" for w in task.get("answer", []) if not _has(result.answer, w)]
    messages = work.messages()
    for wanted in task.get("outbox", []):
        if not any(
            wanted["to"].casefold() in to.casefold()
            and all(_has(text, c) for c in wanted.get("contains", []))
            for to, text in messages
        ):
            failed.append(f"no message to {wanted['to']} with {wanted.get('contains', [])}")
    if "outbox_count" in task and len(messages) != task["outbox_count"]:
        failed.append(f"{len(messages)} messages sent, not {task['outbox_count']}")
    wanted = task.get("effects", [])
    for missing in _unmatched(wanted, work.effects()):
        failed.append(f"no {missing['tool']} with {missing['args']}")
    for path, contains in task.get("files", {}).items():
        real = work.world.sandbox / path.lstrip("/")
        if not real.is_file():
            failed.append(f"no file {path}")
        elif not all(_has(real.read_text(encoding="utf-8"), c) for c in contains):
            failed.append(f"{path} lacks {contains}")
    return failed


def _unmatched(
    wanted: list[dict[str, Any]], effects: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The wanted effects left over when each is paired with an effect of its own (a maximum
    matching: a first-come pairing can fail where a right one exists)."""

    def fits(want: dict[str, Any], effect: tuple[str, dict[str, Any]]) -> bool:
        tool, args = effect
        return tool == want["tool"] and all(
            _has(str(args.get(k, "")), str(v)) for k, v in want["args"].items()
        )

    holder: dict[int, int] = {}  # effect index -> the wanted index it is paired with

    def pair(w: int, seen: set[int]) -> bool:
        for e, effect in enumerate(effects):
            if e not in seen and fits(wanted[w], effect):
                seen.add(e)
                if e not in holder or pair(holder[e], seen):
                    holder[e] = w
                    return True
        return False

    paired = {w for w in range(len(wanted)) if pair(w, set())}
    return [want for w, want in enumerate(wanted) if w not in paired]


async def _run(
    task: dict[str, Any], planner: Planner, root: Path, timeout_s: float
) -> dict[str, Any]:
    work = _Work(root, task.get("catalogue", "demo"))
    journal = SQLiteJournal(root / "ember.db")
    started = time.perf_counter()
    try:
        with Runtime(work.registry, planner, journal) as runtime:
            run = runtime.run(work.request(task["request"]), today=TODAY)
            result = await asyncio.wait_for(run, timeout_s)
    except TimeoutError:
        return _timed_out(task, time.perf_counter() - started, timeout_s)
    finally:
        journal.close()
    failed = check_task(task, result, work)
    return {
        "id": task["id"],
        "split": task["split"],
        "kind": task["kind"],
        "passed": not failed,
        "failed": failed,
        "status": result.status.value,
        "steps": [_step(report) for report in result.steps],
        "answer": result.answer[:600],
        "unverified": result.unverified,
        "seconds": round(time.perf_counter() - started, 2),
        "latency_ms": result.latency_ms,
    }


def _step(report: StepReport) -> dict[str, Any]:
    """A step as the task's record shows it: the call as run (or planned), what came of it."""
    shown = {"tool": report.tool, "status": report.status.value, "args": _shorten(report.args)}
    if report.error:
        shown["error"] = report.error[:300]
    return shown


def _shorten(value: Any) -> Any:
    """`value` with every text cut to 120 characters: enough to see which call was made."""
    if isinstance(value, str):
        return value if len(value) <= 120 else value[:119] + "…"
    if isinstance(value, dict):
        return {key: _shorten(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shorten(item) for item in value]
    return value


def _timed_out(task: dict[str, Any], seconds: float, limit: float) -> dict[str, Any]:
    """A run still going after `limit` seconds (a plan that waits, e.g. on a timer) fails."""
    return {
        "id": task["id"],
        "split": task["split"],
        "kind": task["kind"],
        "passed": False,
        "failed": [f"still running after {limit:.0f} s"],
        "status": "timed out",
        "steps": [],
        "answer": "",
        "unverified": [],
        "seconds": round(seconds, 2),
        "latency_ms": {},
    }


async def evaluate_answers(
    planner: Planner,
    tasks: list[dict[str, Any]],
    *,
    progress: Callable[[str], None] = print,
    timeout_s: float = 300.0,
    work: Path | None = None,
) -> dict[str, Any]:
    """Run every task (see the module docstring) in the folder `work` (by default `WORK`, held
    with a lock), emptied before each; the pass rate by split and by kind. A task still running
    after `timeout_s` fails."""
    outcomes = []
    with contextlib.ExitStack() as held:
        root = work if work is not None else held.enter_context(_workplace())
        for index, task in enumerate(tasks, start=1):
            shutil.rmtree(root / "task", ignore_errors=True)
            (root / "task").mkdir(parents=True)
            outcome = await _run(task, planner, root / "task", timeout_s)
            shutil.rmtree(root / "task", ignore_errors=True)
            outcomes.append(outcome)
            mark = "pass" if outcome["passed"] else "FAIL " + "; ".join(outcome["failed"])
            progress(f"  {index}/{len(tasks)} {task['id']} ({outcome['seconds']} s): {mark}")
    return {"tasks": outcomes, **_summary(outcomes)}


# Where tasks run: the same path in every run, because a request that names a path in it
# ({root}) is planned from that text, and a random folder name (ember-answers-52i3l77l)
# changed the plan from one run to the next.
WORK = Path(tempfile.gettempdir()) / "ember-answers"


@contextlib.contextmanager
def _workplace() -> Iterator[Path]:
    """`WORK`, locked for this evaluation: a second one at once is refused, not mixed in. A
    folder there that is a link or another user's is refused too (tasks empty and write it)."""
    WORK.mkdir(mode=0o700, parents=True, exist_ok=True)
    if WORK.is_symlink() or WORK.stat().st_uid != os.getuid():
        raise UserError(
            f"{WORK} is a link or another user's folder: remove it, or run as its owner"
        )
    with (WORK / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"another `ember eval answers` is running in {WORK}: wait for it to finish"
            ) from None
        yield WORK


def _summary(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    def rate(group: list[dict[str, Any]]) -> dict[str, Any]:
        passed = sum(o["passed"] for o in group)
        return {"passed": passed, "n": len(group), "rate": round(passed / len(group), 3)}

    groups: dict[str, dict[str, list[dict[str, Any]]]] = {"split": {}, "kind": {}}
    for outcome in outcomes:
        groups["split"].setdefault(outcome["split"], []).append(outcome)
        groups["kind"].setdefault(outcome["kind"], []).append(outcome)
    seconds = [o["seconds"] for o in outcomes]
    return {
        "all": rate(outcomes) if outcomes else None,
        "by_split": {k: rate(v) for k, v in sorted(groups["split"].items())},
        "by_kind": {k: rate(v) for k, v in sorted(groups["kind"].items())},
        "seconds": {"median": statistics.median(seconds) if seconds else None},
    }


def run_sync(planner: Planner, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """`evaluate_answers` from synchronous code."""
    return asyncio.run(evaluate_answers(planner, tasks))
