"""ember's settings: where data lives (environment and XDG defaults) and where tools come from
(`ember.toml`). A typed settings object, not a dict passed through the core.

```toml
# ember.toml (the current directory's, or --config PATH, or $EMBER_CONFIG)
demo_tools = true                               # the 14 demo tools (default: true)

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

# Where data may go (`ember doctor` lists where it would): hosts ("10.0.0.5:8700", or a host
# for any port), sockets ("unix:/run/ember/plc-tools.sock"), local MCP servers' commands
# ("process:npx"); a trailing * matches any rest. Absent: no limit. A configuration that would
# send data elsewhere does not start.
egress = ["10.0.0.5:8700", "unix:/run/ember/plc-tools.sock", "process:npx", "127.0.0.1"]
```
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import msgspec
import platformdirs

from ember.errors import UserError

__all__ = [
    "Destination",
    "McpCommand",
    "PlannerSettings",
    "Settings",
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


class _File(msgspec.Struct, forbid_unknown_fields=True):
    demo_tools: bool = True
    tools: list[ToolSource] = []
    egress: list[str] | None = None


PlannerBackend = Literal["llama", "scripted", "openai"]


class PlannerSettings(msgspec.Struct, frozen=True):
    """Which planner plans new runs (`backend`; None: none, for commands that plan nothing),
    and its options: `model` (llama: a shipped model's name or a GGUF path; openai: the
    server's model name), `base_url` (openai: the API root; default `EMBER_OPENAI_BASE_URL`),
    `response_format` (openai: how the plan schema is sent), `script` (scripted: a JSON file of
    plans instead of the built-in demo ones), `prefix_cache` (llama: keep prompt prefixes'
    KV caches on disk)."""

    backend: PlannerBackend | None = "llama"
    model: str | None = None
    base_url: str | None = None
    response_format: str = "json_schema"
    script: str | None = None
    prefix_cache: bool = True


class Settings(msgspec.Struct, frozen=True):
    """Everything a command builds ember's parts from, loaded once (`Settings.load`).

    `db`: the journal (`--db`, else `EMBER_DB`, else `~/.local/share/ember/ember.db`).
    `demo_dir`: the demo tools' world (`EMBER_DEMO_DIR`, else `~/.local/share/ember/demo`).
    `demo_tools`, `tools`: from the config file, if there is one. `planner`: see
    `PlannerSettings`. `otlp_endpoint`: where `ember serve` sends spans (default
    `OTEL_EXPORTER_OTLP_ENDPOINT`, else none). `egress`: where data may go (None: anywhere).
    `audit_key`: the audit log's signing key (`EMBER_AUDIT_KEY`, else `<db>.audit-key`)."""

    db: Path
    demo_dir: Path
    demo_tools: bool = True
    tools: tuple[ToolSource, ...] = ()
    planner: PlannerSettings = PlannerSettings()
    otlp_endpoint: str | None = None
    egress: tuple[str, ...] | None = None
    audit_key: Path | None = None

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
        return cls(
            db=Path(db or os.environ.get("EMBER_DB") or data / "ember.db").expanduser(),
            demo_dir=Path(os.environ.get("EMBER_DEMO_DIR") or data / "demo").expanduser(),
            demo_tools=parsed.demo_tools,
            tools=tuple(parsed.tools),
            planner=msgspec.structs.replace(planner, base_url=base_url),
            otlp_endpoint=otlp_endpoint or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"),
            egress=tuple(parsed.egress) if parsed.egress is not None else None,
            audit_key=Path(key).expanduser() if key else None,
        )


def _config_path(given: str | None) -> Path | None:
    if given or os.environ.get("EMBER_CONFIG"):
        path = Path(given or os.environ["EMBER_CONFIG"]).expanduser()
        if not path.is_file():
            raise UserError(f"no config file at {path}")
        return path
    local = Path("ember.toml")
    return local if local.is_file() else None


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
