"""Peer adapters: the same workloads in LangGraph and DBOS (the `bench` extra installs them).

Each returns per-operation samples in seconds, like benchmarks.contenders; a peer that is not
installed raises ImportError, and the runner reports the row as skipped with that message.
"""

from __future__ import annotations

import asyncio
import operator
import tempfile
import time
from pathlib import Path
from typing import Annotated, TypedDict

Samples = list[float]


class _State(TypedDict):
    x: int


class _Fan(TypedDict):
    done: Annotated[list[int], operator.add]


def langgraph_chain_step(n: int, *, steps: int = 20) -> Samples:
    """A LangGraph StateGraph of `steps` plain nodes (no checkpointer), per node."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(_State)
    for i in range(steps):
        graph.add_node(f"n{i}", lambda state: {"x": state["x"] + 1})
    graph.add_edge(START, "n0")
    for i in range(steps - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge(f"n{steps - 1}", END)
    app = graph.compile()
    samples = []
    for _ in range(max(1, n // steps)):
        start = time.perf_counter()
        assert app.invoke({"x": 0})["x"] == steps
        samples.append((time.perf_counter() - start) / steps)
    return samples


def langgraph_fanout(n: int, *, width: int = 10, seconds: float = 0.05) -> Samples:
    """A LangGraph graph of `width` parallel async nodes of 50 ms each (ainvoke), per run."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(_Fan)
    for i in range(width):

        async def node(state: _Fan, i: int = i) -> dict[str, list[int]]:
            await asyncio.sleep(seconds)
            return {"done": [i]}

        graph.add_node(f"f{i}", node)
        graph.add_edge(START, f"f{i}")
        graph.add_edge(f"f{i}", END)
    app = graph.compile()

    async def once() -> float:
        start = time.perf_counter()
        assert len((await app.ainvoke({"done": []}))["done"]) == width
        return time.perf_counter() - start

    return [asyncio.run(once()) for _ in range(max(1, n))]


def dbos_chain_step(n: int, *, steps: int = 20) -> Samples:
    """A DBOS workflow of `steps` steps, durable in SQLite (as shipped), per step."""
    from dbos import DBOS

    with tempfile.TemporaryDirectory() as tmp:
        DBOS(
            config={
                "name": "ember-bench",
                "system_database_url": f"sqlite:///{Path(tmp) / 'dbos.sqlite'}",
                "log_level": "ERROR",
            }
        )

        @DBOS.step()
        def inc(x: int) -> int:
            return x + 1

        @DBOS.workflow()
        def chain() -> int:
            x = 0
            for _ in range(steps):
                x = inc(x)
            return x

        DBOS.launch()
        samples = []
        try:
            for _ in range(max(1, n // steps)):
                start = time.perf_counter()
                assert chain() == steps
                samples.append((time.perf_counter() - start) / steps)
        finally:
            DBOS.destroy()
    return samples
