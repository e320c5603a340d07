"""The commands of a cluster on the shared PostgreSQL journal: `ember worker` (claim queued
and orphaned runs, run them under leases) and `ember enqueue` (put a task in the queue)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys

from ember.cli.commands import settings
from ember.errors import UserError

__all__ = ["enqueue", "worker"]


def _url(args: argparse.Namespace) -> str:
    url = settings(args).journal_url
    if not url:
        raise UserError(
            f"ember {args.command} needs the shared journal: --db postgresql://... "
            "(or EMBER_DB); a SQLite journal has no queue"
        )
    return url


def worker(args: argparse.Namespace) -> int:
    """Run claimed runs until SIGTERM/SIGINT (or, `--once`, until the queue is empty)."""
    from ember.app import open_runtime
    from ember.executor.runtime import owner_id
    from ember.journal.leases import Leases
    from ember.journal.postgres import PostgresJournal
    from ember.worker import Worker

    config = settings(args)
    url = _url(args)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        leases = Leases(url, owner_id(), lease_s=args.lease)
        try:
            async with open_runtime(config) as runtime:
                journal = runtime.journal
                assert isinstance(journal, PostgresJournal)
                pool = Worker(runtime, journal, leases, slots=args.slots, poll_s=args.poll)
                print(f"ember worker: {owner_id()} claiming runs", file=sys.stderr, flush=True)
                await pool.serve(stop, once=args.once)
            # the runtime is closed (no tool call of a left run still runs here): hand the
            # runs this worker held over now, not when their leases end
            await pool.give_up()
        finally:
            with contextlib.suppress(Exception):
                await leases.close()
        return 0

    return asyncio.run(main())


def enqueue(args: argparse.Namespace) -> int:
    """Queue a task for the workers; print its run id."""
    from ember.journal.leases import Leases
    from ember.journal.postgres import PostgresJournal
    from ember.policy.control import local_user

    url = _url(args)
    PostgresJournal(url).close()  # the schema, migrated if it is new
    run_id = f"r-{os.urandom(6).hex()}"
    leases = Leases(url, "")

    async def main() -> None:
        await leases.enqueue(run_id, args.task, local_user())
        await leases.close()

    asyncio.run(main())
    print(run_id)
    return 0
