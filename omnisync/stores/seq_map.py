"""Old seq to new seq for a restored session, kept as arithmetic runs rather than one entry per message.

A session restored into a fresh store keeps its numbers (or shifts them by a constant), so
its messages fall into a few runs ``old = first + k * step`` mapped to ``new = first' + k * step``;
each summary or gap starts a new run. The map grows with the folds and gaps, not the messages.
"""

from __future__ import annotations

import bisect

from .base import SEQ_STEP


class SeqMap:
    """Add pairs in increasing seq order; ask for the new seq of any old one."""

    def __init__(self) -> None:
        self._old: list[int] = []  # each run's first old seq
        self._new: list[int] = []  # its first new seq
        self._step: list[int] = []
        self._count: list[int] = []

    def __len__(self) -> int:
        return len(self._old)

    def add(self, old: int, new: int) -> None:
        if self._old:
            first_old, first_new, count = self._old[-1], self._new[-1], self._count[-1]
            if count == 1 and old > first_old and old - first_old == new - first_new:
                self._step[-1] = old - first_old
                self._count[-1] = 2
                return
            step = self._step[-1]
            if count > 1 and old == first_old + count * step and new == first_new + count * step:
                self._count[-1] += 1
                return
        self._old.append(old)
        self._new.append(new)
        self._step.append(0)
        self._count.append(1)

    def new_seq(self, old: int, *, up: bool) -> int:
        """The new seq of the message that had ``old``, or if it is gone, of its nearest neighbour that way."""
        if not self._old:
            return old
        index = bisect.bisect_right(self._old, old) - 1
        if index < 0:
            return self._new[0]
        first, step, count = self._old[index], self._step[index], self._count[index]
        last = first + (count - 1) * step
        if old <= last:
            k = 0 if count == 1 else (-(-(old - first) // step) if up else (old - first) // step)
            return self._new[index] + k * step
        if not up:
            return self._new[index] + (count - 1) * step
        if index + 1 < len(self._old):
            return self._new[index + 1]
        return self._new[index] + (count - 1) * step + SEQ_STEP
