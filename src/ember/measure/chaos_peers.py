"""The peers in `ember chaos`: the same crash test on LangGraph and DBOS workflows, when the
`bench` extra has installed them, so their figures print beside ember's from the same run.

Each peer runs the same chain of `steps` side-effecting steps as ember's crash test, durable
the way the peer ships it: LangGraph's `SqliteSaver` on a local file (durability "async", its
default, and "sync"), DBOS with its SQLite system database. A step's effect is a row in the
effects file, as in ember's test; neither peer hands its steps an idempotency key, so the effect
cannot dedupe: a step run twice is a duplicated effect. Resuming is what each peer documents:
LangGraph invokes the thread again from its last checkpoint; DBOS recovers the pending workflow
when it launches.

This module is also the child process: `python -m ember.measure.chaos_peers ACTION DB EFFECTS
STEPS PEER`, ACTION `work` (print STARTED, run the workflow) or `resume` (continue it; print a JSON
line with the wall time of the first step it ran, or null).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["PEERS", "installed_peers"]

_THREAD = "chaos"

# peer -> (what it is, for reports; the modules it needs)
PEERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "langgraph-async": (
        "LangGraph, SqliteSaver, durability async (its default)",
        ("langgraph", "langgraph.checkpoint.sqlite"),
    ),
    "langgraph-sync": (
        "LangGraph, SqliteSaver, durability sync",
        ("langgraph", "langgraph.checkpoint.sqlite"),
    ),
    "dbos": ("DBOS, SQLite system database (as shipped)", ("dbos",)),
}


def installed_peers() -> list[str]:
    """The peers whose packages are importable here (`pip install -e ".[bench]"`)."""
    return [peer for peer, (_, modules) in PEERS.items() if all(map(_importable, modules))]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


class _Effects:
    """The effect of step n: a row in the effects file; remembers when this process ran its
    first step (the end of the resume time)."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS effects(step INTEGER, idempotency_key TEXT)")
        self.first: float | None = None

    def __call__(self, n: int) -> None:
        if self.first is None:
            self.first = time.time()
        self._db.execute("INSERT INTO effects VALUES (?, NULL)", (n,))


def _langgraph(action: str, db: Path, effects: _Effects, steps: int, durability: str) -> None:
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        n: int

    def node(i: int) -> Callable[[State], State]:
        def run(state: State) -> State:
            effects(i)
            return {"n": i}

        return run

    graph: Any = StateGraph(State)  # (its typing cannot see that a node returns its state)
    for i in range(1, steps + 1):
        graph.add_node(f"s{i}", node(i))
        graph.add_edge(START if i == 1 else f"s{i - 1}", f"s{i}")
    graph.add_edge(f"s{steps}", END)
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    app: Any = graph.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": _THREAD}}
    if action == "work":
        print("STARTED", flush=True)
        app.invoke({"n": 0}, config, durability=durability)
        return
    if saver.get_tuple(config) is None:  # killed before its first checkpoint: start again
        app.invoke({"n": 0}, config, durability=durability)
    else:  # from the last checkpoint (a finished thread runs nothing)
        app.invoke(None, config, durability=durability)


def _dbos(action: str, db: Path, effects: _Effects, steps: int) -> None:
    from dbos import DBOS, SetWorkflowID

    DBOS(
        config={
            "name": "ember-chaos",
            "system_database_url": f"sqlite:///{db}",
            "log_level": "ERROR",
        }
    )

    @DBOS.step()
    def effect(i: int) -> None:
        effects(i)

    @DBOS.workflow()
    def chain(n: int) -> None:
        for i in range(1, n + 1):
            effect(i)

    if action == "work":
        DBOS.launch()
        print("STARTED", flush=True)
        with SetWorkflowID(_THREAD):
            chain(steps)
        return
    DBOS.launch()  # recovers this executor's pending workflows
    if DBOS.get_workflow_status(_THREAD) is None:  # killed before it was recorded
        with SetWorkflowID(_THREAD):
            chain(steps)
    else:
        DBOS.retrieve_workflow(_THREAD).get_result()


def _main(argv: list[str]) -> int:
    action, db, effects_path, steps, peer = argv
    effects = _Effects(Path(effects_path))
    if peer == "dbos":
        _dbos(action, Path(db), effects, int(steps))
    else:
        _langgraph(action, Path(db), effects, int(steps), peer.removeprefix("langgraph-"))
    print(json.dumps({"status": "finished", "in_doubt": [], "first_dispatch": effects.first}))
    sys.stdout.flush()
    os._exit(0)  # skip teardown (DBOS's threads): what matters is written


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
