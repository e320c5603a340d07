"""The plc pack against pymodbus's own Modbus TCP server on loopback (the simulated line),
a server that never answers, and a port where nothing listens."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from examples.fixtures import SimulatedLine, free_port

from ember import Runtime
from ember.config import Packs, PlcPack
from ember.plan import Step
from ember.tools.packs.plc import PlcTools

from .backends import crashed_journal
from .packs_support import failure, packs_registry, recorded_steps


@pytest.fixture(scope="module")
def line() -> Iterator[SimulatedLine]:
    with SimulatedLine() as simulated:
        yield simulated


@pytest.fixture
def silent() -> Iterator[int]:
    """A TCP server that accepts connections and never answers: a Modbus timeout."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


def test_read_and_write_registers_and_coils(line: SimulatedLine) -> None:
    plc = PlcTools(PlcPack(host="127.0.0.1", port=line.port))
    first = plc.plc_read("holding_registers", 0)["values"][0]
    assert plc.plc_read("holding_registers", 0)["values"] == [min(first + 5, 95)]
    assert plc.plc_write("holding_registers", 3, [1200, 7])["written"] == 2
    assert plc.plc_read("holding_registers", 3, count=2)["values"] == [1200, 7]
    plc.plc_write("coils", 2, [1, 0, 1])
    assert plc.plc_read("coils", 2, count=3)["values"] == [1, 0, 1]
    assert plc.plc_read("input_registers", 0, count=2, unit=1)["unit"] == 1


def test_writes_wait_for_approval_unless_configured_low_risk(
    line: SimulatedLine, tmp_path: Path
) -> None:
    write = Step(1, "plc_write", {"kind": "holding_registers", "address": 5, "values": [42]})
    strict = packs_registry(Packs(plc=PlcPack(host="127.0.0.1", port=line.port)), tmp_path / "a")
    assert recorded_steps(strict, [write], tmp_path / "a")[1].status.value == "awaiting_approval"
    plc = PlcTools(PlcPack(host="127.0.0.1", port=line.port))
    assert plc.plc_read("holding_registers", 5)["values"] == [0]  # nothing was written
    loose = PlcPack(host="127.0.0.1", port=line.port, write_risk="low")
    registry = packs_registry(Packs(plc=loose), tmp_path / "b")
    assert recorded_steps(registry, [write], tmp_path / "b")[1].status.value == "succeeded"
    assert plc.plc_read("holding_registers", 5)["values"] == [42]


def test_failures_are_clear_errors_on_the_step(
    line: SimulatedLine, silent: int, tmp_path: Path
) -> None:
    read = {"kind": "holding_registers", "address": 0}
    timing_out = PlcPack(host="127.0.0.1", port=silent, timeout_s=0.3, retries=1)
    error = failure(packs_registry(Packs(plc=timing_out), tmp_path), "plc_read", read,
                    tmp_path / "1")  # fmt: skip
    assert f"PLC 127.0.0.1:{silent} did not answer holding_registers 0..0 of unit 1" in error
    assert "within timeout_s=0.3 after 1 retries" in error
    port = free_port()
    nothing = PlcPack(host="127.0.0.1", port=port, timeout_s=0.3, retries=0)
    error = failure(packs_registry(Packs(plc=nothing), tmp_path), "plc_read", read,
                    tmp_path / "2")  # fmt: skip
    assert f"cannot connect to PLC 127.0.0.1:{port}" in error
    good = packs_registry(Packs(plc=PlcPack(host="127.0.0.1", port=line.port)), tmp_path)
    error = failure(good, "plc_read", {**read, "address": 500}, tmp_path / "3")
    assert "refused holding_registers 500..500 of unit 1: Modbus exception 2" in error
    assert "no such coil or register" in error
    coils = {"kind": "coils", "address": 0, "values": [3]}
    loose = PlcPack(host="127.0.0.1", port=line.port, write_risk="low")
    error = failure(packs_registry(Packs(plc=loose), tmp_path), "plc_write", coils,
                    tmp_path / "4")  # fmt: skip
    assert "coil values must be 0 or 1, got [3]" in error


def test_a_watch_reads_until_the_value_goes_above_its_limit(tmp_path: Path) -> None:
    with SimulatedLine(start=60, step=10) as rising:  # 70, 80, 90, ... one read at a time
        registry = packs_registry(Packs(plc=PlcPack(host="127.0.0.1", port=rising.port)), tmp_path)
        watch = {"kind": "holding_registers", "address": 0, "above": 85, "every_s": 0.1}
        steps = recorded_steps(registry, [Step(1, "plc_watch", {**watch, "readings": 8})], tmp_path)
        assert steps[1].result == {"went_above": True, "value": 90, "count": 3}
        assert rising.reads == 3  # it stopped there
        quiet = recorded_steps(
            registry,
            [Step(1, "plc_watch", {**watch, "above": 1000, "readings": 2})],
            tmp_path / "2",
        )
        assert quiet[1].result == {"went_above": False, "value": 95, "count": 2}
    error = failure(registry, "plc_watch", {**watch, "readings": 10**9}, tmp_path / "3")
    assert "watches for more than a year" in error
    error = failure(
        registry, "plc_watch", {**watch, "readings": 2, "every_s": 0.01}, tmp_path / "4"
    )
    assert "every_s" in error
    port = free_port()  # nothing listens: three readings missed in a row end the watch
    gone = packs_registry(Packs(plc=PlcPack(host="127.0.0.1", port=port, timeout_s=0.3)), tmp_path)
    error = failure(gone, "plc_watch", {**watch, "every_s": 0.1, "readings": 8}, tmp_path / "5")
    assert f"cannot connect to PLC 127.0.0.1:{port}" in error


def test_a_watch_restarted_keeps_its_schedule_and_makes_no_reading_late(tmp_path: Path) -> None:
    """The process restarts 16 s into a watch every 10 s (real time): the reading due at 0 s
    is not made again, the one due at 10 s is made at once, the next at 20 s."""
    watch = {"kind": "holding_registers", "address": 0, "above": 75, "readings": 8, "every_s": 10}
    with SimulatedLine(start=60, step=10) as rising:  # 70, 80, ...
        registry = packs_registry(Packs(plc=PlcPack(host="127.0.0.1", port=rising.port)), tmp_path)
        began = time.time() - 16
        journal = crashed_journal(
            tmp_path / "j.db", [Step(1, "plc_watch", watch)], {}, [1], at=began
        )
        result = asyncio.run(Runtime(registry, None, journal).resume("r-1"))
        journal.close()
        assert rising.reads == 2
    assert result.steps[0].result == {"went_above": True, "value": 80, "count": 3}
    assert time.time() - began >= 20
