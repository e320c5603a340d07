"""The plc pack: read and write a PLC's coils and registers over Modbus TCP (pymodbus).

```toml
[packs.plc]
host = "10.0.0.20"
port = 502
unit = 1              # the Modbus device (unit) id; a call may name another
timeout_s = 2         # per request
retries = 2           # more tries after a timeout
write_risk = "high"   # plc_write waits for a person's approval; "low" to let it run
```

Every failure is an error on the step that names the PLC and the registers: no answer within
the timeout (after the retries), a Modbus exception from the device (illegal address, ...),
a connection refused.
"""

from __future__ import annotations

import asyncio
import functools
import math
from typing import Annotated, Any, Literal, TypedDict

import msgspec

from ember.config import PlcPack
from ember.errors import ToolCallError
from ember.tools.context import current_executor, current_step
from ember.tools.decorator import ToolFunction, tool
from ember.tools.timers import WAIT_LIMIT_S

__all__ = ["PlcTools"]

ReadKind = Literal["coils", "discrete_inputs", "holding_registers", "input_registers"]
WriteKind = Literal["coils", "holding_registers"]
Address = Annotated[int, msgspec.Meta(ge=0, le=65535)]
Unit = Annotated[int, msgspec.Meta(ge=0, le=255)]


class Reading(TypedDict):
    kind: str
    address: int
    unit: int
    values: list[int]


class Watch(TypedDict):
    went_above: bool
    value: int
    count: int


_MISSED_IN_A_ROW = 3  # readings a watch skips in a row before it fails


class Written(TypedDict):
    kind: str
    address: int
    unit: int
    written: int


class PlcTools:
    """The plc pack's tools over one configuration."""

    def __init__(self, config: PlcPack) -> None:
        self.config = config
        self.where = f"PLC {config.host}:{config.port}"

    def tools(self) -> list[ToolFunction]:
        return [self.plc_read, self.plc_watch, self.plc_write]

    @tool(idempotent=True, read_only=True)
    def plc_read(
        self,
        kind: ReadKind,
        address: Address,
        count: Annotated[int, msgspec.Meta(ge=1, le=125)] = 1,
        unit: Unit | None = None,
    ) -> Reading:
        """Read coils, discrete inputs, holding registers or input registers from the PLC
        once, now (values: 0/1 for coils and inputs, 0-65535 for registers). To read one
        again and again until it goes above a limit: plc_watch.

        Args:
            kind: What to read.
            address: The first address (0-based).
            count: How many consecutive addresses from it, read at once.
            unit: The Modbus device id (default: the pack's unit).
        """
        unit = self.config.unit if unit is None else unit
        values = self._read("plc_read", kind, address, count, unit)
        return {"kind": kind, "address": address, "unit": unit, "values": values}

    @tool(idempotent=True, read_only=True, timeout_s=WAIT_LIMIT_S)
    async def plc_watch(
        self,
        kind: ReadKind,
        address: Address,
        above: float,
        readings: Annotated[int, msgspec.Meta(ge=1)],
        *,
        every_s: Annotated[float, msgspec.Meta(ge=0.1)] = 1.0,
        unit: Unit | None = None,
    ) -> Watch:
        """Read a coil or register every `every_s` seconds, at most `readings` times, until
        its value goes above `above`: whether it did (`went_above`), the last `value` read, and
        the `count` of readings its schedule took. After a restart the watch keeps its schedule,
        counted from when it first started: it makes the reading due last at once and goes on
        from there; those due before it are not made. A reading the PLC does not answer is
        skipped; three in a row end the watch with the error.

        Args:
            kind: What to read.
            address: Its address (0-based).
            above: The limit watched for.
            readings: The most readings to make.
            every_s: Seconds between readings (0.1 at least).
            unit: The Modbus device id (default: the pack's unit).
        """
        if (readings - 1) * every_s > WAIT_LIMIT_S:
            raise ToolCallError(
                "plc_watch",
                f"readings={readings} every_s={every_s} watches for more than a year: "
                "watch for less, or less often",
            )
        unit = self.config.unit if unit is None else unit
        step = current_step()
        loop = asyncio.get_running_loop()
        # the reading due now, or the last one: the watch ends with a value read
        due = min(max(0, math.floor((step.wall() - step.intent_at) / every_s)), readings - 1)
        read = functools.partial(self._read, "plc_watch", kind, address, 1, unit)
        value: int | None = None
        missed = 0  # readings in a row the PLC did not answer
        for number in range(due, readings):
            await step.sleep(max(0.0, step.intent_at + number * every_s - step.wall()))
            try:
                value = (await loop.run_in_executor(current_executor(), read))[0]
            except ToolCallError as exc:
                missed += 1
                if not exc.retryable or missed == _MISSED_IN_A_ROW or number == readings - 1:
                    raise
                continue
            missed = 0
            if value > above:
                return {"went_above": True, "value": value, "count": number + 1}
        assert value is not None  # the last reading was made, or raised
        return {"went_above": False, "value": value, "count": readings}

    @tool(idempotent=True, risk="high", read_only=False)
    def plc_write(
        self,
        kind: WriteKind,
        address: Address,
        values: Annotated[list[int], msgspec.Meta(min_length=1, max_length=123)],
        unit: Unit | None = None,
    ) -> Written:
        """Write coils (values 0/1) or holding registers (0-65535) on the PLC, from an
        address on. High-risk: waits for a person's approval unless configured otherwise.

        Args:
            kind: What to write.
            address: The first address (0-based).
            values: The values, in address order.
            unit: The Modbus device id (default: the pack's unit).
        """
        unit = self.config.unit if unit is None else unit
        what = f"{kind} {address}..{address + len(values) - 1} of unit {unit}"
        if kind == "coils":
            if any(v not in (0, 1) for v in values):
                raise ToolCallError("plc_write", f"coil values must be 0 or 1, got {values}")
            self._request(
                "plc_write", what, "write_coils", address, [bool(v) for v in values],
                device_id=unit,
            )  # fmt: skip
        else:
            if any(not 0 <= v <= 65535 for v in values):
                raise ToolCallError("plc_write", f"register values must be 0-65535, got {values}")
            self._request("plc_write", what, "write_registers", address, values, device_id=unit)
        return {"kind": kind, "address": address, "unit": unit, "written": len(values)}

    def _read(self, tool: str, kind: ReadKind, address: int, count: int, unit: int) -> list[int]:
        method = {
            "coils": "read_coils",
            "discrete_inputs": "read_discrete_inputs",
            "holding_registers": "read_holding_registers",
            "input_registers": "read_input_registers",
        }[kind]
        what = f"{kind} {address}..{address + count - 1} of unit {unit}"
        response = self._request(tool, what, method, address, count=count, device_id=unit)
        raw = response.bits[:count] if kind in ("coils", "discrete_inputs") else response.registers
        return [int(v) for v in raw]

    def _request(self, tool: str, what: str, method: str, *args: Any, **kwargs: Any) -> Any:
        from pymodbus.client import ModbusTcpClient
        from pymodbus.exceptions import ModbusException

        config = self.config
        client = ModbusTcpClient(
            config.host, port=config.port, timeout=config.timeout_s, retries=config.retries
        )
        try:
            if not client.connect():  # type: ignore[no-untyped-call]
                raise ToolCallError(
                    tool,
                    f"cannot connect to {self.where}: is it on, and is [packs.plc] host/port "
                    "right?",
                    retryable=True,
                )
            response = getattr(client, method)(*args, **kwargs)
        except ModbusException as exc:
            raise ToolCallError(
                tool,
                f"{self.where} did not answer {what} within timeout_s={config.timeout_s} "
                f"after {config.retries} retries ({exc})",
                retryable=True,
            ) from None
        finally:
            client.close()  # type: ignore[no-untyped-call]
        if response.isError():
            code = int(getattr(response, "exception_code", 0))
            raise ToolCallError(
                tool,
                f"{self.where} refused {what}: Modbus exception {code} "
                f"({_EXCEPTIONS.get(code, 'see the device manual')})",
            )
        return response


_EXCEPTIONS = {
    1: "illegal function: the device does not support this request",
    2: "illegal data address: no such coil or register on the device",
    3: "illegal data value",
    4: "device failure",
    6: "device busy: try again",
    11: "gateway target did not respond: check the unit id",
}
