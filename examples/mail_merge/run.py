"""Flagship 4, mail-merge with approval: customer rows from PostgreSQL -> one personalised
mail each. When the list is longer than `[packs.mail] approval_over`, the mail-merge step
waits for a person's approval (journaled) before anything is sent.

    python -m examples.mail_merge.run [--work DIR] [--postgres URL] [--smtp HOST:PORT]
                                      [--approval-over N] [--customers N] [--approve]
                                      [--crm-database NAME] [--resume]

--postgres: a server where the example may create the database `ember_example_crm` (or
--crm-database; default
$EMBER_TEST_POSTGRES_URL, else postgresql://postgres@127.0.0.1:5432/postgres). Without --smtp
the mails go to the Maildir outbox WORK/outbox. --approve: play the person who approves (as
`ember runs resolve RUN 2 --approve` would), then resume the waiting run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import date, timedelta
from pathlib import Path

from ember.app import open_runtime
from ember.journal import Decision
from examples.runner import Flagship, main_args

REQUEST = next(iter(json.loads((Path(__file__).parent / "plan.json").read_text())))
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
PLANS = ["Starter", "Team", "Business"]


def seed_crm(server_url: str, database: str, customers: int) -> str:
    """(Re)create `database` on the server with `customers` customers renewing in March 2026
    and a few renewing later; its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}"')
        admin.execute(f'CREATE DATABASE "{database}"')
    url = server_url.rsplit("/", 1)[0] + f"/{database}"
    with psycopg.connect(url) as db:
        db.execute(
            "CREATE TABLE customers(id serial PRIMARY KEY, name text NOT NULL, email text NOT "
            "NULL, plan text NOT NULL, renewal_date date NOT NULL)"
        )
        for i in range(customers + 3):
            renews = date(2026, 3, 1) + timedelta(days=i if i < customers else 40 + i)
            db.execute(
                "INSERT INTO customers(name, email, plan, renewal_date) VALUES (%s,%s,%s,%s)",
                (f"Customer {i + 1:02d}", f"customer{i + 1:02d}@example.com",
                 PLANS[i % 3], renews),
            )  # fmt: skip
    return url


def drop_crm(server_url: str, database: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def flagship(work: Path, crm_url: str, smtp: str | None, approval_over: int) -> Flagship:
    work.mkdir(parents=True, exist_ok=True)
    packs = f'[packs.sql]\ndatabases = {{ crm = "{crm_url}" }}\n'
    packs += f'[packs.mail]\noutbox = "{work / "outbox"}"\napproval_over = {approval_over}\n'
    packs += 'sender = "accounts@example.com"\n'
    if smtp:
        host, port = smtp.rsplit(":", 1)
        packs += f'host = "{host}"\nport = {port}\nsecurity = "none"\n'
    return Flagship("mail_merge", REQUEST, packs, work.resolve())


def approve(run: Flagship, run_id: str) -> None:
    """What `ember runs resolve RUN 2 --approve` records."""

    async def main() -> None:
        async with open_runtime(run.settings()) as runtime:
            await runtime.resolve(run_id, 2, Decision.APPROVE)  # as the local OS user

    asyncio.run(main())


def _option(name: str, default: str | None) -> str | None:
    if name not in sys.argv:
        return default
    at = sys.argv.index(name)
    value = sys.argv[at + 1]
    del sys.argv[at : at + 2]
    return value


def main() -> int:
    server = _option("--postgres", os.environ.get("EMBER_TEST_POSTGRES_URL", DEFAULT_URL))
    smtp = _option("--smtp", None)
    approval_over = int(_option("--approval-over", "5") or 5)
    customers = int(_option("--customers", "8") or 8)
    database = _option("--crm-database", "ember_example_crm") or "ember_example_crm"
    approve_it = "--approve" in sys.argv and not sys.argv.remove("--approve")
    args = main_args(__doc__.splitlines()[0], "ember-examples/mail_merge")
    server = server or DEFAULT_URL
    crm = server.rsplit("/", 1)[0] + f"/{database}"
    if not args.resume:
        seed_crm(server, database, customers)
    run = flagship(Path(args.work), crm, smtp, approval_over)
    run.planner = args.planner
    result = run.run(resume=args.resume)
    if result.status.value == "waiting" and approve_it:
        print(f"step 2 waits for approval: {result.error}\napproving it, then resuming")
        approve(run, result.run_id)
        result = run.run(resume=True)
    merge = next((s.result for s in result.steps if s.tool == "mail_merge" and s.result), {})
    return run.report(result, {"sent": merge.get("sent", 0)}, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
