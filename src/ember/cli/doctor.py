"""`ember doctor`: where data can go, what this installation has and where its data lives.

Every destination the configuration can send data to (tools, the model, spans) with the
`egress` list's verdict, which extras are installed, which shipped models are present (and,
with --verify, that their SHA-256 matches), where the journal, the caches and the audit
signing key are, with their sizes. Each section is a function returning plain data, so
`--json` prints the same facts the text shows.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

from ember.cli.commands import settings
from ember.config import Settings
from ember.extras import EXTRAS

__all__ = ["doctor"]


def doctor(args: argparse.Namespace) -> int:
    config = settings(args)
    report = {
        "destinations": destinations(config),
        "extras": extras(),
        "models": models(verify=args.verify),
        "data": data(config),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    limit = "no egress list" if config.egress is None else f"egress: {', '.join(config.egress)}"
    print(f"data destinations ({limit}):")
    if not report["destinations"]:
        print("  none: tools, model and journal all stay in this process")
    for row in report["destinations"]:
        verdict = "allowed" if row["allowed"] else "REFUSED"
        print(f"  {row['where']:<32} {row['what']:<6} {row['via']}  [{verdict}]")
    print("\nextras (pip install 'ember-agent[NAME]'):")
    for row in report["extras"]:
        state = "installed" if row["installed"] else f"missing: {', '.join(row['missing'])}"
        print(f"  {row['extra']:<10} {state}")
    print("\nshipped models:")
    for row in report["models"]:
        print(f"  {row['name']:<30} {row['state']}")
        if row["path"]:
            print(f"  {'':<30} {row['path']} ({_size(row['bytes'])})")
    print("\ndata:")
    for row in report["data"]:
        print(f"  {row['what']:<24} {row['path']} ({_size(row['bytes'])})")
    return 0


def destinations(config: Settings) -> list[dict[str, Any]]:
    """Every destination the configuration can send data to, and whether `egress` allows it."""
    from ember.app import destinations as configured
    from ember.config import egress_allows

    return [
        {
            "where": found.where,
            "what": found.what,
            "via": found.via,
            "allowed": egress_allows(config.egress, found.where),
        }
        for found in configured(config)
    ]


def extras() -> list[dict[str, Any]]:
    """Each extra, whether all of its modules import, and which do not."""
    by_extra: dict[str, list[str]] = {}
    for module, extra in EXTRAS.items():
        by_extra.setdefault(extra, []).append(module)
    by_extra["eval"].append("bfcl_eval")
    rows = []
    for extra, modules in by_extra.items():
        absent = [m for m in modules if importlib.util.find_spec(m) is None]
        rows.append({"extra": extra, "installed": not absent, "missing": absent})
    return rows


def models(*, verify: bool) -> list[dict[str, Any]]:
    """Each shipped model: assembled (and verified), ready to assemble, or not installed."""
    from ember.errors import ModelError
    from ember.planner.models import DEFAULT_MODEL, SHIPPED_MODELS, cache_dir

    rows = []
    for name, model in SHIPPED_MODELS.items():
        label = f"{name}{' (default)' if name == DEFAULT_MODEL else ''}"
        target = cache_dir() / model.filename
        if target.is_file() and target.stat().st_size == model.size:
            state = "assembled, SHA-256 checked when assembled"
            if verify:
                ok = _sha256(target) == model.sha256
                state = "assembled, SHA-256 verified now" if ok else "assembled, SHA-256 WRONG"
            rows.append({"name": label, "state": state, "path": str(target), "bytes": model.size})
            continue
        try:
            model.part_paths()
            state = "its packages are installed: the first run assembles it"
        except ModelError:
            state = "not installed (the embedded extra)"
        rows.append({"name": label, "state": state, "path": None, "bytes": 0})
    return rows


def data(config: Settings) -> list[dict[str, Any]]:
    """Where ember keeps things, with sizes."""
    from ember.planner.models import cache_dir

    journal: Any = config.db
    if config.journal_url:
        from ember.journal.pgschema import redacted

        journal = redacted(config.journal_url)  # a shared database: no size, no password
    places = [
        ("journal", journal),
        ("demo tools' world", config.demo_dir),
        ("saved prompt prefixes", cache_dir() / "prefix"),
        ("saved vocabularies", cache_dir() / "vocab"),
        ("audit signing key", config.signing_key),
    ]
    return [
        {"what": what, "path": str(path), "bytes": _bytes(path) if isinstance(path, Path) else 0}
        for what, path in places
    ]


def _bytes(path: Path) -> int:
    if path.is_file():
        size = path.stat().st_size
        wal = path.with_name(path.name + "-wal")
        return size + (wal.stat().st_size if wal.is_file() else 0)
    if path.is_dir():
        return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
    return 0


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _size(count: int) -> str:
    return "empty" if count == 0 else f"{count / 1e6:,.1f} MB"
