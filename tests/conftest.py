from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ember.tools.demo import DemoWorld, demo_registry
from ember.tools.registry import ToolRegistry

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture
def world(tmp_path: Path) -> DemoWorld:
    return DemoWorld(tmp_path / "demo")


@pytest.fixture
def registry(world: DemoWorld) -> ToolRegistry:
    return demo_registry(world)


@pytest.fixture
def ember_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for `ember` subprocesses: their own journal and demo world."""
    import os

    return dict(
        os.environ, EMBER_DB=str(tmp_path / "ember.db"), EMBER_DEMO_DIR=str(tmp_path / "demo")
    )


def ember(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run the `ember` command line in a child process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "ember.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
