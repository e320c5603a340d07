"""ember's settings: where data lives (environment and XDG defaults) and where tools come from
(`ember.toml`). A typed settings object, not a dict passed through the core.

```toml
# ember.toml (the current directory's, or --config PATH, or $EMBER_CONFIG)
demo_tools = true                               # the 14 demo tools (default: true)

# Where data may go (`ember doctor` lists where it would): hosts ("10.0.0.5:8700", or a host
# for any port), sockets ("unix:/run/ember/plc-tools.sock"), local MCP servers' commands
# ("process:npx"); a trailing * matches any rest. Absent: no limit. A configuration that would
# send data elsewhere does not start.
egress = ["10.0.0.5:8700", "unix:/run/ember/plc-tools.sock", "process:npx", "127.0.0.1"]

[[tools]]
module = "mycompany.tools"                      # @tool functions of a module or .py file
[[tools]]
uds = "/run/ember/plc-tools.sock"               # an `ember tools serve --uds` host
[[tools]]
http = "http://10.0.0.5:8700/mcp"               # an `ember tools serve --http` host
[[tools]]
mcp = { command = "npx", args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"] }
[[tools]]
mcp = { url = "http://127.0.0.1:9000/mcp" }     # an MCP server over Streamable HTTP

[packs.files]                                   # a table present = the pack is enabled
roots = ["~/work", "/srv/shared"]               # relative paths: from this file's folder
[packs.docs]                                    # reads inside the files roots
[packs.mail]
host = "smtp.example.com"                       # no host: a Maildir outbox instead
[packs.http]
allow = ["api.example.com", "127.0.0.1:8080"]
[packs.sql]
databases = { sales = "sqlite:data/sales.db", crm = "postgresql://127.0.0.1/crm" }
[packs.plc]
host = "10.0.0.20"

[server]                                        # `ember serve`'s limits (these are the defaults)
max_body_bytes = 65536                          # a larger request body: 413
max_task_chars = 4000                           # a longer task: 422
rate_per_s = 50.0                               # requests a second per token (429 past it),
rate_burst = 100                                #   with bursts of this many
max_concurrent_runs = 32                        # runs at once; one more: 429 + Retry-After
```

Every field of every pack is described in docs/tool-packs.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

import msgspec
import platformdirs

from ember.errors import UserError

__all__ = [
    "Destination",
    "DocsPack",
    "FilesPack",
    "HttpPack",
    "MailPack",
    "McpCommand",
    "Packs",
    "PlannerSettings",
    "PlcPack",
    "ServerSettings",
    "Settings",
    "SqlPack",
    "ToolSource",
    "egress_allows",
]


class McpCommand(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An MCP server to start (`command`, `args`, `env`: stdio) or to reach (`url`: Streamable
    HTTP)."""

    command: str | None = None
    args: list[str] = []
    env: dict[str, str] | None = None
    url: str | None = None


class ToolSource(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Exactly one of: an in-process module, a Unix-socket host, an HTTP host, an MCP server."""

    module: str | None = None
    uds: str | None = None
    http: str | None = None
    mcp: McpCommand | None = None

    @property
    def kinds(self) -> list[str]:
        return [k for k in ("module", "uds", "http", "mcp") if getattr(self, k) is not None]

    @property
    def destination(self) -> str:
        """Where this source's calls send their arguments: `this process`, `unix:PATH`,
        `HOST:PORT`, or `process:COMMAND` (a local MCP server the runtime starts)."""
        if self.uds is not None:
            return f"unix:{self.uds}"
        if self.http is not None:
            return host_of(self.http)
        if self.mcp is not None:
            return host_of(self.mcp.url) if self.mcp.url else f"process:{self.mcp.command}"
        return THIS_PROCESS


THIS_PROCESS = "this process"


def host_of(url: str) -> str:
    """`HOST:PORT` of a URL (the scheme's default port when it names none)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname or url}:{port}"


def egress_allows(allowed: tuple[str, ...] | None, destination: str) -> bool:
    """Whether the `egress` list lets data go to `destination` (None: no list, no limit).
    `this process` is always allowed."""
    if allowed is None or destination == THIS_PROCESS:
        return True
    host = destination.rsplit(":", 1)[0] if ":" in destination else destination
    for entry in allowed:
        if entry in (destination, host) or (
            entry.endswith("*") and destination.startswith(entry[:-1])
        ):
            return True
    return False


class Destination(msgspec.Struct, frozen=True):
    """Somewhere the configuration sends data: `where`, what (`what`: tools, model, spans)
    and through which configured source (`via`)."""

    where: str
    what: str
    via: str


class FilesPack(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[packs.files]`: list, read, write, search and move files inside `roots` only.
    `read_only` drops the writing tools; `max_read_bytes` caps what one read returns."""

    roots: list[str]
    read_only: bool = False
    max_read_bytes: int = 1_000_000


class DocsPack(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[packs.docs]`: text and tables of PDF, XLSX, CSV and DOCX files, invoices, financial
    statements. Reads inside `roots` (default: the files pack's roots)."""

    roots: list[str] = []
    max_pages: int = 500


SmtpSecurity = Literal["starttls", "tls", "none"]


class MailPack(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[packs.mail]`: send over SMTP at `host` (`security`: STARTTLS, implicit TLS or none;
    `port` defaults to 587, 465 or 25 by it), logging in with `username` and `password`
    (default `$EMBER_SMTP_PASSWORD`), trusting `ca_file` besides the system's CAs. Without a
    host, mail goes to the Maildir `outbox` (default: `outbox/` beside the journal).
    `approval_over`: a mail-merge to more recipients
    waits for a person's approval."""

    host: str | None = None
    port: int | None = None
    security: SmtpSecurity = "starttls"
    username: str | None = None
    password: str | None = None
    sender: str = "ember@localhost"
    ca_file: str | None = None
    outbox: str | None = None
    timeout_s: float = 30.0
    approval_over: int = 10


class HttpPack(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[packs.http]`: GET and POST to the hosts of `allow` only (`host` or `host:port`), with
    a response size, a time and a redirect limit."""

    allow: list[str]
    max_bytes: int = 1_000_000
    timeout_s: float = 10.0
    max_redirects: int = 3


class SqlPack(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[packs.sql]`: read-only queries on `databases` (name -> `sqlite:PATH`, `duckdb:PATH`
    or a `postgresql://` URL); a page holds at most `max_rows` rows."""

    databases: dict[str, str]
    max_rows: int = 500
    timeout_s: float = 30.0


class PlcPack(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[packs.plc]`: Modbus TCP at `host:port`, device `unit`; each request waits `timeout_s`
    and is tried `retries` more times. Writes are `write_risk` (default high: approval)."""

    host: str
    port: int = 502
    unit: int = 1
    timeout_s: float = 2.0
    retries: int = 2
    write_risk: Literal["low", "high"] = "high"


class Packs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The tool packs of `[packs.*]` (docs/tool-packs.md); a pack without a table is off."""

    files: FilesPack | None = None
    docs: DocsPack | None = None
    mail: MailPack | None = None
    http: HttpPack | None = None
    sql: SqlPack | None = None
    plc: PlcPack | None = None

    @property
    def enabled(self) -> list[str]:
        return [name for name in self.__struct_fields__ if getattr(self, name) is not None]


_Positive = Annotated[int, msgspec.Meta(gt=0)]


class ServerSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[server]`: the limits of `ember serve`. A request body over `max_body_bytes` is refused
    (413) before it is read whole; a task over `max_task_chars` characters (422). Each token
    (principal) may make `rate_per_s` requests a second, in bursts of up to `rate_burst` (429
    with Retry-After past it). At most `max_concurrent_runs` runs go on at once in the server
    (429 with Retry-After: `retry_after_s`, when full)."""

    max_body_bytes: _Positive = 65_536
    max_task_chars: _Positive = 4_000
    rate_per_s: Annotated[float, msgspec.Meta(gt=0)] = 50.0
    rate_burst: _Positive = 100
    max_concurrent_runs: _Positive = 32
    retry_after_s: _Positive = 1


class _File(msgspec.Struct, forbid_unknown_fields=True):
    demo_tools: bool = True
    tools: list[ToolSource] = []
    packs: Packs = Packs()
    egress: list[str] | None = None
    server: ServerSettings = ServerSettings()


PlannerBackend = Literal["llama", "scripted", "openai"]


class PlannerSettings(msgspec.Struct, frozen=True):
    """Which planner plans new runs (`backend`; None: none, for commands that plan nothing),
    and its options: `model` (llama: a shipped model's name or a GGUF path; openai: the
    server's model name), `base_url` (openai: the API root; default `EMBER_OPENAI_BASE_URL`),
    `response_format` (openai: how the plan is constrained), `script` (scripted: a JSON file of
    plans instead of the built-in demo ones), `prefix_cache` (llama: keep prompt prefixes'
    KV caches on disk)."""

    backend: PlannerBackend | None = "llama"
    model: str | None = None
    base_url: str | None = None
    response_format: str = "json_schema"
    script: str | None = None
    prefix_cache: bool = True
    rules_off: tuple[str, ...] = ()  # llama, openai driven: decoding rules switched off
    abstain_band: tuple[float, float] | None = None  # llama, openai driven: not the model's


class Settings(msgspec.Struct, frozen=True):
    """Everything a command builds ember's parts from, loaded once (`Settings.load`).

    `db`: the journal (`--db`, else `EMBER_DB`, else `~/.local/share/ember/ember.db`).
    `journal_url`: a `postgresql://` URL given there instead of a path: the shared PostgreSQL
    journal of a cluster of workers (`db` then stays the default path: the audit key and the
    packs' data are kept beside it).
    `demo_dir`: the demo tools' world (`EMBER_DEMO_DIR`, else `~/.local/share/ember/demo`).
    `demo_tools`, `tools`, `packs`: from the config file, if there is one (paths in `packs`
    made absolute from the file's folder). `planner`: see
    `PlannerSettings`. `otlp_endpoint`: where `ember serve` sends spans (default
    `OTEL_EXPORTER_OTLP_ENDPOINT`, else none). `egress`: where data may go (None: anywhere).
    `audit_key`: the audit log's signing key (`EMBER_AUDIT_KEY`, else `<db>.audit-key`).
    `server`: `ember serve`'s limits (`[server]`)."""

    db: Path
    demo_dir: Path
    demo_tools: bool = True
    tools: tuple[ToolSource, ...] = ()
    packs: Packs = Packs()
    planner: PlannerSettings = PlannerSettings()
    otlp_endpoint: str | None = None
    egress: tuple[str, ...] | None = None
    audit_key: Path | None = None
    server: ServerSettings = ServerSettings()
    journal_url: str | None = None

    @property
    def signing_key(self) -> Path:
        """Where the audit log's signing key is (created at first use)."""
        return self.audit_key or self.db.with_name(self.db.name + ".audit-key")

    @classmethod
    def load(
        cls,
        db: str | None = None,
        config: str | None = None,
        *,
        planner: PlannerSettings | None = None,
        otlp_endpoint: str | None = None,
    ) -> Settings:
        data = Path(platformdirs.user_data_dir("ember"))
        path = _config_path(config)
        parsed = _read(path) if path else _File()
        planner = planner or PlannerSettings()
        base_url = planner.base_url or os.environ.get("EMBER_OPENAI_BASE_URL")
        key = os.environ.get("EMBER_AUDIT_KEY")
        where = db or os.environ.get("EMBER_DB") or ""
        shared = where if where.startswith(("postgresql://", "postgres://")) else None
        return cls(
            db=Path((not shared and where) or data / "ember.db").expanduser(),
            journal_url=shared,
            demo_dir=Path(os.environ.get("EMBER_DEMO_DIR") or data / "demo").expanduser(),
            demo_tools=parsed.demo_tools,
            tools=tuple(parsed.tools),
            packs=_absolute(parsed.packs, path.parent) if path else parsed.packs,
            planner=msgspec.structs.replace(planner, base_url=base_url),
            otlp_endpoint=otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"),
            egress=tuple(parsed.egress) if parsed.egress is not None else None,
            audit_key=Path(key).expanduser() if key else None,
            server=parsed.server,
        )


def _config_path(given: str | None) -> Path | None:
    if given or os.environ.get("EMBER_CONFIG"):
        path = Path(given or os.environ["EMBER_CONFIG"]).expanduser()
        if not path.is_file():
            raise UserError(f"no config file at {path}")
        return path
    local = Path("ember.toml")
    return local if local.is_file() else None


def _absolute(packs: Packs, base: Path) -> Packs:
    """The packs with their relative paths taken from `base` (the config file's folder)."""

    def fix(path: str) -> str:
        return str((base / Path(path).expanduser()).resolve())

    replace = msgspec.structs.replace
    if packs.files is not None:
        packs = replace(
            packs, files=replace(packs.files, roots=[fix(r) for r in packs.files.roots])
        )
    if packs.docs is not None:
        packs = replace(packs, docs=replace(packs.docs, roots=[fix(r) for r in packs.docs.roots]))
    if packs.mail is not None:
        mail = packs.mail
        outbox = fix(mail.outbox) if mail.outbox else None
        ca_file = fix(mail.ca_file) if mail.ca_file else None
        packs = replace(packs, mail=replace(mail, outbox=outbox, ca_file=ca_file))
    if packs.sql is not None:
        databases = {name: _absolute_url(url, fix) for name, url in packs.sql.databases.items()}
        packs = replace(packs, sql=replace(packs.sql, databases=databases))
    return packs


def _absolute_url(url: str, fix: Callable[[str], str]) -> str:
    scheme, sep, rest = url.partition(":")
    if scheme in ("sqlite", "duckdb") and sep and not rest.startswith("//"):
        return f"{scheme}:{fix(rest)}"
    return url


def _read(path: Path) -> _File:
    try:
        parsed = msgspec.toml.decode(path.read_bytes(), type=_File)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise UserError(f"{path}: {exc}") from None
    for index, source in enumerate(parsed.tools):
        if source.mcp is not None and (source.mcp.command is None) == (source.mcp.url is None):
            raise UserError(
                f"{path}: tools[{index}].mcp needs a command (stdio) or a url "
                "(Streamable HTTP), not both"
            )
        if len(source.kinds) != 1:
            raise UserError(
                f"{path}: tools[{index}] must set exactly one of module, uds, http, mcp "
                f"(it sets {', '.join(source.kinds) or 'none'})"
            )
    return parsed
