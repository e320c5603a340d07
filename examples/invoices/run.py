"""Flagship 2, invoice batch: 100 generated invoice PDFs -> extracted, checked (the totals add
up), booked into a CSV ledger, and a summary. Killed with SIGKILL mid-way and resumed with
`--resume`, every invoice is booked exactly once (tests/test_flagships.py counts it from the
ledger).

    python -m examples.invoices.run [--work DIR] [--count 100] [--resume] [--json]

Why one batch step, not 100 steps: a plan whose steps fan out over a folder of unknown length
needs "steps over lists" (another issue). Until then `docs_invoice_batch` is one idempotent
step that books each invoice at most once by the SHA-256 of its file, so re-running it after
a crash finishes the batch without booking anything twice.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from examples.fixtures import write_invoices
from examples.runner import Flagship, main_args

REQUEST = next(iter(json.loads((Path(__file__).parent / "plan.json").read_text())))


def flagship(work: Path, count: int = 100) -> Flagship:
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "invoices").is_dir():
        write_invoices(work / "invoices", count)
    packs = f'[packs.files]\nroots = ["{work}"]\n[packs.docs]\n'
    return Flagship("invoices", REQUEST, packs, work.resolve())


def ledger_rows(work: Path) -> list[dict[str, str]]:
    with (work / "out" / "ledger.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def main() -> int:
    count = 100
    if "--count" in sys.argv:
        at = sys.argv.index("--count")
        count = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    args = main_args(__doc__.splitlines()[0], "ember-examples/invoices")
    run = flagship(Path(args.work), count)
    run.planner = args.planner
    result = run.run(resume=args.resume)
    rows = ledger_rows(run.work)
    extra = {
        "ledger rows": len(rows),
        "distinct invoices in the ledger": len({row["sha256"] for row in rows}),
        "summary": run.work / "out" / "summary.md",
    }
    return run.report(result, extra, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
