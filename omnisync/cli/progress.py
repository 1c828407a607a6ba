"""A one-line progress bar on stderr, for copies and imports long enough to wait for."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
EVERY_SECONDS = 0.1


class Progress:
    """``[#####.....]  45%  450/1000 records``, redrawn in place at most ten times a second.

    A record is a message or a run record. Shown only when ``enabled`` (the caller decides:
    stderr is a terminal, or ``--progress``). The transfer calls :meth:`start` with the source's
    own count, so the bar never runs past 100% if it was low.
    """

    def __init__(self, label: str, *, enabled: bool, unit: str = "records", out: TextIO | None = None) -> None:
        self.label = label
        self.total: int = 0
        self.enabled = enabled
        self.unit = unit
        self.done: int = 0
        self._out = out or sys.stderr
        self._drawn_at = 0.0

    def start(self, total: int) -> None:
        self.total = max(total, 0)

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if self.enabled and now - self._drawn_at >= EVERY_SECONDS:
            self._drawn_at = now
            self._draw()

    def finish(self) -> None:
        """Draw the last state and end the line (nothing if the bar was never enabled)."""
        if self.enabled:
            self._draw()
            self._out.write("\n")
            self._out.flush()

    def _draw(self) -> None:
        total = max(self.total, self.done)
        share = self.done / total if total else 1.0
        filled = int(WIDTH * share)
        bar = "#" * filled + "." * (WIDTH - filled)
        self._out.write(f"\r{self.label} [{bar}] {share:4.0%}  {self.done}/{total} {self.unit}")
        self._out.flush()
