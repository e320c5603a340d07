from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ember.tools.demo import DemoWorld, demo_registry
from ember.tools.registry import ToolRegistry

SHARED = Path(__file__).resolve().parents[2] / "shared"


def shared_file(relative: str) -> Path:
    """A file of ../shared beside the checkout, to compare with. Missing: the test is skipped
    on a developer's machine, and fails under CI (`CI` set), where ../shared is always there."""
    path = SHARED / relative
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: CI runs with ../shared beside the clone")
        pytest.skip(f"{path} is not here to compare with")
    return path


@pytest.fixture
def world(tmp_path: Path) -> DemoWorld:
    return DemoWorld(tmp_path / "demo")


@pytest.fixture
def registry(world: DemoWorld) -> ToolRegistry:
    return demo_registry(world)


@pytest.fixture
def ember_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for `ember` subprocesses: their own journal and demo world."""
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


from .backends import journal_at, location, postgres_db  # noqa: E402  (fixtures)

__all__ = ["journal_at", "location", "postgres_db"]
