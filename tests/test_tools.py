from __future__ import annotations

import asyncio
from typing import Annotated, Any

import msgspec
import pytest

from ember import ExecutionMode, Risk, ToolDescriptor, ToolRegistry, tool
from ember.errors import ArgumentError, ToolCallError, ToolDefinitionError, UnknownToolError
from ember.testing import MockTransport

DATE = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


class Forecast(msgspec.Struct):
    city: str
    temp_c: float


@tool(idempotent=True, timeout_s=2.0)
def forecast(
    city: Annotated[str, msgspec.Meta(min_length=1)],
    date: Annotated[str, msgspec.Meta(pattern=DATE)],
    days: int = 1,
) -> Forecast:
    """Daily forecast for one city.

    Args:
        city: City name, e.g. "Paris".
        date: First day,
            YYYY-MM-DD.
        days: How many days.
    """
    return Forecast(city, 12.5)


def test_tool_builds_descriptor_from_types_and_docstring() -> None:
    d = forecast.descriptor
    assert d.tool_name == "forecast"
    assert d.execution_mode is ExecutionMode.SYNC
    assert d.description == "Daily forecast for one city."
    assert d.idempotent
    assert d.timeout_s == 2.0
    assert d.risk is Risk.LOW
    assert d.parameters["required"] == ["city", "date"]
    assert d.parameters["additionalProperties"] is False
    props = d.parameters["properties"]
    assert props["city"] == {
        "type": "string",
        "minLength": 1,
        "description": 'City name, e.g. "Paris".',
    }
    assert props["date"]["pattern"] == DATE
    assert props["date"]["description"] == "First day, YYYY-MM-DD."
    assert props["days"]["type"] == "integer"
    assert props["days"]["default"] == 1  # the default, for callers (and the planner) to see
    assert d.returns is not None
    assert set(d.returns["properties"]) == {"city", "temp_c"}
    assert forecast("Oslo", "2026-03-03") == Forecast("Oslo", 12.5)


def test_idempotency_key_parameter_is_not_an_argument() -> None:
    @tool
    def send(to: str, idempotency_key: str = "") -> str:
        """Send."""
        return idempotency_key

    assert list(send.descriptor.parameters["properties"]) == ["to"]


def test_untyped_parameter_is_a_definition_error() -> None:
    def bad(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ToolDefinitionError, match="'x' needs a type annotation"):
        tool(bad)


def test_descriptor_rejects_bad_fields() -> None:
    with pytest.raises(ToolDefinitionError, match="must be an identifier"):
        ToolDescriptor("no spaces", {"type": "object"})
    with pytest.raises(ToolDefinitionError, match='"type": "object"'):
        ToolDescriptor("t", {"type": "string"})
    with pytest.raises(ToolDefinitionError, match="execution_mode"):
        ToolDescriptor.from_json(
            {"tool_name": "t", "parameters": {"type": "object"}, "execution_mode": "sometimes"}
        )


def test_bad_arguments_name_argument_value_and_rule() -> None:
    registry = ToolRegistry()
    registry.register(forecast)
    with pytest.raises(ArgumentError) as caught:
        registry.validate("forecast", {"city": "Paris", "date": "tomorrow"})
    assert caught.value.argument == "date"
    assert caught.value.value == "tomorrow"
    assert caught.value.rule == "pattern"
    assert "forecast: argument 'date' = 'tomorrow' breaks rule 'pattern'" in str(caught.value)
    with pytest.raises(ArgumentError, match="argument 'city' = None breaks rule 'required'"):
        registry.validate("forecast", {"date": "2026-03-03"})
    with pytest.raises(ArgumentError, match="'verbose' = True breaks rule 'additionalProperties'"):
        registry.validate("forecast", {"city": "P", "date": "2026-03-03", "verbose": True})
    with pytest.raises(ArgumentError) as caught:
        registry.validate("forecast", {"city": "P", "date": "2026-03-03", "days": "two"})
    assert caught.value.rule == "type"
    assert caught.value.argument == "days"


def test_registry_rejects_duplicates_and_names_unknown_tools() -> None:
    registry = ToolRegistry()
    registry.register(forecast)
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.register(forecast)
    with pytest.raises(UnknownToolError, match="known tools: forecast"):
        registry.get("weather")


def test_bad_arguments_never_reach_the_tool() -> None:
    transport = MockTransport(lambda tool, args: {"ok": True})
    registry = ToolRegistry()
    registry.register(forecast.descriptor, transport=transport)
    with pytest.raises(ArgumentError):
        asyncio.run(registry.call("forecast", {"city": ""}, idempotency_key="k"))
    assert transport.calls == []
    result = asyncio.run(
        registry.call("forecast", {"city": "A", "date": "2026-01-01"}, idempotency_key="k1")
    )
    assert result.value == {"ok": True}
    assert transport.calls == [("forecast", {"city": "A", "date": "2026-01-01"}, "k1")]


@pytest.mark.parametrize("kind", ["sync", "inline", "async"])
def test_inproc_transport_calls_every_kind_of_function(kind: str) -> None:
    seen: list[Any] = []

    def plain(n: int, idempotency_key: str = "") -> int:
        seen.append(idempotency_key)
        return n * 2

    async def coroutine(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    registry = ToolRegistry()
    if kind == "async":
        registry.register(tool(name="double")(coroutine))
    else:
        registry.register(tool(name="double", inline=kind == "inline")(plain))
    result = asyncio.run(registry.call("double", {"n": 21}, idempotency_key="key-1"))
    assert result.value == 42
    assert result.self_s >= 0
    assert seen == ([] if kind == "async" else ["key-1"])


def test_a_raising_tool_becomes_a_tool_call_error() -> None:
    @tool
    def broken(x: int) -> int:
        """Always fails."""
        raise RuntimeError("disk on fire")

    registry = ToolRegistry()
    registry.register(broken)
    with pytest.raises(ToolCallError, match="broken: RuntimeError: disk on fire"):
        asyncio.run(registry.call("broken", {"x": 1}, idempotency_key="k"))
