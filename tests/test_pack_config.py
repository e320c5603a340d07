"""`[packs.*]` in ember.toml: loaded into Settings (relative paths from the file's folder) and
registered by the composition root, as `ember tools` shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ember.config import Settings
from ember.errors import UserError
from ember.tools.packs import register_packs
from ember.tools.registry import ToolRegistry

from .conftest import ember


def test_packs_from_ember_toml_reach_ember_tools(tmp_path: Path, ember_env: dict[str, str]) -> None:
    (tmp_path / "work").mkdir()
    config = tmp_path / "ember.toml"
    config.write_text(
        'demo_tools = false\n[packs.files]\nroots = ["work"]\n[packs.docs]\n'
        '[packs.mail]\noutbox = "mail"\n[packs.plc]\nhost = "127.0.0.1"\nwrite_risk = "low"\n'
    )
    settings = Settings.load(config=str(config))
    assert settings.packs.enabled == ["files", "docs", "mail", "plc"]
    assert settings.packs.files is not None
    assert settings.packs.files.roots == [str(tmp_path / "work")]
    assert settings.packs.mail is not None
    assert settings.packs.mail.outbox == str(tmp_path / "mail")
    listed = ember(ember_env, "--config", str(config), "tools", "--json")
    assert listed.returncode == 0, listed.stderr
    tools = {t["tool_name"]: t for t in json.loads(listed.stdout)}
    assert tools["files_read"]["source"] == "pack:files"
    assert tools["plc_write"]["risk"] == "low"  # the setting, not the default
    assert "sleep" in tools
    assert "get_weather" not in tools


def test_a_bad_pack_table_is_a_clear_config_error(tmp_path: Path) -> None:
    config = tmp_path / "ember.toml"
    config.write_text('[packs.files]\nroot = ["x"]\n')
    with pytest.raises(UserError, match="unknown field `root`"):
        Settings.load(config=str(config))
    config.write_text("[packs.docs]\n")
    settings = Settings.load(config=str(config))
    with pytest.raises(UserError, match=r"\[packs.docs\] needs roots"):
        register_packs(ToolRegistry(), settings.packs, data_dir=tmp_path)
