"""How a transfer reports headway: the records (messages and run records) it will go through, then each one dealt with."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """``start`` once with the total, then ``advance`` per record written or skipped (already there, expired)."""

    def start(self, total: int) -> None: ...

    def advance(self, count: int = 1) -> None: ...


class NoProgress:
    """The default: nobody is watching."""

    def start(self, total: int) -> None:
        pass

    def advance(self, count: int = 1) -> None:
        pass
