"""A session copied by replaying its messages: how :meth:`MemoryStore.copy_session` copies on a
store that cannot copy on its server (Redis, MongoDB), which calls it.

The messages are read a page at a time and written by :class:`~omnisync.stores.session_replay.SessionReplay`
(``append``, then ``fold`` at each summary, ``deactivate`` for messages an undo left inactive),
so the copy holds the same messages, statuses, summaries and token counts; its seqs are the
source's when the source has no gaps (nothing deleted by ``retention_policy="delete"``, never
cleared), else the same order renumbered. Cost: one read per page and one write per run of
active messages (a page at most) or summary: O(n) in the messages copied.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, StoreError
from .session_replay import SessionReplay

if TYPE_CHECKING:
    from .base import MemoryStore


def copy_by_replay(store: "MemoryStore", agent: str, source_session_id: str, target_session_id: str, last_seq: int) -> int:
    """Copy the source's messages up to ``last_seq`` into the empty target; return how many."""
    refuse_unless_empty(store, agent, target_session_id)
    replay = SessionReplay(store, agent, target_session_id)
    copied: Counter[str] = Counter()
    for message in store.iter_history(agent, source_session_id, include_inactive=True):
        if message.seq is None or message.seq > last_seq:
            break
        copied[message.status] += 1
        if message.is_summary:
            replay.summary(message)
        else:
            replay.add(message)
    replay.flush()
    replay.undone()
    found = Counter(message.status for message in store.iter_history(agent, target_session_id, include_inactive=True))
    if found != copied:
        raise StoreError(
            f"the fork {target_session_id!r} of {agent!r} holds {dict(found)} messages by status, not the {dict(copied)} copied "
            "(is something else writing to it?)"
        )
    return sum(copied.values())


def refuse_unless_empty(store: "MemoryStore", agent: str, target_session_id: str) -> None:
    """A fork goes into a session that holds nothing: refuse one that does, before writing."""
    if store.history_page(agent, target_session_id, None, 1, include_inactive=True):
        raise target_taken(agent, target_session_id)


def target_taken(agent: str, target_session_id: str) -> ConfigurationError:
    """The error of a fork into a session that holds messages, worded alike by every store."""
    return ConfigurationError(f"session {target_session_id!r} of {agent!r} already holds messages: fork into a new session id")
