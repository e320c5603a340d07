"""Write (or check) packs-catalog.json: the tool packs' descriptors, with the timers, in the
catalogue format of ../shared/planner-tasks/README.md and in the JSON Schema subset its scorer
implements (`anyOf` of plain types becomes a list of types; `title` is dropped).

    python evals/planner/packs_catalog.py           # rewrite evals/planner/packs-catalog.json
    python evals/planner/packs_catalog.py --check   # exit 1 if it is out of date
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from ember.config import DocsPack, FilesPack, HttpPack, MailPack, Packs, PlcPack, SqlPack
from ember.tools.packs import register_packs
from ember.tools.registry import ToolRegistry

HERE = Path(__file__).parent
CATALOG = HERE / "packs-catalog.json"
DATABASES = ("crm", "sales")  # the database names the flagship requests use
# The crm database of examples/mail_merge (PostgreSQL there), with the column types
# PostgreSQL's information_schema reports, so sql_query's description reads as it does there.
CRM = "CREATE TABLE customers(id integer, name text, email text, plan text, renewal_date date)"


def catalogue() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in DATABASES:
            with contextlib.closing(sqlite3.connect(root / f"{name}.db")) as db:
                if name == "crm":
                    db.execute(CRM)
        packs = Packs(
            files=FilesPack(roots=[tmp]), docs=DocsPack(), mail=MailPack(),
            http=HttpPack(allow=["api.example.com"]),
            sql=SqlPack(databases={n: f"sqlite:{root}/{n}.db" for n in DATABASES}),
            plc=PlcPack(host="127.0.0.1"),
        )  # fmt: skip
        registry = ToolRegistry()
        register_packs(registry, packs, data_dir=root)
    return [
        {
            "tool_name": d.tool_name,
            "description": d.description,
            "parameters": _subset(d.parameters),
            "execution_mode": d.execution_mode.value,
            "returns": _subset(d.returns or {"type": "object"}),
            **({} if d.read_only is None else {"read_only": d.read_only}),
        }
        for d in registry.descriptors()
    ]


def _subset(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_subset(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _subset(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if "anyOf" in out and all(set(o) <= {"type"} for o in out["anyOf"]):
        out["type"] = [o["type"] for o in out.pop("anyOf")]
    elif "anyOf" in out:  # an object or a list of anything: keep only the types
        out["type"] = [o.get("type", "object") for o in out.pop("anyOf")]
    if (
        out.get("type") == "object"
        and "properties" not in out
        and "additionalProperties" not in out
    ):
        out.update(properties={}, required=[], additionalProperties=False)  # a free-form result
    if "properties" in out and "additionalProperties" not in out and "required" in out:
        out["additionalProperties"] = False
    if isinstance(out.get("additionalProperties"), dict):
        del out["additionalProperties"]
    return out


def render() -> str:
    return json.dumps(catalogue(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if CATALOG.read_text(encoding="utf-8") != text:
            print(f"{CATALOG} is out of date: run python {__file__}", file=sys.stderr)
            return 1
        return 0
    CATALOG.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
