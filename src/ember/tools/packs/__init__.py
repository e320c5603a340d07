"""Tool packs for real work, each enabled by its `[packs.NAME]` table in `ember.toml`.

| pack | tools | library |
|---|---|---|
| files | files_list, files_read, files_write, files_search, files_move | standard library |
| docs | docs_read, docs_invoice, docs_invoice_batch, docs_financials, docs_slide_outline | pypdf,
  openpyxl, python-docx, matplotlib |
| mail | mail_send, mail_alert, mail_merge | smtplib, Maildir |
| http | http_get, http_post | httpx |
| sql | sql_query, sql_schema | sqlite3, duckdb, psycopg |
| plc | plc_read, plc_write | pymodbus |

Each pack is a class whose methods are `@tool` functions, built from its settings; the tools
are registered bound to it. docs/tool-packs.md documents every setting and tool.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import msgspec

from ember.config import Packs
from ember.errors import UserError
from ember.tools.decorator import ToolFunction
from ember.tools.descriptor import Risk
from ember.tools.registry import ToolRegistry
from ember.tools.timers import register_timers

__all__ = ["EXTRAS", "pack_tools", "register_packs"]

EXTRAS = {"docs": "docs", "http": "http", "sql": "sql", "plc": "plc"}


def register_packs(registry: ToolRegistry, packs: Packs, *, data_dir: Path) -> None:
    """Register the tools of every enabled pack (and the durable timers, if absent)."""
    if not packs.enabled:
        return
    for name, tools in pack_tools(packs, data_dir=data_dir).items():
        for bound, approval_when in tools:
            registry.register(
                bound,
                descriptor=_configured(name, bound, packs),
                source=f"pack:{name}",
                approval_when=approval_when,
            )
    if "sleep" not in registry:
        register_timers(registry)


Bound = tuple[ToolFunction, Any]


def pack_tools(packs: Packs, *, data_dir: Path) -> dict[str, list[Bound]]:
    """The tools of each enabled pack, bound to their settings, with the approval condition of
    each (None: the tool's own risk decides)."""
    built: dict[str, list[Bound]] = {}
    for name in packs.enabled:
        module = _import(name)
        config = getattr(packs, name)
        if name == "docs":
            roots = packs.files.roots if packs.files else []
            if not config.roots and not roots:
                raise UserError("[packs.docs] needs roots, or a [packs.files] table with roots")
            pack = module.DocsTools(config, roots)
        elif name == "mail":
            pack = module.MailTools(config, data_dir / "outbox")
        else:
            pack = getattr(module, f"{name.capitalize()}Tools")(config)
        when = {"mail_merge": pack.approval_when} if name == "mail" else {}
        built[name] = [(fn, when.get(fn.descriptor.tool_name)) for fn in pack.tools()]
    return built


def _import(name: str) -> Any:
    try:
        return importlib.import_module(f"ember.tools.packs.{name}")
    except ImportError as exc:
        extra = EXTRAS.get(name, name)
        raise UserError(
            f"the {name} pack needs {exc.name}, which is not installed: "
            f'pip install "ember-agent[{extra}]"'
        ) from None


def _configured(name: str, fn: ToolFunction, packs: Packs) -> Any:
    """The descriptor with what the settings decide: the sql databases' names as an enum and
    their tables in `sql_query`'s description, the risk of plc writes."""
    descriptor = fn.descriptor
    if (
        name == "sql"
        and packs.sql is not None
        and "database" in descriptor.parameters["properties"]
    ):
        parameters = dict(descriptor.parameters)
        properties = dict(parameters["properties"])
        properties["database"] = {**properties["database"], "enum": sorted(packs.sql.databases)}
        parameters["properties"] = properties
        descriptor = msgspec.structs.replace(descriptor, parameters=parameters)
        if descriptor.tool_name == "sql_query" and (
            tables := _import("sql").SqlTools(packs.sql).described()
        ):
            descriptor = msgspec.structs.replace(
                descriptor, description=f"{descriptor.description} The tables: {tables}."
            )
    if name == "plc" and packs.plc is not None and descriptor.tool_name == "plc_write":
        descriptor = msgspec.structs.replace(descriptor, risk=Risk(packs.plc.write_risk))
    return descriptor
