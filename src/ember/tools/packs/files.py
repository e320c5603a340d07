"""The files pack: list, read, write, search and move files inside configured root folders.

```toml
[packs.files]
roots = ["~/work", "/srv/shared"]   # every path must stay inside one of these
read_only = false                   # true: no files_write, no files_move
```

Paths outside the roots are refused with an error naming them, `..` and symlinks that lead out
included (`ember.tools.packs.roots`). Writes are atomic (a temporary file renamed into place),
so a crash never leaves half a file; a repeated write or move with the same arguments is
harmless, so both are idempotent.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
from pathlib import Path
from typing import Annotated, TypedDict

import msgspec

from ember.config import FilesPack
from ember.errors import ToolCallError
from ember.tools.decorator import ToolFunction, tool
from ember.tools.packs.roots import Roots

__all__ = ["FilesTools"]

MAX_LISTED = 10_000


class Listing(TypedDict):
    files: list[str]
    directories: list[str]


class FileText(TypedDict):
    path: str
    content: str
    bytes: int
    truncated: bool


class Written(TypedDict):
    path: str
    bytes: int


class Match(TypedDict):
    path: str
    line: int
    text: str


class Matches(TypedDict):
    matches: list[Match]
    truncated: bool


class FilesTools:
    """The files pack's tools over one configuration."""

    def __init__(self, config: FilesPack) -> None:
        self.roots = Roots(config.roots)
        self.max_read_bytes = config.max_read_bytes
        self.read_only = config.read_only

    def tools(self) -> list[ToolFunction]:
        readers = [self.files_list, self.files_read, self.files_search]
        return readers if self.read_only else [*readers, self.files_write, self.files_move]

    @tool(idempotent=True, read_only=True)
    def files_list(self, directory: str, pattern: str = "*", recursive: bool = False) -> Listing:
        """List a folder: its files and subfolders as absolute paths, sorted by name.

        Args:
            directory: The folder, absolute or relative to the first root.
            pattern: Only names matching this glob, e.g. "*.pdf".
            recursive: Also list every subfolder's files.
        """
        real = self.roots.existing_dir("files_list", directory)
        walk = real.rglob(pattern) if recursive else real.glob(pattern)
        files: list[str] = []
        folders: list[str] = []
        for child in walk:
            if len(files) + len(folders) >= MAX_LISTED:
                break
            (folders if child.is_dir() else files).append(str(child))
        return {"files": sorted(files), "directories": sorted(folders)}

    @tool(idempotent=True, read_only=True)
    def files_read(self, path: str) -> FileText:
        """Read a UTF-8 text file (up to the pack's max_read_bytes; `truncated` says if cut).

        Args:
            path: The file, absolute or relative to the first root.
        """
        real = self.roots.existing_file("files_read", path)
        with real.open("rb") as handle:
            data = handle.read(self.max_read_bytes + 1)
        truncated = len(data) > self.max_read_bytes
        data = data[: self.max_read_bytes]
        try:
            text = data.decode("utf-8", errors="strict" if not truncated else "ignore")
        except UnicodeDecodeError:
            raise ToolCallError(
                "files_read",
                f"{path!r} is not UTF-8 text: read PDF, XLSX, DOCX or CSV files with docs_read",
            ) from None
        return {"path": str(real), "content": text, "bytes": len(data), "truncated": truncated}

    @tool(idempotent=True, read_only=False)
    def files_write(self, path: str, content: str) -> Written:
        """Write a UTF-8 text file (replacing it), creating its folders; atomic.

        Args:
            path: The file, absolute or relative to the first root.
            content: The text to write.
        """
        real = self.roots.inside("files_write", path)
        data = content.encode("utf-8")
        atomic_write(real, data)
        return {"path": str(real), "bytes": len(data)}

    @tool(idempotent=True, read_only=True)
    def files_search(
        self,
        directory: str,
        text: str,
        pattern: str = "*",
        max_results: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 100,
    ) -> Matches:
        """Find the lines containing `text` (case-insensitive) in the text files of a folder
        and its subfolders.

        Args:
            directory: The folder to search, absolute or relative to the first root.
            text: The text to look for.
            pattern: Only files whose name matches this glob, e.g. "*.md".
            max_results: At most this many matching lines.
        """
        real = self.roots.existing_dir("files_search", directory)
        needle = text.casefold()
        matches: list[Match] = []
        for file in sorted(p for p in real.rglob("*") if p.is_file()):
            if not fnmatch.fnmatch(file.name, pattern) or not self.roots.contains(file):
                continue
            for number, line in _text_lines(file):
                if needle in line.casefold():
                    matches.append({"path": str(file), "line": number, "text": line[:500]})
                    if len(matches) >= max_results:
                        return {"matches": matches, "truncated": True}
        return {"matches": matches, "truncated": False}

    @tool(idempotent=True, read_only=False)
    def files_move(self, source: str, destination: str) -> Written:
        """Move or rename a file inside the roots; never replaces an existing file.

        Args:
            source: The file to move.
            destination: Its new path (a folder: keep the name).
        """
        src = self.roots.inside("files_move", source)
        dst = self.roots.inside("files_move", destination)
        if dst.is_dir():
            dst = dst / src.name
        if not src.exists() and dst.is_file():  # moved already: a repeat is harmless
            return {"path": str(dst), "bytes": dst.stat().st_size}
        if not src.is_file():
            raise ToolCallError("files_move", f"no file {source!r} to move")
        if dst.exists():
            raise ToolCallError(
                "files_move", f"{destination!r} exists: move to a new name, or delete it first"
            )
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        return {"path": str(dst), "bytes": dst.stat().st_size}


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file renamed into place (fsynced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _text_lines(file: Path) -> list[tuple[int, str]]:
    try:
        text = file.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []  # binary or unreadable: not a text file to search
    return list(enumerate(text.splitlines(), start=1))
