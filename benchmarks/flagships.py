"""The flagship workflows of examples/ end to end: each run's L1-L4, in one process, a fresh
work folder per run, planned by the scripted planner (the flagship's plan.json) or by the
embedded model (`planner="llama"`: all four since 2026-12-04)."""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from pathlib import Path

KEYS = ("l1_ttft", "l1_plan", "l2_overhead", "l3_persist", "l4_e2e")
Samples = list[float]


def flagship_layers(n: int, *, name: str, planner: str = "scripted") -> dict[str, Samples]:
    series: dict[str, Samples] = {key: [] for key in KEYS}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        build = _builder(name, stack)
        for index in range(max(1, n)):
            run = build(Path(tmp) / str(index))
            run.planner = planner
            result = run.run()
            if result.status.value != "succeeded":
                raise RuntimeError(f"{name}: run {result.run_id} {result.status}: {result.error}")
            for key in KEYS:
                series[key].append(result.latency_ms[key] / 1000)
    return series


def _builder(name: str, stack: contextlib.ExitStack):  # type: ignore[no-untyped-def]
    if name == "competitors":
        from examples.competitors.run import flagship as competitors

        return competitors
    if name == "invoices":
        from examples.invoices.run import flagship as invoices

        return invoices
    if name == "plc_watch":
        from examples.fixtures import SimulatedLine
        from examples.plc_watch.run import flagship as watch

        line = stack.enter_context(SimulatedLine())
        return lambda work: watch(work, f"127.0.0.1:{line.port}", None)
    from examples.mail_merge.run import DEFAULT_URL, drop_crm, seed_crm
    from examples.mail_merge.run import flagship as merge

    server = os.environ.get("EMBER_TEST_POSTGRES_URL", DEFAULT_URL)
    database = f"ember_bench_{uuid.uuid4().hex[:8]}"
    crm = seed_crm(server, database, 8)
    stack.callback(drop_crm, server, database)
    return lambda work: merge(work, crm, None, approval_over=100)
