"""The sql pack: read-only queries on SQLite, DuckDB and PostgreSQL databases.

```toml
[packs.sql]
databases = { sales = "sqlite:data/sales.db", lake = "duckdb:/srv/lake.duckdb",
              crm = "postgresql://reader@127.0.0.1/crm" }
max_rows = 500        # rows per page: ask again with `offset` for the next page
timeout_s = 30
```

Read-only is enforced by each database, not by parsing SQL: SQLite opens the file read-only
(`mode=ro`, `query_only`); DuckDB opens it read-only with file access and configuration
changes turned off; PostgreSQL runs the query as one prepared statement (a second statement
is refused) in a read-only transaction. A write is the database's own error, on the step.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import msgspec

from ember.config import SqlPack
from ember.errors import ToolCallError, UserError
from ember.tools.decorator import ToolFunction, tool

__all__ = ["SqlTools", "names_a_table", "tables_text"]

SCHEMA_SQL = (
    "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE "
    "table_schema NOT IN ('information_schema', 'pg_catalog') ORDER BY table_name, "
    "ordinal_position"
)


class Page(TypedDict):
    database: str
    columns: list[str]
    rows: list[list[Any]]
    row_count: int
    next_offset: int | None


class Table(TypedDict):
    name: str
    columns: list[str]


class Schema(TypedDict):
    database: str
    tables: list[Table]


class SqlTools:
    """The sql pack's tools over one configuration."""

    def __init__(self, config: SqlPack) -> None:
        if not config.databases:
            raise UserError("[packs.sql] databases is empty: name at least one database")
        self.config = config
        self.kinds = {name: _kind(name, url) for name, url in config.databases.items()}

    def tools(self) -> list[ToolFunction]:
        return [self.sql_query, self.sql_schema]

    @tool(idempotent=True, read_only=True)
    def sql_query(
        self,
        database: str,
        sql: str,
        offset: Annotated[int, msgspec.Meta(ge=0)] = 0,
    ) -> Page:
        """Run one read-only SQL query (SELECT, WITH, ...) on a configured database; a page of
        at most the pack's max_rows rows, from `offset` (next_offset: the next page's).

        Args:
            database: The database's name in [packs.sql] databases.
            sql: One SQL statement.
            offset: Rows to skip, to read the next page.
        """
        limit = self.config.max_rows
        with self._cursor("sql_query", database) as execute:
            columns, rows = execute(sql, offset + limit + 1)
        more = len(rows) > offset + limit
        page = [[_json(v) for v in row] for row in rows[offset : offset + limit]]
        return {
            "database": database,
            "columns": columns,
            "rows": page,
            "row_count": len(page),
            "next_offset": offset + limit if more else None,
        }

    @tool(idempotent=True, read_only=True)
    def sql_schema(self, database: str) -> Schema:
        """The tables of a configured database and their columns.

        Args:
            database: The database's name in [packs.sql] databases.
        """
        return self._schema("sql_schema", database, self.config.timeout_s)

    def described(self, timeout_s: float = 2.0, limit: int = 2000) -> str:
        """Every database's tables and columns in a line ("crm: customers(id integer, ...)"),
        for the planner to write queries with: read once, when the pack is registered, all
        databases at once, `timeout_s` in all; one that cannot be read then is left out (a
        query naming what it lacks is told its tables on the step). At most `limit`
        characters."""
        from concurrent.futures import ThreadPoolExecutor, wait

        pool = ThreadPoolExecutor(max_workers=max(1, len(self.kinds)))
        futures = {
            name: pool.submit(self._schema, "sql_schema", name, timeout_s)
            for name in sorted(self.kinds)
        }
        wait(futures.values(), timeout=timeout_s + 0.5)
        pool.shutdown(wait=False, cancel_futures=True)
        parts = []
        for database, future in futures.items():
            if not future.done() or future.exception() is not None:
                continue
            tables = {table["name"]: table["columns"] for table in future.result()["tables"]}
            if tables:
                parts.append(
                    f"{database}: {tables_text(tables, limit=1000)[len('the tables: ') :]}"
                )
        text = "; ".join(parts)
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def _schema(self, tool: str, database: str, timeout_s: float) -> Schema:
        kind = self.kinds.get(database)
        query = (
            "SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type IN ('table', 'view') ORDER BY m.name, p.cid"
            if kind == "sqlite"
            else SCHEMA_SQL
        )
        with self._cursor(tool, database, timeout_s) as execute:
            _, rows = execute(query, 100_000)
        tables: dict[str, list[str]] = {}
        for table, column, kind_ in rows:
            tables.setdefault(table, []).append(f"{column} {kind_}".strip())
        return {
            "database": database,
            "tables": [{"name": n, "columns": c} for n, c in tables.items()],
        }

    @contextmanager
    def _cursor(
        self, tool: str, database: str, timeout_s: float | None = None
    ) -> Iterator[Callable[[str, int], Any]]:
        if database not in self.kinds:
            raise ToolCallError(
                tool, f"no database {database!r}: use one of {', '.join(sorted(self.kinds))}"
            )
        url, kind = self.config.databases[database], self.kinds[database]
        opener = {"sqlite": _sqlite, "duckdb": _duckdb, "postgresql": _postgres}[kind]
        try:
            with opener(url, timeout_s or self.config.timeout_s) as execute:
                yield execute
        except ToolCallError:
            raise
        except Exception as exc:
            message = " ".join(str(exc).split())
            if tool == "sql_query" and names_a_table(message):
                message += f"; {self._tables(database)}"
            raise ToolCallError(
                tool, f"database {database!r} ({kind}) refused the query: {message}"
            ) from None

    def _tables(self, database: str) -> str:
        """What the database holds, for an error that named something it does not hold."""
        try:
            schema = self.sql_schema(database)
        except ToolCallError:
            return "its tables could not be listed"
        return tables_text({table["name"]: table["columns"] for table in schema["tables"]})


def names_a_table(error: str) -> bool:
    """Whether a database's error is about a table or a column (one missing, mostly), as
    SQLite, DuckDB and PostgreSQL word it; not a write the read-only database refused."""
    if re.search(r"read-?only", error, re.I):  # a write refused ("CREATE TABLE in a read-only")
        return False
    return re.search(r"\b(column|table|relation)\b", error, re.I) is not None


def tables_text(tables: Mapping[str, Sequence[str]], limit: int = 1500) -> str:
    """The tables and their columns, for an error message: a query that named a column or a
    table that does not exist can be written again from it (by a person, or by the planner
    in the round after a failed step)."""
    text = "; ".join(f"{name}({', '.join(columns)})" for name, columns in tables.items())
    return "the tables: " + (text if len(text) <= limit else text[: limit - 3] + "...")


def _kind(name: str, url: str) -> str:
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("postgres", "postgresql"):
        return "postgresql"
    if scheme in ("sqlite", "duckdb"):
        path = _path(url)
        if not path.is_file():
            raise UserError(f"[packs.sql] database {name!r}: no file {path}")
        return scheme
    raise UserError(
        f"[packs.sql] database {name!r}: {url!r} must start with sqlite:, duckdb: or postgresql://"
    )


def _path(url: str) -> Path:
    rest = url.split(":", 1)[1]
    return Path(rest[2:] if rest.startswith("//") else rest)


Execute = Callable[[str, int], tuple[list[str], list[Any]]]


@contextmanager
def _sqlite(url: str, timeout_s: float) -> Iterator[Execute]:
    db = sqlite3.connect(f"file:{_path(url)}?mode=ro", uri=True, timeout=timeout_s)
    db.execute("PRAGMA query_only=ON")
    deadline = time.monotonic() + timeout_s
    db.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)

    def execute(sql: str, limit: int) -> tuple[list[str], list[Any]]:
        cursor = db.execute(sql)
        return [c[0] for c in cursor.description or ()], cursor.fetchmany(limit)

    try:
        yield execute
    finally:
        db.close()


@contextmanager
def _duckdb(url: str, timeout_s: float) -> Iterator[Execute]:
    import duckdb

    config = {"enable_external_access": False, "lock_configuration": True}
    db = duckdb.connect(str(_path(url)), read_only=True, config=config)  # type: ignore[arg-type]
    timer = threading.Timer(timeout_s, db.interrupt)
    timer.start()

    def execute(sql: str, limit: int) -> tuple[list[str], list[Any]]:
        cursor = db.execute(sql)
        return [c[0] for c in cursor.description or ()], cursor.fetchmany(limit)

    try:
        yield execute
    finally:
        timer.cancel()
        db.close()


@contextmanager
def _postgres(url: str, timeout_s: float) -> Iterator[Execute]:
    import psycopg

    options = f"-c statement_timeout={int(timeout_s * 1000)}"
    with psycopg.connect(url, connect_timeout=max(1, int(timeout_s)), options=options) as db:
        db.read_only = True

        def execute(sql: str, limit: int) -> tuple[list[str], list[Any]]:
            with db.cursor() as cursor:
                cursor.execute(sql, prepare=True)
                columns = [c.name for c in cursor.description or ()]
                return columns, cursor.fetchmany(limit) if cursor.description else []

        yield execute
        db.rollback()


def _json(value: Any) -> Any:
    """A database value as JSON data."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value
