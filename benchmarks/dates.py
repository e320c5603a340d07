"""Dates in requests: the hand-written rules of `ember.planner.dates` against the libraries that
could replace them (dateparser, parsedatetime, python-dateutil) and against the rules they
replaced, on the phrases of tests/test_dates.py: how many each reads right, and what a request
costs (the first call in a fresh process, import included, and then per request).

    python -m benchmarks.dates [--repeat 20] [--requests ../shared/planner-tasks/dev.jsonl]

With --requests (JSON lines with "request" and "today", as the planner's task sets), each
candidate is also timed on those whole requests, as the planner's hot path sees them.

A phrase is read right when the dates a candidate would write for it are the ones it names;
for a date written in full, writing nothing (leaving it as written) is right too. A library is
given today as its base and asked to prefer the future, and its every date found is counted.
A candidate that is not installed is skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from datetime import date, datetime
from datetime import time as clock

Reader = Callable[[str, date], list[date]]
BEFORE = "9757749"  # the commit whose src/ember/planner/dates.py these rules replaced
PROTECTED = [
    'Reply "see you tomorrow" to Ann',
    "Open /home/ann/tomorrow/notes.md",
    "Close C-2041 and INV-2026-03",
    "Mail friday.tomorrow@example.com",
]
_ISO = re.compile(r" \((\d{4}-\d{2}-\d{2})\)")


def rows() -> list[tuple[date, str, str | None, bool]]:
    """(today, request, the date it names, whether it is written in full); the issue's five
    first."""
    from tests.test_dates import MONDAY, TABLE

    table = [
        (date.fromisoformat(today), marked.replace("|", ""), iso, "|" not in marked)
        for today, marked, iso in TABLE
    ]
    return table + [(MONDAY, text, None, True) for text in PROTECTED]


def right(found: list[date], iso: str | None, written: bool) -> bool:
    named = [] if iso is None else [date.fromisoformat(iso)]
    return found == named or (written and not found)


def annotations(annotate: Callable[[str, date], str]) -> Reader:
    """A reader of the dates an annotating function writes."""

    def read(text: str, today: date) -> list[date]:
        added = _ISO.findall(annotate(text, today))[len(_ISO.findall(text)) :]
        return [date.fromisoformat(iso) for iso in added]

    return read


def ember() -> Reader:
    from ember.planner.dates import annotate_dates

    return annotations(annotate_dates)


def before() -> Reader:
    source = subprocess.run(
        ["git", "show", f"{BEFORE}:src/ember/planner/dates.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("dates_before")
    exec(compile(source, "dates_before.py", "exec"), module.__dict__)
    return annotations(module.annotate_dates)


def dateparser_reader() -> Reader:
    from dateparser.search import search_dates

    def read(text: str, today: date) -> list[date]:
        base = datetime.combine(today, clock(12))
        settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "future"}
        found = search_dates(text, languages=["en", "zh"], settings=settings) or []
        return [when.date() for _, when in found]

    return read


def parsedatetime_reader() -> Reader:
    import parsedatetime

    calendar = parsedatetime.Calendar(version=parsedatetime.VERSION_CONTEXT_STYLE)

    def read(text: str, today: date) -> list[date]:
        found = calendar.nlp(text, sourceTime=datetime.combine(today, clock(12))) or ()
        return [when.date() for when, *_ in found]

    return read


def dateutil_reader() -> Reader:
    from dateutil import parser

    def read(text: str, today: date) -> list[date]:
        try:
            return [parser.parse(text, fuzzy=True, default=datetime.combine(today, clock())).date()]
        except (ValueError, OverflowError):
            return []

    return read


CANDIDATES: dict[str, Callable[[], Reader]] = {
    "ember.planner.dates (hand-written, now)": ember,
    f"before (hand-written, {BEFORE})": before,
    "dateparser search_dates": dateparser_reader,
    "parsedatetime nlp": parsedatetime_reader,
    "python-dateutil parse(fuzzy)": dateutil_reader,
}


def first_call(name: str) -> tuple[float, float]:
    """Seconds a fresh interpreter that has imported ember.planner, as the planner's process
    has, takes to import `name`'s reader, then to answer once."""
    code = (
        "import time, datetime, ember.planner; from benchmarks.dates import CANDIDATES; "
        f"t = time.perf_counter(); read = CANDIDATES[{name!r}](); "
        "u = time.perf_counter(); read('on Tuesday next week', datetime.date(2024, 5, 15)); "
        "print(u - t, time.perf_counter() - u)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported, first = out.stdout.split()[-2:]
    return float(imported), float(first)


def timed(read: Reader, requests: list[tuple[date, str]], repeat: int) -> tuple[float, float]:
    """The median and p99 seconds `read` takes for one of `requests`."""
    samples = []
    for _ in range(repeat):
        for today, text in requests:
            start = time.perf_counter()
            read(text, today)
            samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99)]


def measure(name: str, repeat: int, requests: list[tuple[date, str]]) -> tuple[list[int], str]:
    """The rows `name` reads wrong, and its timing cells."""
    read = CANDIDATES[name]()
    table = rows()
    wrong = [
        i for i, (day, text, iso, full) in enumerate(table) if not right(read(text, day), iso, full)
    ]
    median, p99 = timed(read, [(today, text) for today, text, _, _ in table], repeat)
    imported, first = first_call(name)
    cells = [f"{imported * 1000:.0f} ms", f"{first * 1000:.1f} ms"]
    cells += [f"{median * 1e6:.0f} us", f"{p99 * 1e6:.0f} us"]
    if requests:
        median, p99 = timed(read, requests, repeat)
        cells += [f"{median * 1e6:.0f} us", f"{p99 * 1e6:.0f} us"]
    return wrong, " | ".join(cells)


def load(path: str | None) -> list[tuple[date, str]]:
    if path is None:
        return []
    with open(path, encoding="utf-8") as lines:
        tasks = [json.loads(line) for line in lines if line.strip()]
    return [(date.fromisoformat(task["today"]), task["request"]) for task in tasks]


def score(wrong: list[int]) -> str:
    """Read right: all rows, the Chinese ones, the issue's five."""
    texts = [text for _, text, _, _ in rows()]
    chinese = {i for i, text in enumerate(texts) if re.search("[\u4e00-\u9fff]", text)}
    cells = [set(range(len(texts))), chinese, set(range(5))]
    return " | ".join(f"{len(part - set(wrong))}/{len(part)}" for part in cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="passes over the table to time")
    parser.add_argument("--requests", help="JSON lines of whole requests to time as well")
    parser.add_argument("--wrong", action="store_true", help="list each candidate's misses")
    args = parser.parse_args()
    requests = load(args.requests)
    head = (
        "| reader | read right | Chinese | the issue's | import | first call | per phrase | p99 |"
    )
    print(head + (" per request | p99 |" if requests else ""))
    print("|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if requests else ""))
    misses: dict[str, list[int]] = {}
    for name in CANDIDATES:
        try:
            wrong, cells = measure(name, args.repeat, requests)
        except (ImportError, OSError, subprocess.CalledProcessError) as error:
            print(f"| {name} | skipped: {error} |")
            continue
        misses[name] = wrong
        print(f"| {name} | {score(wrong)} | {cells} |")
    if args.wrong:
        table = rows()
        for name, wrong in misses.items():
            named = [f"{table[i][1]} ({table[i][0]})" for i in wrong]
            print(f"\n{name}: {len(wrong)} wrong: " + "; ".join(named))


if __name__ == "__main__":
    main()
