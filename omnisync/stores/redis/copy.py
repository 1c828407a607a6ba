"""The Redis store's fork: the source's members copied as they are, without decoding a message.

Both of the source's sets (active and inactive) are read at one moment by one script (so a
fold in between cannot show a message twice or not at all); the members up to ``last_seq``
are written into the empty target with their seqs, statuses, times and token counts by the
script that writes sealed messages at seqs already reserved (``append_placed``), a batch of
:data:`COPY_BATCH` a call, after the target's seq counter is moved past them. On a Cluster
the source and the target lie in different slots: each script touches one session. O(n):
one read, n / COPY_BATCH writes, no JSON decoded or encoded, against a replay's page reads,
appends and its read of the copy again to check it. Not one transaction: a copy that fails
half-way leaves the target partly written (a fork into it again is refused: clear it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ContextManager, Protocol



class _Sessions(Protocol):
    """What of the Redis store a copy uses: its session keys, error mapping and scripts."""

    @property
    def _history(self) -> Callable[..., Any]: ...

    @property
    def _reserve_seqs(self) -> Callable[..., Any]: ...

    @property
    def _append_placed(self) -> Callable[..., Any]: ...

    def _session_keys(self, agent: str, session_id: str) -> tuple[str, str, str]: ...

    def _errors(self) -> ContextManager[None]: ...

    def _list_session(self, agent: str, session_id: str) -> None: ...

COPY_BATCH = 1000
"""Messages per ``append_placed`` call."""


def copy_members(store: _Sessions, agent: str, source: str, target: str, last_seq: int, now_us: int) -> int:
    """The source's messages up to ``last_seq`` written as the target's, stamped ``now_us``; how
    many. The caller has found the target empty."""
    active, inactive, _ = store._session_keys(agent, source)
    keys = list(store._session_keys(agent, target))
    with store._errors():
        kept, folded = store._history(keys=[active, inactive])
        items = sorted(
            (seq, status + rest)
            for status, members in (("a", kept), ("i", folded))
            for seq, rest in map(_split, members)
            if seq <= last_seq
        )
        if not items:
            return 0
        counter = items[-1][0] // 2 * 2  # the next append takes the even seq after the last copied
        if int(store._reserve_seqs(keys=[keys[2]], args=[counter, "0"])) < 0:
            store._list_session(agent, target)
            store._reserve_seqs(keys=[keys[2]], args=[counter, "1"])
        for start in range(0, len(items), COPY_BATCH):
            args: list[Any] = [now_us]
            for seq, item in items[start : start + COPY_BATCH]:
                args += [seq, item]
            store._append_placed(keys=keys, args=args)
    return len(items)


def _split(member: bytes | str) -> tuple[int, str]:
    """A stored member ``{"seq":N,REST`` as N and ``REST`` (what append_placed puts after the seq)."""
    text = member.decode() if isinstance(member, bytes) else member
    comma = text.index(",")
    return int(text[7:comma]), text[comma + 1 :]
