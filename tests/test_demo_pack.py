from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ember.errors import ToolCallError
from ember.tools.demo import DemoWorld, demo_catalog
from ember.tools.registry import ToolRegistry

from .conftest import shared_file


def call(registry: ToolRegistry, tool: str, key: str = "k", **args: Any) -> Any:
    return asyncio.run(registry.call(tool, args, idempotency_key=key)).value


def test_catalogue_is_the_planner_task_sets() -> None:
    shipped = [d.to_json() for d in demo_catalog()]
    assert len(shipped) == 14
    source = shared_file("planner-tasks/catalog.json")
    expected = json.loads(source.read_text())
    for mine, theirs in zip(shipped, expected, strict=True):
        assert {k: mine[k] for k in theirs} == theirs


def test_every_tool_returns_what_its_returns_schema_says(registry: ToolRegistry) -> None:
    import jsonschema_rs

    calls = {
        "get_weather": {"city": "Paris", "date": "2026-03-03"},
        "search_hotels": {"city": "London", "check_in": "2026-03-16", "nights": 3},
        "book_hotel": {"hotel_id": "H-LON-01", "check_in": "2026-03-16", "nights": 3},
        "send_email": {"to": "a@example.com", "subject": "Hi", "body": "Hello"},
        "convert_currency": {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
        "create_calendar_event": {"title": "Call", "date": "2026-03-05", "time": "09:30"},
        "list_files": {"directory": "/data/contracts/2026"},
        "read_file": {"path": "/home/dana/notes/todo.txt"},
        "write_file": {"path": "/home/lee/notes/gate.txt", "content": "Gate code: 4417"},
        "extract_invoice": {"path": "/data/inbox/inv-2291.pdf"},
        "query_sql": {"sql": "SELECT count(*) FROM customers WHERE tier='gold'"},
        "summarize_text": {"text": "One. Two three. Four five six.", "max_words": 3},
        "lookup_customer": {"email": "petra.novak@example.cz"},
        "generate_report": {"title": "T", "sections": ["a", "b"], "format": "markdown"},
    }
    assert set(calls) == {d.tool_name for d in demo_catalog()}
    for descriptor in demo_catalog():
        name = descriptor.tool_name
        result = call(registry, name, key=f"key-{name}", **calls[name])
        assert descriptor.returns is not None
        jsonschema_rs.validate(descriptor.returns, result)


def test_tools_answer_from_the_demo_world(registry: ToolRegistry) -> None:
    hotels = call(registry, "search_hotels", city="Tokyo", check_in="2026-03-03", nights=1)[
        "hotels"
    ]
    assert [h["currency"] for h in hotels] == ["JPY"] * 4
    prices = [h["price_per_night"] for h in hotels]
    assert prices == sorted(prices)
    capped = call(
        registry,
        "search_hotels",
        city="Tokyo",
        check_in="2026-03-03",
        nights=1,
        max_price_per_night=prices[1],
    )["hotels"]
    assert [h["price_per_night"] for h in capped] == prices[:2]
    assert call(
        registry, "convert_currency", amount=200, from_currency="GBP", to_currency="EUR"
    ) == {"amount": 235.29, "currency": "EUR"}
    assert call(registry, "list_files", directory="/data/contracts/2026")["files"] == [
        "/data/contracts/2026/a-acme.txt",
        "/data/contracts/2026/b-initech.txt",
    ]
    assert call(registry, "extract_invoice", path="/data/inbox/inv-2291.pdf")["total"] == 1845.0
    assert call(registry, "query_sql", sql="SELECT count(*) FROM customers WHERE tier='gold'") == {
        "columns": ["count(*)"],
        "rows": [[4]],
    }
    assert call(registry, "summarize_text", text="One two. Three four five.", max_words=2) == {
        "summary": "One two."
    }
    assert call(registry, "get_weather", city="Lisbon", date="2026-03-03") == call(
        registry, "get_weather", city="Lisbon", date="2026-03-03"
    )


def test_effects_happen_once_per_idempotency_key(registry: ToolRegistry, world: DemoWorld) -> None:
    first = call(registry, "send_email", key="run:4:abc", to="a@example.com", subject="S", body="B")
    again = call(registry, "send_email", key="run:4:abc", to="a@example.com", subject="S", body="B")
    other = call(registry, "send_email", key="run:5:def", to="a@example.com", subject="S", body="B")
    assert first == again != other
    assert [tool for tool, _ in world.effects()] == ["send_email", "send_email"]
    assert len(list(world.outbox.iterdir())) == 2


def test_files_never_leave_the_sandbox(registry: ToolRegistry, world: DemoWorld) -> None:
    (world.root / "secret.txt").write_text("top secret")
    for path in ("/../secret.txt", "relative.txt", "/data/../../secret.txt"):
        with pytest.raises(ToolCallError):
            call(registry, "read_file", path=path)
    (world.sandbox / "link").symlink_to(world.root)
    with pytest.raises(ToolCallError, match="leaves the demo sandbox"):
        call(registry, "read_file", path="/link/secret.txt")


def test_sql_is_read_only(registry: ToolRegistry) -> None:
    with pytest.raises(ToolCallError, match="read-only SELECT"):
        call(registry, "query_sql", sql="DELETE FROM customers")
    with pytest.raises(ToolCallError, match="SQL error"):
        call(registry, "query_sql", sql="WITH x AS (SELECT 1) DELETE FROM customers")
    assert call(registry, "query_sql", sql="SELECT count(*) FROM customers")["rows"][0][0] == 11


def test_sql_naming_a_missing_column_is_told_the_company_tables(registry: ToolRegistry) -> None:
    with pytest.raises(ToolCallError) as caught:
        call(registry, "query_sql", sql="SELECT SUM(total) FROM orders")
    error = str(caught.value)
    assert "no such column: total" in error
    assert "orders(order_id, customer_id, order_date, amount, currency, status)" in error
    assert "customers(customer_id, name, email, tier, country, signup_date)" in error
    assert "effects" not in error  # the world's own bookkeeping is not the company's


def test_unknown_things_are_clear_errors(registry: ToolRegistry) -> None:
    with pytest.raises(ToolCallError, match="no hotel data for 'Atlantis'"):
        call(registry, "search_hotels", city="Atlantis", check_in="2026-03-03", nights=1)
    with pytest.raises(ToolCallError, match="unknown hotel_id 'H-XYZ-09'"):
        call(registry, "book_hotel", hotel_id="H-XYZ-09", check_in="2026-03-03", nights=1)
    with pytest.raises(ToolCallError, match="no customer"):
        call(registry, "lookup_customer", customer_id="C-0")


def _open_world(folder: str) -> None:
    from pathlib import Path

    from ember.tools.demo import demo_registry

    demo_registry(DemoWorld(Path(folder)))


def test_two_processes_opening_one_new_world_at_once_both_open_it(tmp_path: Any) -> None:
    """Two `ember serve` behind a load balancer start on one demo world: SQLite answered
    "database is locked" to one of them about once in twenty starts (its WAL switch)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    for attempt in range(12):
        folder = str(tmp_path / f"world-{attempt}")
        processes = [context.Process(target=_open_world, args=(folder,)) for _ in range(2)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
        assert [p.exitcode for p in processes] == [0, 0], f"attempt {attempt}"
