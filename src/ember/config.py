"""Where ember keeps its data, from the environment and XDG defaults (a typed settings object)."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import platformdirs

__all__ = ["Settings"]


class Settings(msgspec.Struct, frozen=True):
    """`db`: the journal (`--db`, else `EMBER_DB`, else `~/.local/share/ember/ember.db`).
    `demo_dir`: the demo tools' world (`EMBER_DEMO_DIR`, else `~/.local/share/ember/demo`)."""

    db: Path
    demo_dir: Path

    @classmethod
    def load(cls, db: str | None = None) -> Settings:
        data = Path(platformdirs.user_data_dir("ember"))
        return cls(
            db=Path(db or os.environ.get("EMBER_DB") or data / "ember.db").expanduser(),
            demo_dir=Path(os.environ.get("EMBER_DEMO_DIR") or data / "demo").expanduser(),
        )
