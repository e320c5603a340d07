"""A tool with a side effect that keeps its own log, for the control plane's process tests.

`record(n)` appends `n KEY` to the file `$EMBER_EFFECTS` (fsynced) when it starts, then takes
`$EMBER_EFFECT_SECONDS` (default 0.2 s): the log is the truth of which calls happened, whatever
the journal says. It is idempotent: a call whose key is in the log already is not repeated.
"""

from __future__ import annotations

import os
import time

from ember import tool


@tool(idempotent=True)
def record(n: int, idempotency_key: str = "") -> dict[str, int]:
    """Record effect number n in the effect log, then take a while.

    Args:
        n: The effect's number.
    """
    path = os.environ["EMBER_EFFECTS"]
    with open(path, "a+") as log:
        log.seek(0)
        if idempotency_key and any(line.split()[1:] == [idempotency_key] for line in log):
            return {"n": n}
        log.write(f"{n} {idempotency_key}\n")
        log.flush()
        os.fsync(log.fileno())
    time.sleep(float(os.environ.get("EMBER_EFFECT_SECONDS", "0.2")))
    return {"n": n}
