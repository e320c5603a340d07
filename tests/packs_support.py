"""What the pack tests share: run steps through a real Runtime and SQLite journal (so a tool's
error is seen as it is recorded on the step), and an SMTP server on loopback (aiosmtpd)."""

from __future__ import annotations

import asyncio
import email
import email.policy
from email.message import Message
from pathlib import Path
from typing import Any

from examples.fixtures import free_port

from ember import Plan, Runtime, ScriptedPlanner, SQLiteJournal, Step, ToolRegistry
from ember.config import Packs
from ember.journal import StepState, fold
from ember.tools.packs import register_packs


def packs_registry(packs: Packs, tmp_path: Path) -> ToolRegistry:
    registry = ToolRegistry()
    register_packs(registry, packs, data_dir=tmp_path / "data")
    return registry


def recorded_steps(
    registry: ToolRegistry, steps: list[Step], tmp_path: Path
) -> dict[int, StepState]:
    """Run `steps` as one plan; the steps as the journal recorded them."""
    journal = SQLiteJournal(tmp_path / "journal.db")
    try:
        with Runtime(registry, ScriptedPlanner({"task": Plan(steps)}), journal) as runtime:
            result = asyncio.run(runtime.run("task"))
        return fold(result.run_id, journal.read(result.run_id)).steps
    finally:
        journal.close()


def failure(registry: ToolRegistry, tool: str, args: dict[str, Any], tmp_path: Path) -> str:
    """The error recorded on a one-step plan calling `tool`, which must have failed."""
    step = recorded_steps(registry, [Step(1, tool, args)], tmp_path)[1]
    assert step.status.value == "failed", step
    assert step.error
    return step.error


class SmtpSink:
    """An SMTP server on loopback that keeps what it accepts; it refuses the recipients in
    `refuse` (550) and messages whose subject contains "REJECT" (554)."""

    def __init__(self, refuse: tuple[str, ...] = (), **options: Any) -> None:
        from aiosmtpd.controller import Controller

        self.refuse = refuse
        self.messages: list[Message] = []
        self.port = free_port()
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port, **options)

    def __enter__(self) -> SmtpSink:
        self.controller.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.controller.stop()

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: Any
    ) -> str:
        if address in self.refuse:
            return "550 5.1.1 no such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        if "REJECT" in (message["Subject"] or ""):
            return "554 5.7.1 message refused by policy"
        self.messages.append(message)
        return "250 OK"

    def message_ids(self) -> list[str]:
        return [str(m["Message-ID"]) for m in self.messages]


def wait_for(condition: Any, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


__all__ = ["SmtpSink", "failure", "packs_registry", "recorded_steps", "wait_for"]
_ = asyncio
