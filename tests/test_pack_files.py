"""The files pack on real files in a temporary root: confinement, atomic writes, search, move."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ember.config import FilesPack, Packs
from ember.errors import ToolCallError, UserError
from ember.plan import Step
from ember.tools.packs.files import FilesTools

from .packs_support import failure, packs_registry, recorded_steps


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("alpha\nThe Quarterly plan\n")
    (root / "notes" / "b.txt").write_text("beta\n")
    (tmp_path / "secret.txt").write_text("outside")
    return root


@pytest.fixture
def files(root: Path) -> FilesTools:
    return FilesTools(FilesPack(roots=[str(root)]))


def test_list_read_write_search_and_move_inside_the_root(files: FilesTools, root: Path) -> None:
    listing = files.files_list(str(root / "notes"))
    assert listing["files"] == [str(root / "notes" / "a.md"), str(root / "notes" / "b.txt")]
    assert files.files_list("notes", pattern="*.md")["files"] == [str(root / "notes" / "a.md")]
    written = files.files_write("out/report.md", "# Report\nquarterly numbers\n")
    assert Path(written["path"]).read_text() == "# Report\nquarterly numbers\n"
    assert written["bytes"] == len("# Report\nquarterly numbers\n")
    assert not [p for p in (root / "out").iterdir() if p.name.startswith(".")]  # no temp left
    assert files.files_read("out/report.md")["content"].startswith("# Report")
    found = files.files_search(str(root), "quarterly")
    assert [(Path(m["path"]).name, m["line"]) for m in found["matches"]] == [
        ("a.md", 2),
        ("report.md", 2),
    ]
    moved = files.files_move("notes/b.txt", "archive/b.txt")
    assert Path(moved["path"]).read_text() == "beta\n"
    assert files.files_move("notes/b.txt", "archive/b.txt") == moved  # a repeat is harmless
    with pytest.raises(ToolCallError, match="exists"):
        files.files_move("notes/a.md", "archive/b.txt")


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "../secret.txt", "notes/../../secret.txt", "~/.bashrc"],
)
def test_paths_outside_the_root_are_refused_naming_the_root(
    files: FilesTools, root: Path, path: str
) -> None:
    with pytest.raises(ToolCallError) as caught:
        files.files_read(path)
    assert str(root) in str(caught.value)


def test_a_symlink_leading_out_of_the_root_is_refused(files: FilesTools, root: Path) -> None:
    os.symlink(root.parent / "secret.txt", root / "link.txt")
    os.symlink(root.parent, root / "up")
    with pytest.raises(ToolCallError, match="through a symlink"):
        files.files_read("link.txt")
    with pytest.raises(ToolCallError, match="outside the allowed roots"):
        files.files_write("up/planted.txt", "x")
    assert not (root.parent / "planted.txt").exists()
    assert all("link" not in m["path"] for m in files.files_search(str(root), "outside")["matches"])


def test_bad_input_is_a_clear_error_recorded_on_the_step(root: Path, tmp_path: Path) -> None:
    registry = packs_registry(Packs(files=FilesPack(roots=[str(root)])), tmp_path)
    error = failure(registry, "files_read", {"path": "/etc/passwd"}, tmp_path / "1")
    assert "step 1 (files_read) failed" in error
    assert f"use a path inside {root}" in error
    error = failure(registry, "files_read", {"path": "notes/missing.md"}, tmp_path / "2")
    assert "'notes/missing.md' is no file" in error
    (root / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    error = failure(registry, "files_read", {"path": "blob.bin"}, tmp_path / "3")
    assert "not UTF-8 text: read PDF, XLSX, DOCX or CSV files with docs_read" in error


def test_a_plan_writes_then_lists(root: Path, tmp_path: Path) -> None:
    registry = packs_registry(Packs(files=FilesPack(roots=[str(root)])), tmp_path)
    steps = recorded_steps(
        registry,
        [
            Step(1, "files_write", {"path": "new/x.txt", "content": "x"}),
            Step(2, "files_list", {"directory": "new"}, after=[1]),
        ],
        tmp_path,
    )
    assert steps[2].result["files"] == [str(root / "new" / "x.txt")]


def test_read_only_drops_the_writers_and_a_missing_root_is_a_config_error(
    root: Path, tmp_path: Path
) -> None:
    tools = FilesTools(FilesPack(roots=[str(root)], read_only=True)).tools()
    assert [t.descriptor.tool_name for t in tools] == ["files_list", "files_read", "files_search"]
    with pytest.raises(UserError, match="do not exist"):
        FilesTools(FilesPack(roots=[str(tmp_path / "nowhere")]))
