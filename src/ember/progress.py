"""Progress of long first-time work (assembling the model, building caches) on one line of
stderr, redrawn in place: only when stderr is a terminal, so pipes and logs stay clean."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """`Progress("assembling the model", total=bytes)`, then `update(done)` as work goes on and
    `finish("...")`. Without a total it shows the seconds elapsed."""

    def __init__(
        self, label: str, *, total: int | None = None, stream: TextIO | None = None
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.shown = self.stream.isatty()
        self.start = time.monotonic()
        self._drawn = 0.0
        self._width = 0
        self.update(0, force=True)

    def update(self, done: int, *, force: bool = False) -> None:
        """Redraw with `done` units of `total` (bytes), at most ten times a second."""
        now = time.monotonic()
        if not self.shown or (not force and now - self._drawn < 0.1):
            return
        self._drawn = now
        elapsed = now - self.start
        if self.total:
            rate = done / elapsed / 1e6 if elapsed > 0 else 0.0
            text = (
                f"{self.label}: {done / 1e6:,.1f} of {self.total / 1e6:,.1f} MB "
                f"({done / self.total:.0%}), {rate:,.0f} MB/s"
            )
        else:
            text = f"{self.label}... {elapsed:.1f} s"
        self._write(text)

    def finish(self, message: str) -> None:
        """End the line with `message` (and the time it took)."""
        if self.shown:
            self._write(f"{self.label}: {message} ({time.monotonic() - self.start:.1f} s)")
            self.stream.write("\n")
            self.stream.flush()

    def _write(self, text: str) -> None:
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write(f"\r{text}{' ' * pad}")
        self.stream.flush()
