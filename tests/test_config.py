"""`ember.toml`: tools from a module, a Unix-socket host and an MCP server, used by `ember run`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ember.config import Settings
from ember.errors import UserError

from .conftest import ember
from .test_transports import Host

DATA = Path(__file__).parent / "data"


def test_tools_from_every_kind_of_source(tmp_path: Path, ember_env: dict[str, str]) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (extra: mcp)")
    host = Host(tmp_path)
    config = tmp_path / "ember.toml"
    config.write_text(f"""demo_tools = false
[[tools]]
uds = "{host.uds}"
[[tools]]
mcp = {{ command = "{sys.executable}", args = ["{DATA / "mcp_server.py"}"] }}
""")
    try:
        listed = ember(ember_env, "--config", str(config), "tools", "--json")
        assert listed.returncode == 0, listed.stderr
        sources = {t["tool_name"]: t["source"] for t in json.loads(listed.stdout)}
        assert sources["add"] == f"unix:{host.uds}"
        assert sources["multiply"].startswith("mcp:")
        assert "get_weather" not in sources
        script = tmp_path / "plan.json"
        script.write_text(
            json.dumps(
                {
                    "compute": {
                        "steps": [
                            {"id": 1, "tool": "multiply", "args": {"a": 3, "b": 4}},
                            {"id": 2, "tool": "add", "args": {"a": "$1.product", "b": 1}},
                        ]
                    }
                }
            )
        )
        done = ember(
            ember_env,
            "--config",
            str(config),
            "run",
            "--planner",
            "scripted",
            "--script",
            str(script),
            "--json",
            "compute",
        )
        assert done.returncode == 0, done.stderr
        assert [s["result"] for s in json.loads(done.stdout)["steps"]] == [
            {"product": 12},
            {"sum": 13},
        ]
    finally:
        host.stop()


def test_module_sources_and_bad_configs(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text(f'[[tools]]\nmodule = "{DATA / "host_tools.py"}"\n')
    settings = Settings.load(config=str(good))
    assert settings.demo_tools
    assert settings.tools[0].module == str(DATA / "host_tools.py")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[tools]]\nuds = "/a"\nhttp = "http://b"\n')
    with pytest.raises(
        UserError, match=r"tools\[0\] must set exactly one of .* \(it sets uds, http\)"
    ):
        Settings.load(config=str(bad))
    typo = tmp_path / "typo.toml"
    typo.write_text('[[tools]]\nmodul = "x"\n')
    with pytest.raises(UserError, match="unknown field `modul`"):
        Settings.load(config=str(typo))
    with pytest.raises(UserError, match="no config file at"):
        Settings.load(config=str(tmp_path / "none.toml"))
