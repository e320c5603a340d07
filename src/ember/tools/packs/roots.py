"""Confinement to configured root folders, shared by the files and docs packs.

A path is taken only if it names a place inside one of the roots once every symlink in it is
followed: `..` anywhere is refused outright, and a symlink inside a root that leads out of it
is refused like any other path outside. Relative paths are taken from the first root.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ember.errors import ToolCallError, UserError

__all__ = ["Roots"]


class Roots:
    """The folders a pack may touch (each made absolute, symlinks followed)."""

    def __init__(self, roots: Sequence[str | Path]) -> None:
        if not roots:
            raise UserError("a files or docs pack needs at least one root folder (roots = [...])")
        self.paths = [Path(root).expanduser().resolve() for root in roots]
        missing = [str(path) for path in self.paths if not path.is_dir()]
        if missing:
            raise UserError(f"root folder(s) {', '.join(missing)} do not exist: create them")

    def __str__(self) -> str:
        return ", ".join(str(path) for path in self.paths)

    def inside(self, tool: str, path: str) -> Path:
        """`path` as an absolute real path inside a root, or a `ToolCallError` naming the roots."""
        given = Path(path).expanduser()
        if not path.strip():
            raise ToolCallError(tool, f"the path is empty: give one inside {self}")
        if ".." in given.parts:
            raise ToolCallError(
                tool, f"path {path!r} contains '..', which is refused: give a path inside {self}"
            )
        absolute = given if given.is_absolute() else self.paths[0] / given
        real = Path(os.path.realpath(absolute))
        if self.contains(real):
            return real
        how = " (through a symlink)" if self._lexically_inside(absolute) else ""
        raise ToolCallError(
            tool, f"path {path!r} is outside the allowed roots{how}: use a path inside {self}"
        )

    def contains(self, path: Path) -> bool:
        """Whether `path`, symlinks followed, is inside a root."""
        real = Path(os.path.realpath(path))
        return any(real == root or root in real.parents for root in self.paths)

    def existing_file(self, tool: str, path: str) -> Path:
        real = self.inside(tool, path)
        if not real.is_file():
            what = "a folder" if real.is_dir() else "no file"
            raise ToolCallError(tool, f"{path!r} is {what}: give the path of an existing file")
        return real

    def existing_dir(self, tool: str, path: str) -> Path:
        real = self.inside(tool, path)
        if not real.is_dir():
            raise ToolCallError(
                tool, f"{path!r} is not a folder: give an existing folder in {self}"
            )
        return real

    def _lexically_inside(self, absolute: Path) -> bool:
        return any(absolute.is_relative_to(root) for root in self.paths)
