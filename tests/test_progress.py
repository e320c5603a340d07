"""Long first-time work shows its progress on a terminal, and nothing in a pipe or a log."""

from __future__ import annotations

import hashlib
import os
import pty
import subprocess
import sys
from pathlib import Path

# A child that assembles a two-part fake model, as the first `ember run` assembles the real one.
CHILD = """
import hashlib, sys
from ember.planner.models import ShippedModel, _assemble
model = ShippedModel("fake", "fake.gguf", ("ember_fake_part1", "ember_fake_part2"), {size},
                     {digest!r}, "none")
print(_assemble(model))
"""


def _fake_parts(root: Path) -> tuple[int, str]:
    body = [b"GGUF" + b"x" * (3 << 20), b"y" * (5 << 20)]
    for index, data in enumerate(body, start=1):
        package = root / f"ember_fake_part{index}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{index:02d}.bin").write_bytes(data)
    whole = b"".join(body)
    return len(whole), hashlib.sha256(whole).hexdigest()


def _assemble_in_child(tmp_path: Path, stderr: int) -> subprocess.Popen[bytes]:
    size, digest = _fake_parts(tmp_path / "site")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), *sys.path]),
        EMBER_MODEL_DIR=str(tmp_path / "cache"),
    )
    code = CHILD.format(size=size, digest=digest)
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=stderr
    )


def test_assembling_the_model_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    main, secondary = pty.openpty()
    child = _assemble_in_child(tmp_path, secondary)
    os.close(secondary)
    out, _ = child.communicate(timeout=120)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert child.returncode == 0
    assert out.strip().endswith(b"fake.gguf")
    text = shown.decode()
    assert "assembling fake from 2 packages" in text
    assert " of 8.4 MB" in text  # bytes written of the total
    assert "MB/s" in text
    assert "SHA-256 verified" in text


def test_assembling_the_model_is_quiet_in_a_pipe(tmp_path: Path) -> None:
    child = _assemble_in_child(tmp_path, subprocess.PIPE)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0
    assert out.strip().endswith(b"fake.gguf")
    assert err == b""
