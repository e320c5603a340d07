"""Generated inputs for the flagship workflows and their tests: three competitors' financial
statements (CSV, XLSX, PDF), a batch of invoice PDFs, and a simulated production line that
answers Modbus TCP on loopback (pymodbus's own server).

Everything is deterministic: the same call writes the same files.
"""

from __future__ import annotations

import asyncio
import csv
import random
import socket
import threading
from datetime import date, timedelta
from pathlib import Path
from typing import Any

__all__ = ["SimulatedLine", "free_port", "write_invoices", "write_statements"]

STATEMENTS = {
    "Acme Robotics": {
        "currency": "EUR", "Revenue": 1_250_000, "Cost of revenue": 700_000,
        "Operating income": 180_000, "Net income": 120_000, "Cash and cash equivalents": 310_000,
    },
    "Borealis Motion": {
        "currency": "EUR", "Total revenue": 980_000, "Gross profit": 460_000,
        "Operating income": 150_000, "Net income": 98_000, "Cash": 220_000,
    },
    "Cobalt Automation": {
        "currency": "EUR", "Net sales": 1_600_000, "Cost of sales": 1_000_000,
        "Operating profit": 210_000, "Net profit": 150_000, "Cash and cash equivalents": 180_000,
    },
}  # fmt: skip


def _pdf(lines: list[str], path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for line in lines:
        pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def write_statements(folder: Path) -> list[Path]:
    """The three competitors' FY2025 statements: acme.csv, borealis.xlsx, cobalt.pdf."""
    import openpyxl

    folder.mkdir(parents=True, exist_ok=True)
    (acme, borealis, cobalt) = STATEMENTS.items()

    def head(name: str, figures: dict[str, Any]) -> list[list[Any]]:
        return [["Company", name], ["Period", "FY2025"], ["Currency", figures["currency"]]]

    def body(figures: dict[str, Any]) -> list[list[Any]]:
        return [[label, value] for label, value in figures.items() if label != "currency"]

    csv_path = folder / "acme.csv"
    with csv_path.open("w", newline="") as handle:
        csv.writer(handle).writerows([*head(*acme), ["Line item", "Amount"], *body(acme[1])])
    xlsx_path = folder / "borealis.xlsx"
    book = openpyxl.Workbook()
    sheet = book.active
    for row in [*head(*borealis), ["Line item", "Amount"], *body(borealis[1])]:
        sheet.append(row)
    book.save(xlsx_path)
    pdf_path = folder / "cobalt.pdf"
    lines = [f"{label}: {value}" for label, value in head(*cobalt)]
    lines += ["Income statement and balance sheet (EUR)"]
    lines += [f"{label}    {value:,}" for label, value in body(cobalt[1])]
    _pdf(lines, pdf_path)
    return [csv_path, xlsx_path, pdf_path]


VENDORS = ["Nordwind Supplies GmbH", "Atlas Tooling Ltd", "Iberia Components SL", "Polar Parts AB"]
ITEMS = ["Servo motor", "Bearing set", "Control cable 5m", "Sensor bracket", "Hydraulic hose"]


def write_invoices(folder: Path, count: int = 100, *, bad_every: int = 25) -> list[Path]:
    """`count` invoice PDFs (invoice-001.pdf, ...); every `bad_every`-th has a total that does
    not add up, so validation has something to find."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    paths = []
    for number in range(1, count + 1):
        issued = date(2026, 1, 5) + timedelta(days=number % 50)
        lines, subtotal = [], 0.0
        for _ in range(rng.randint(1, 4)):
            quantity, price = rng.randint(1, 9), rng.randint(500, 40_000) / 100
            lines.append(
                f"{rng.choice(ITEMS)}    {quantity}    {price:.2f}    {quantity * price:.2f}"
            )
            subtotal += round(quantity * price, 2)
        tax = round(subtotal * 0.19, 2)
        total = round(subtotal + tax + (10 if number % bad_every == 0 else 0), 2)
        text = [
            "INVOICE", f"Invoice number: INV-2026-{number:04d}",
            f"Vendor: {VENDORS[number % len(VENDORS)]}", f"Invoice date: {issued.isoformat()}",
            f"Due date: {(issued + timedelta(days=30)).isoformat()}", "Currency: EUR", "",
            "Description    Qty    Unit price    Amount", *lines, "",
            f"Subtotal: {subtotal:.2f}", f"VAT 19%: {tax:.2f}", f"Total: {total:.2f}",
        ]  # fmt: skip
        path = folder / f"invoice-{number:03d}.pdf"
        _pdf(text, path)
        paths.append(path)
    return paths


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class SimulatedLine:
    """A production line's PLC on loopback: holding register 0 is the oven temperature, which
    rises by `step` degrees at each read from `start` up to `top`; register 1 and the coils
    hold what is written to them. Runs pymodbus's server in a thread of its own."""

    def __init__(self, port: int | None = None, *, start: int = 60, step: int = 5, top: int = 95):
        self.port = port or free_port()
        self.start, self.step, self.top = start, step, top
        self.reads = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._thread = threading.Thread(target=self._serve, daemon=True, name="modbus-line")

    def __enter__(self) -> SimulatedLine:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the simulated line did not start")
        return self

    def __exit__(self, *_: object) -> None:
        if self._loop is not None and self._server is not None:
            asyncio.run_coroutine_threadsafe(self._server.shutdown(), self._loop).result(10)
        self._thread.join(10)

    async def _action(
        self, code: int, _s: int, address: int, _c: int, regs: list[int], _v: Any
    ) -> None:
        if code == 3 and address == 0:
            self.reads += 1
            regs[0] = min(self.start + self.step * self.reads, self.top)

    def _serve(self) -> None:
        from pymodbus.server import ModbusTcpServer
        from pymodbus.simulator import DataType, SimData, SimDevice

        bits = [SimData(0, count=16, values=False, datatype=DataType.BITS)]
        registers = [SimData(0, count=16, values=0, datatype=DataType.REGISTERS)]
        device = SimDevice(id=1, simdata=(bits, list(bits), registers, list(registers)),
                           action=self._action)  # fmt: skip

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._server = ModbusTcpServer(device, address=("127.0.0.1", self.port))
            serving = asyncio.create_task(self._server.serve_forever())
            for _ in range(500):  # the server binds in its task: wait until it listens
                if _listening(self.port):
                    break
                await asyncio.sleep(0.02)
            self._ready.set()
            await serving

        asyncio.run(main())


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
