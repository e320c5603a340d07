"""The sql pack on real SQLite and DuckDB files and the machine's PostgreSQL: read-only as
the database enforces it, results capped and paged."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ember.config import Packs, SqlPack
from ember.errors import ToolCallError, UserError
from ember.tools.packs.sql import SqlTools

from .packs_support import failure, packs_registry

POSTGRES = os.environ.get(
    "EMBER_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
WRITES = [
    "INSERT INTO items VALUES (99, 'x')",
    "DELETE FROM items",
    "CREATE TABLE planted(x int)",
]


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT)")
        db.executemany("INSERT INTO items VALUES (?,?)", [(i, f"item {i}") for i in range(1, 8)])
    return f"sqlite:{path}"


@pytest.fixture
def duckdb_url(tmp_path: Path) -> str:
    import duckdb

    path = tmp_path / "lake.duckdb"
    with duckdb.connect(str(path)) as db:
        db.execute("CREATE TABLE items AS SELECT range AS id, 'item ' || range AS name "
                   "FROM range(1, 8)")  # fmt: skip
    return f"duckdb:{path}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    name = f"ember_test_{uuid.uuid4().hex[:8]}"
    try:
        admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL answers at {POSTGRES} (set EMBER_TEST_POSTGRES_URL): {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = POSTGRES.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(url) as db:
        db.execute("CREATE TABLE items(id int PRIMARY KEY, name text, price numeric(8,2), "
                   "added date)")  # fmt: skip
        for i in range(1, 8):
            db.execute("INSERT INTO items VALUES (%s, %s, %s, '2026-03-01')", (i, f"item {i}", i))
    yield url
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "duckdb", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


def test_queries_are_paged_and_capped(url: str) -> None:
    sql = SqlTools(SqlPack(databases={"db": url}, max_rows=3))
    query = "SELECT id, name FROM items ORDER BY id"
    first = sql.sql_query("db", query)
    assert first["columns"] == ["id", "name"]
    assert first["rows"] == [[1, "item 1"], [2, "item 2"], [3, "item 3"]]
    assert first["next_offset"] == 3
    last = sql.sql_query("db", query, offset=6)
    assert (last["rows"], last["next_offset"]) == ([[7, "item 7"]], None)
    tables = sql.sql_schema("db")["tables"]
    assert [t["name"] for t in tables] == ["items"]
    assert tables[0]["columns"][0].startswith("id ")


def test_a_write_is_refused_by_the_database_itself(url: str, tmp_path: Path) -> None:
    registry = packs_registry(Packs(sql=SqlPack(databases={"db": url})), tmp_path)
    for index, statement in enumerate(WRITES):
        error = failure(registry, "sql_query", {"database": "db", "sql": statement},
                        tmp_path / str(index))  # fmt: skip
        assert "database 'db'" in error
        assert "refused the query" in error, error
    count = SqlTools(SqlPack(databases={"db": url})).sql_query("db", "SELECT count(*) FROM items")
    assert count["rows"] == [[7]]


def test_a_query_naming_what_does_not_exist_is_told_the_tables(url: str) -> None:
    """So that the query can be written again from the error (by the planner's next round)."""
    sql = SqlTools(SqlPack(databases={"db": url}))
    for query in ("SELECT price_total FROM items", "SELECT * FROM invoices"):
        with pytest.raises(ToolCallError) as caught:
            sql.sql_query("db", query)
        error = str(caught.value)
        assert "refused the query" in error
        assert "the tables: items(id " in error, error
        assert ", name " in error
    with pytest.raises(ToolCallError) as caught:  # not a name: no tables
        sql.sql_query("db", "SELECT FROM WHERE")
    assert "the tables" not in str(caught.value)


def test_postgres_refuses_a_second_statement_that_would_leave_read_only(
    postgres_url: str, tmp_path: Path
) -> None:
    registry = packs_registry(Packs(sql=SqlPack(databases={"crm": postgres_url})), tmp_path)
    sneaky = "COMMIT; CREATE TABLE planted(x int)"
    error = failure(registry, "sql_query", {"database": "crm", "sql": sneaky}, tmp_path / "1")
    assert "cannot insert multiple commands into a prepared statement" in error
    tables = SqlTools(SqlPack(databases={"crm": postgres_url})).sql_schema("crm")["tables"]
    assert [t["name"] for t in tables] == ["items"]


def test_postgres_values_become_json(postgres_url: str) -> None:
    sql = SqlTools(SqlPack(databases={"crm": postgres_url}))
    row = sql.sql_query("crm", "SELECT price, added FROM items WHERE id = 2")["rows"][0]
    assert row == [2.0, "2026-03-01"]


def test_duckdb_cannot_reach_files(duckdb_url: str, tmp_path: Path) -> None:
    registry = packs_registry(Packs(sql=SqlPack(databases={"lake": duckdb_url})), tmp_path)
    out = tmp_path / "leak.csv"
    sql = f"COPY items TO '{out}'"
    error = failure(registry, "sql_query", {"database": "lake", "sql": sql}, tmp_path / "1")
    assert "file system operations are disabled" in error
    assert not out.exists()


def test_unknown_databases_and_bad_urls_are_clear_errors(sqlite_url: str, tmp_path: Path) -> None:
    registry = packs_registry(Packs(sql=SqlPack(databases={"db": sqlite_url})), tmp_path)
    schema = registry.get("sql_query").descriptor.parameters["properties"]["database"]
    assert schema["enum"] == ["db"]  # the planner sees the names
    with pytest.raises(UserError, match="must start with sqlite:, duckdb: or postgresql://"):
        SqlTools(SqlPack(databases={"x": "mysql://h/db"}))
    with pytest.raises(UserError, match="no file"):
        SqlTools(SqlPack(databases={"x": f"sqlite:{tmp_path}/missing.db"}))
    sql = SqlTools(SqlPack(databases={"db": sqlite_url}))
    with pytest.raises(Exception, match="no database 'crm': use one of db"):
        sql.sql_query("crm", "SELECT 1")


def test_the_planner_is_told_each_database_s_tables_in_the_query_tool(
    url: str, tmp_path: Path
) -> None:
    """Read once when the pack is registered, so a plan's SQL names columns that exist; a
    database that cannot be read then is left out, not waited for."""
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    gone = "postgresql://nobody@127.0.0.1:9/none"  # nothing listens on port 9
    pack = SqlPack(databases={"shop": url, "empty": f"sqlite:{empty}", "gone": gone})
    registry = packs_registry(Packs(sql=pack), tmp_path)
    description = registry.get("sql_query").descriptor.description
    assert "The tables: shop: items(id " in description, description
    assert ", name " in description
    assert "empty:" not in description
    assert "gone" not in description
    assert "The tables:" not in registry.get("sql_schema").descriptor.description


def test_a_database_that_never_answers_delays_registration_by_the_timeout_once(
    sqlite_url: str,
) -> None:
    """A listener that accepts and never answers: the readable database is still described,
    the silent ones left out (they are read at once: one timeout, not three; timed by no test)."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        mute = {f"mute{i}": f"postgresql://nobody@127.0.0.1:{port}/none" for i in range(3)}
        sql = SqlTools(SqlPack(databases={"shop": sqlite_url, **mute}))
        text = sql.described(timeout_s=1.0)
    assert text.startswith("shop: items(id ")
    assert "mute" not in text
