"""Peer adapters: the same workloads in LangGraph, DBOS and pydantic-ai (the `bench` extra
installs them).

Each returns per-operation samples in seconds, like benchmarks.contenders; a peer that is not
installed raises ImportError, and the runner reports the row as skipped with that message.
"""

from __future__ import annotations

import asyncio
import operator
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

Samples = list[float]


class _State(TypedDict):
    x: int


class _Fan(TypedDict):
    done: Annotated[list[int], operator.add]


def langgraph_chain_step(n: int, *, steps: int = 20, durability: str | None = None) -> Samples:
    """A LangGraph StateGraph of `steps` plain nodes, per node: no checkpointer, or with
    `durability` ("sync" or "async") a SqliteSaver on a local file (WAL, as shipped)."""
    import sqlite3

    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(_State)
    for i in range(steps):
        graph.add_node(f"n{i}", lambda state: {"x": state["x"] + 1})
    graph.add_edge(START, "n0")
    for i in range(steps - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge(f"n{steps - 1}", END)
    with tempfile.TemporaryDirectory() as tmp:
        options: dict[str, Any] = {}
        if durability:
            from langgraph.checkpoint.sqlite import SqliteSaver

            conn = sqlite3.connect(Path(tmp) / "graph.sqlite", check_same_thread=False)
            app = graph.compile(checkpointer=SqliteSaver(conn))
            options = {"durability": durability}
        else:
            app = graph.compile()
        samples = []
        for run in range(max(1, n // steps)):
            config = {"configurable": {"thread_id": f"t{run}"}}
            start = time.perf_counter()
            assert app.invoke({"x": 0}, config, **options)["x"] == steps
            samples.append((time.perf_counter() - start) / steps)
    return samples


def langgraph_toolnode_step(n: int, *, steps: int = 20) -> Samples:
    """LangGraph's agent loop with messages: a zero-time model node asks for one tool call per
    turn and a ToolNode runs it, `steps` times a run; per tool step."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    @tool
    def inc(x: int) -> int:
        """Add one."""
        return x + 1

    def model(state: Any) -> Any:  # annotations are strings here: LangGraph cannot resolve locals
        made = sum(1 for m in state["messages"] if isinstance(m, AIMessage))
        if made == steps:
            return {"messages": [AIMessage(content="done")]}
        call = {"name": "inc", "args": {"x": made}, "id": f"c{made}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    def route(state: Any) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([inc]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    app = graph.compile()
    samples = []
    for _ in range(max(1, n // steps)):
        start = time.perf_counter()
        out = app.invoke({"messages": [("user", "go")]}, {"recursion_limit": 4 * steps + 10})
        assert out["messages"][-1].content == "done"
        samples.append((time.perf_counter() - start) / steps)
    return samples


def pydantic_ai_chain_step(n: int, *, steps: int = 20) -> Samples:
    """A pydantic-ai Agent whose zero-time FunctionModel asks for one tool call per turn,
    `steps` times a run; per tool step."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        made = sum(
            1
            for m in messages
            if isinstance(m, ModelResponse)
            for part in m.parts
            if isinstance(part, ToolCallPart)
        )
        if made == steps:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("inc", {"x": made}, tool_call_id=f"c{made}")])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    def inc(x: int) -> int:
        return x + 1

    samples = []
    for _ in range(max(1, n // steps)):
        start = time.perf_counter()
        assert agent.run_sync("go").output == "done"
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
