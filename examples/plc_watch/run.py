"""Flagship 3, PLC watch: a durable loop reads a simulated line's oven temperature over Modbus
TCP (pymodbus's own server, on loopback) every second and mails an alert when it goes past
the threshold. Killed and resumed mid-loop (`--resume`), it goes on from the journal: readings
already made are not made again, the waits keep their deadlines, and no alert is sent twice.

    python -m examples.plc_watch.run [--work DIR] [--plc HOST:PORT] [--smtp HOST:PORT]

Without --plc it starts the simulated line itself; without --smtp alerts go to the Maildir
outbox WORK/outbox. The plan is two steps: `plc_watch` reads the register every second, at
most 8 times, until it goes above 80 (a restarted watch keeps its schedule, counted from when
it first started, and makes no reading late), then `mail_alert` mails the reading if it is
above the threshold, once: the step's idempotency key is the mail's Message-ID.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from examples.fixtures import SimulatedLine
from examples.runner import Flagship, main_args

REQUEST = next(iter(json.loads((Path(__file__).parent / "plan.json").read_text())))


def flagship(work: Path, plc: str, smtp: str | None) -> Flagship:
    work.mkdir(parents=True, exist_ok=True)
    host, port = plc.rsplit(":", 1)
    packs = f'[packs.plc]\nhost = "{host}"\nport = {port}\ntimeout_s = 1\nretries = 1\n'
    packs += f'[packs.mail]\noutbox = "{work / "outbox"}"\nsender = "line-1@example.com"\n'
    if smtp:
        smtp_host, smtp_port = smtp.rsplit(":", 1)
        packs += f'host = "{smtp_host}"\nport = {smtp_port}\nsecurity = "none"\n'
    return Flagship("plc_watch", REQUEST, packs, work.resolve())


def _option(name: str) -> str | None:
    if name not in sys.argv:
        return None
    at = sys.argv.index(name)
    value = sys.argv[at + 1]
    del sys.argv[at : at + 2]
    return value


def main() -> int:
    plc, smtp = _option("--plc"), _option("--smtp")
    args = main_args(__doc__.splitlines()[0], "ember-examples/plc_watch")
    with contextlib.ExitStack() as stack:
        if plc is None:
            line = stack.enter_context(SimulatedLine())
            plc = f"127.0.0.1:{line.port}"
        run = flagship(Path(args.work), plc, smtp)
        run.planner = args.planner
        result = run.run(resume=args.resume)
    watch = next((s.result for s in result.steps if s.tool == "plc_watch"), None)
    alerts = [s.id for s in result.steps if s.tool == "mail_alert" and (s.result or {}).get("sent")]
    return run.report(result, {"watch": watch, "alert sent by step": alerts}, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
