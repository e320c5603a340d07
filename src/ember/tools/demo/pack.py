"""The demo tool pack: the 14 tools of the planner catalogue, offline and deterministic.

Everything the tools touch lives under one directory (`DemoWorld.root`): a file sandbox that
absolute paths are mapped into (and that no path can leave), an outbox of sent emails, and
`world.db` (the company database `query_sql` reads, the calendar, the bookings, and the record of
every side effect by idempotency key: a repeated call with the same key returns the first result
and has no second effect).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import date
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from ember.errors import ToolCallError
from ember.tools.demo import data
from ember.tools.descriptor import ExecutionMode, ToolDescriptor
from ember.tools.packs.sql import names_a_table, tables_text
from ember.tools.registry import ToolRegistry
from ember.tools.timers import register_timers
from ember.tools.transport import InprocTransport, ToolResult, Transport

__all__ = ["DemoWorld", "demo_catalog", "demo_registry"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS customers(customer_id TEXT PRIMARY KEY, name TEXT, email TEXT,
    tier TEXT, country TEXT, signup_date TEXT);
CREATE TABLE IF NOT EXISTS orders(order_id TEXT PRIMARY KEY, customer_id TEXT REFERENCES customers,
    order_date TEXT, amount REAL, currency TEXT, status TEXT);
CREATE TABLE IF NOT EXISTS jobs(handle TEXT PRIMARY KEY, tool TEXT NOT NULL,
    idempotency_key TEXT NOT NULL, args TEXT NOT NULL, result TEXT);
CREATE TABLE IF NOT EXISTS effects(idempotency_key TEXT PRIMARY KEY, tool TEXT NOT NULL,
    args TEXT NOT NULL, result TEXT NOT NULL, at TEXT DEFAULT CURRENT_TIMESTAMP);
"""


# The demo tools that act on the world (a booking, a mail, an event, a file, a report); the
# others read or compute. The planner task set's catalog.json does not say which.
ACTING = frozenset(
    {"book_hotel", "send_email", "create_calendar_event", "write_file", "generate_report"}
)


@functools.cache
def demo_catalog() -> list[ToolDescriptor]:
    """The 14 descriptors as the planner task set's catalog.json has them, each also marked
    idempotent, and read-only or not (`ACTING`)."""
    raw = json.loads(resources.files("ember.tools.demo").joinpath("catalog.json").read_text())
    return [
        ToolDescriptor.from_json(
            dict(item, idempotent=True, read_only=item["tool_name"] not in ACTING)
        )
        for item in raw
    ]


def demo_registry(world: DemoWorld, *, timers: bool = True) -> ToolRegistry:
    """A registry holding the 14 demo tools bound to `world` (and the durable timers)."""
    registry = ToolRegistry()
    for descriptor in demo_catalog():
        fn = getattr(world, descriptor.tool_name)
        transport: Transport = InprocTransport(fn, inline=True)
        if descriptor.execution_mode is ExecutionMode.ASYNC:
            transport = DemoJobs(world, fn)
        registry.register(descriptor, transport=transport, source="demo")
    if timers:
        register_timers(registry)
    return registry


class DemoJobs:
    """The demo's job host for `async` tools: `submit` records the job and returns its handle;
    `wait` returns the job's result, doing the work first if it is not done. The work is
    idempotent by key, so a runtime that re-attaches to a handle after a crash never causes a
    second effect. (A real tool host runs jobs in its own process: see the transports issue.)"""

    def __init__(self, world: DemoWorld, fn: Callable[..., dict[str, Any]]) -> None:
        self.world = world
        self.fn = fn

    async def submit(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> str:
        handle = "job-" + _digest(idempotency_key)[:16]
        with self.world._connect() as db:
            db.execute(
                "INSERT OR IGNORE INTO jobs(handle, tool, idempotency_key, args) VALUES (?,?,?,?)",
                (handle, tool, idempotency_key, json.dumps(args)),
            )
        return handle

    async def wait(self, tool: str, handle: str) -> ToolResult:
        with self.world._connect() as db:
            row = db.execute(
                "SELECT idempotency_key, args, result FROM jobs WHERE handle=?", (handle,)
            ).fetchone()
        if row is None:
            raise ToolCallError(tool, f"no job {handle!r}: it was never submitted here")
        key, args, stored = row
        if stored is not None:
            return ToolResult(json.loads(stored), 0.0)
        start = time.perf_counter()
        result = self.fn(**json.loads(args), idempotency_key=key)
        with self.world._connect() as db:
            db.execute("UPDATE jobs SET result=? WHERE handle=?", (json.dumps(result), handle))
        return ToolResult(result, time.perf_counter() - start)

    async def call(self, tool: str, args: dict[str, Any], *, idempotency_key: str) -> ToolResult:
        return await self.wait(tool, await self.submit(tool, args, idempotency_key=idempotency_key))


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


class DemoWorld:
    """The demo tools' state, rooted at `root` (created and seeded on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sandbox = root / "sandbox"
        self.outbox = root / "outbox"
        self._db_path = root / "world.db"
        self._local = threading.local()
        self._seed()

    # -- plumbing ---------------------------------------------------------------------------
    def _seed(self) -> None:
        self.outbox.mkdir(parents=True, exist_ok=True)
        for path, text in data.FILES.items():
            target = self._real(path)
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        for path, invoice in data.INVOICES.items():
            target = self._real(path)
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                lines = "\n".join(f"Line: {line}" for line in invoice.items)
                target.write_text(
                    data.INVOICE.format(**msgspec.structs.asdict(invoice), lines=lines),
                    encoding="utf-8",
                )
        with self._connect() as db:
            db.executescript(_SCHEMA)
            db.executemany("INSERT OR IGNORE INTO customers VALUES (?,?,?,?,?,?)", data.CUSTOMERS)
            db.executemany("INSERT OR IGNORE INTO orders VALUES (?,?,?,?,?,?)", data.ORDERS)

    @contextlib.contextmanager
    def _connect(self, *, readonly: bool = False) -> Iterator[sqlite3.Connection]:
        """This thread's connection (opened once: opening costs more than most tool calls);
        commits on success, rolls back on error."""
        key = "ro" if readonly else "rw"
        db: sqlite3.Connection | None = self._local.__dict__.get(key)
        if db is None:
            if readonly:
                db = sqlite3.connect(f"file:{self._db_path}?mode=ro", uri=True)
            else:
                db = sqlite3.connect(self._db_path, timeout=10, isolation_level=None)
                _write_ahead(db)
            self._local.__dict__[key] = db
        with db:
            yield db

    def _real(self, path: str) -> Path:
        """Map an absolute path into the sandbox; refuse any path that would leave it."""
        if not path.startswith("/"):
            raise ToolCallError("files", f"path {path!r} must be absolute (start with /)")
        parts = PurePosixPath(path).parts[1:]
        if ".." in parts:
            raise ToolCallError("files", f"path {path!r} may not contain '..'")
        real = self.sandbox.joinpath(*parts)
        resolved = real.resolve()
        if resolved != self.sandbox.resolve() and self.sandbox.resolve() not in resolved.parents:
            raise ToolCallError("files", f"path {path!r} leaves the demo sandbox")
        return real

    def _once(
        self,
        tool: str,
        key: str,
        args: dict[str, Any],
        effect: Callable[[sqlite3.Connection], dict[str, Any]],
    ) -> dict[str, Any]:
        """Run `effect` at most once per idempotency key; a repeat returns the first result.

        The effect's own database writes and its record commit in one transaction.
        """
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT result FROM effects WHERE idempotency_key=?", (key,)
            ).fetchone()
            if row is not None:
                result: dict[str, Any] = json.loads(row[0])
                return result
            result = effect(db)
            db.execute(
                "INSERT INTO effects(idempotency_key, tool, args, result) VALUES (?,?,?,?)",
                (key, tool, json.dumps(args, sort_keys=True), json.dumps(result)),
            )
            return result

    def effects(self) -> list[tuple[str, str]]:
        """(tool, idempotency_key) of every side effect so far, oldest first."""
        with self._connect() as db:
            rows = db.execute("SELECT tool, idempotency_key FROM effects ORDER BY rowid").fetchall()
        return [(tool, key) for tool, key in rows]

    # -- tools ------------------------------------------------------------------------------
    def get_weather(self, city: str, date: str) -> dict[str, Any]:
        key = data.CITY_ALIASES.get(city.strip(), city.strip().lower())
        name, _, seasons = data.CITIES.get(key, (city.strip(), "", (12.0, 15.0, 22.0, 15.0)))
        day = _parse_date("get_weather", date)
        seed = int(_digest("weather", key, date)[:8], 16)
        base = seasons[(day.month % 12) // 3]
        temp = round(base + (seed % 70) / 10 - 3.5, 1)
        return {
            "city": name,
            "date": date,
            "forecast": data.FORECASTS[seed % len(data.FORECASTS)],
            "temp_c": temp,
        }

    def search_hotels(
        self, city: str, check_in: str, nights: int, max_price_per_night: float | None = None
    ) -> dict[str, Any]:
        key = data.CITY_ALIASES.get(city.strip(), city.strip().lower())
        if key not in data.CITIES:
            known = ", ".join(name for name, _, _ in data.CITIES.values())
            raise ToolCallError("search_hotels", f"no hotel data for {city!r}; cities: {known}")
        _parse_date("search_hotels", check_in)
        name, currency, _ = data.CITIES[key]
        base = data.BASE_PRICE[currency]
        hotels = []
        for index, hotel in enumerate(data.HOTEL_NAMES):
            price = round(base * data.PRICE_STEPS[index] * (1 + (len(key) % 5) / 20), 2)
            if max_price_per_night is None or price <= max_price_per_night:
                hotels.append(
                    {
                        "hotel_id": f"H-{key[:3].upper()}-{index + 1:02d}",
                        "name": f"{hotel} {name}",
                        "price_per_night": price,
                        "currency": currency,
                    }
                )
        return {"hotels": hotels}

    def book_hotel(
        self, hotel_id: str, check_in: str, nights: int, idempotency_key: str = ""
    ) -> dict[str, Any]:
        match = re.fullmatch(r"H-([A-Z]{3})-(\d\d)", hotel_id)
        city = next((k for k in data.CITIES if match and k[:3].upper() == match.group(1)), None)
        if match is None or city is None or not 1 <= int(match.group(2)) <= len(data.HOTEL_NAMES):
            raise ToolCallError(
                "book_hotel", f"unknown hotel_id {hotel_id!r}: use one that search_hotels returned"
            )
        hotel = self.search_hotels(city, check_in, nights)["hotels"][int(match.group(2)) - 1]
        args = {"hotel_id": hotel_id, "check_in": check_in, "nights": nights}
        key = idempotency_key or _digest("book_hotel", args)

        def effect(_: sqlite3.Connection) -> dict[str, Any]:
            return {
                "booking_id": "BK-" + _digest(key)[:6].upper(),
                "hotel_name": hotel["name"],
                "city": data.CITIES[city][0],
                "check_in": check_in,
                "nights": nights,
                "total_price": round(hotel["price_per_night"] * nights, 2),
                "currency": hotel["currency"],
            }

        return self._once("book_hotel", key, args, effect)

    def send_email(
        self, to: str, subject: str, body: str, idempotency_key: str = ""
    ) -> dict[str, Any]:
        args = {"to": to, "subject": subject, "body": body}
        key = idempotency_key or _digest("send_email", args)

        def effect(_: sqlite3.Connection) -> dict[str, Any]:
            message_id = "MSG-" + _digest(key)[:10]
            message = f"To: {to}\nSubject: {subject}\nMessage-Id: {message_id}\n\n{body}\n"
            (self.outbox / f"{message_id}.eml").write_text(message, encoding="utf-8")
            return {"message_id": message_id}

        return self._once("send_email", key, args, effect)

    def convert_currency(
        self, amount: float, from_currency: str, to_currency: str
    ) -> dict[str, Any]:
        for code in (from_currency, to_currency):
            if code not in data.RATES_PER_EUR:
                raise ToolCallError(
                    "convert_currency",
                    f"no demo rate for {code}; known: " + ", ".join(sorted(data.RATES_PER_EUR)),
                )
        euros = amount / data.RATES_PER_EUR[from_currency]
        return {
            "amount": round(euros * data.RATES_PER_EUR[to_currency], 2),
            "currency": to_currency,
        }

    def create_calendar_event(
        self,
        title: str,
        date: str,
        time: str | None = None,
        duration_minutes: int | None = None,
        idempotency_key: str = "",
    ) -> dict[str, Any]:
        args = {"title": title, "date": date, "time": time, "duration_minutes": duration_minutes}
        key = idempotency_key or _digest("create_calendar_event", args)
        return self._once(
            "create_calendar_event", key, args, lambda _: {"event_id": "EV-" + _digest(key)[:8]}
        )

    def list_files(self, directory: str) -> dict[str, Any]:
        real = self._real(directory)
        if not real.is_dir():
            raise ToolCallError("list_files", f"no directory {directory!r}")
        names = sorted(child.name for child in real.iterdir() if child.is_file())
        return {"files": [str(PurePosixPath(directory) / name) for name in names]}

    def read_file(self, path: str) -> dict[str, Any]:
        real = self._real(path)
        if not real.is_file():
            raise ToolCallError("read_file", f"no file {path!r}")
        return {"content": real.read_text(encoding="utf-8")}

    def write_file(self, path: str, content: str, idempotency_key: str = "") -> dict[str, Any]:
        real = self._real(path)
        key = idempotency_key or _digest("write_file", path, content)

        def effect(_: sqlite3.Connection) -> dict[str, Any]:
            real.parent.mkdir(parents=True, exist_ok=True)
            encoded = content.encode("utf-8")
            real.write_bytes(encoded)
            return {"path": path, "bytes": len(encoded)}

        return self._once("write_file", key, {"path": path, "content": content}, effect)

    def extract_invoice(self, path: str) -> dict[str, Any]:
        text = self.read_file(path)["content"]
        fields = dict(
            re.findall(r"^(Invoice number|Vendor|Date|Currency|Total): (.+)$", text, re.M)
        )
        if len(fields) < 5:
            raise ToolCallError("extract_invoice", f"{path!r} is not an invoice the demo can read")
        return {
            "invoice_id": fields["Invoice number"],
            "vendor": fields["Vendor"],
            "date": fields["Date"],
            "total": float(fields["Total"]),
            "currency": fields["Currency"],
            "line_items": len(re.findall(r"^Line: ", text, re.M)),
        }

    def query_sql(self, sql: str) -> dict[str, Any]:
        if not re.match(r"\s*(SELECT|WITH)\b", sql, re.I):
            raise ToolCallError("query_sql", "only one read-only SELECT statement is allowed")
        with self._connect(readonly=True) as db:
            try:
                cursor = db.execute(sql)
                columns = [column[0] for column in cursor.description or ()]
                rows = [list(row) for row in cursor.fetchmany(1000)]
            except sqlite3.Error as exc:
                message = f"SQL error: {exc}"
                if names_a_table(message):
                    message += f"; {tables_text(_company_tables(db))}"
                raise ToolCallError("query_sql", message) from None
        return {"columns": columns, "rows": rows}

    def summarize_text(self, text: str, max_words: int | None = None) -> dict[str, Any]:
        """An extractive summary: whole leading sentences, then words, up to the limit."""
        limit = max_words or 60
        sentences = re.split(r"(?<=[.!?。！？])\s*", " ".join(text.split()))
        words: list[str] = []
        for sentence in filter(None, sentences):
            if len(words) + len(sentence.split()) > limit and words:
                break
            words.extend(sentence.split())
        return {"summary": " ".join(words[:limit])}

    def lookup_customer(
        self, customer_id: str | None = None, email: str | None = None
    ) -> dict[str, Any]:
        with self._connect(readonly=True) as db:
            row = db.execute(
                "SELECT customer_id, name, email, tier FROM customers "
                "WHERE (?1 IS NULL OR customer_id=?1) AND (?2 IS NULL OR lower(email)=lower(?2))",
                (customer_id, email),
            ).fetchone()
        if row is None:
            raise ToolCallError(
                "lookup_customer", f"no customer with customer_id={customer_id!r} email={email!r}"
            )
        return dict(zip(("customer_id", "name", "email", "tier"), row, strict=True))

    def generate_report(
        self, title: str, sections: list[str], format: str, idempotency_key: str = ""
    ) -> dict[str, Any]:
        args = {"title": title, "sections": sections, "format": format}
        key = idempotency_key or _digest("generate_report", args)
        suffix = "md" if format == "markdown" else "json"
        path = f"/reports/report-{_digest(key)[:8]}.{suffix}"

        def effect(_: sqlite3.Connection) -> dict[str, Any]:
            if format == "markdown":
                text = f"# {title}\n\n" + "\n\n".join(sections) + "\n"
            else:
                text = json.dumps({"title": title, "sections": sections}, ensure_ascii=False)
            real = self._real(path)
            real.parent.mkdir(parents=True, exist_ok=True)
            real.write_text(text, encoding="utf-8")
            return {"path": path}

        return self._once("generate_report", key, args, effect)


def _parse_date(tool: str, value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ToolCallError(tool, f"date {value!r} must be a real date, YYYY-MM-DD") from None


def _company_tables(db: sqlite3.Connection) -> dict[str, list[str]]:
    """The tables `query_sql` is for (the catalogue describes these) and their columns; none
    if they cannot be read."""
    try:
        return {
            table: [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            for table in ("customers", "orders")
        }
    except sqlite3.Error:
        return {}


def _write_ahead(db: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch `db` to WAL. Two processes opening a new world at once (two `ember serve` behind
    a load balancer) can each find the other holding the file: SQLite then answers "database
    is locked" at once in some lock orders, without its busy timeout; try again for a while."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
