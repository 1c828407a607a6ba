"""Fork, undo and search of an agent's sessions: what ``agent.fork_session``, ``agent.undo``,
``agent.regenerate`` and ``agent.search_history`` do, on any store.

- **fork** copies the source's stored messages up to and including seq ``at`` into a new
  session (:meth:`~omnisync.stores.base.MemoryStore.copy_session`; the source is only read).
  Only committed turns: the messages of a run still holding the source (running or paused) are
  never copied, and ``at`` inside such a run is refused. ``at`` on a tool call (an assistant
  message with ``tool_calls``) or one of its results is moved to the exchange's end, its last
  tool result, so a fork never holds half a tool exchange; an exchange whose results are not
  all written is refused. ``at`` on an inactive message (folded into a summary, or undone) is
  refused: its summary lies after it, so the fork would lose that part of the history.
- **undo** takes the session the way a run does (its lease, so it is refused while a run,
  running or paused, holds the session, and no run starts meanwhile), marks the last run's
  messages inactive (:meth:`~omnisync.stores.base.MemoryStore.deactivate`, a compare-and-set):
  from the newest active user message to the end, kept for ``include_inactive=True``.
- **search** turns the query into terms (:mod:`omnisync.search.terms`) and asks the store.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from . import run_state
from .errors import ConfigurationError, RunConflictError, SessionBusyError
from .messages import ACTIVE, INACTIVE, Message
from .search.hits import SearchHit, hit_of
from .search.terms import query_terms
from .stores.base import MemoryStore

EDIT_LEASE_SECONDS = 60
"""How long an undo holds its session at most (it lets go as soon as it is done)."""
_PAGE = 64
MAX_SEARCH_LIMIT = 100
MAX_SEQ = 2**31 - 1
"""The largest seq a store keeps (the SQL column is a 32-bit integer)."""


def fork(store: MemoryStore, agent: str, session_id: str, at: int | None, new_session_id: str | None) -> str:
    """Copy ``session_id`` up to ``at`` into ``new_session_id`` (None: a fresh id); return the new id."""
    if at is not None and (isinstance(at, bool) or not isinstance(at, int) or not 1 <= at <= MAX_SEQ):
        raise ConfigurationError(f"at must be the seq of a message of the session (an int from its history), not {at!r}")
    target = new_session_id if new_session_id is not None else f"{session_id}-fork-{uuid.uuid4().hex[:12]}"
    if target == session_id:
        raise ConfigurationError("new_session_id must differ from the session forked")
    running = _uncommitted_from(store, agent, session_id)
    if at is None:
        newest = _last_committed(store, agent, session_id, running)
        if newest is None:
            raise ConfigurationError(f"session {session_id!r} has no committed messages to fork")
        last = newest
    else:
        if running is not None and at >= running[1]:
            raise SessionBusyError(
                f"message {at} of session {session_id!r} belongs to run {running[0]}, which is still going: "
                "fork at an earlier seq, or once the run has ended",
                run_id=running[0],
            )
        last = _fork_point(store, agent, session_id, at)
    store.copy_session(agent, session_id, target, last_seq=last)
    return target


@contextmanager
def _holding(store: MemoryStore, agent: str, session_id: str, edit: str) -> Iterator[None]:
    """The session's lease for one edit outside a run: refused (SessionBusyError) while a run holds it."""
    editor = f"{edit}-{uuid.uuid4().hex}"
    abandoned = run_state.take_session(store, agent, session_id, editor, lease_seconds=EDIT_LEASE_SECONDS)
    if abandoned is not None:
        raise SessionBusyError(
            f"session {session_id!r} is held by run {abandoned.run_id}, whose driver stopped without ending it: "
            f"cancel it (cancel_run({abandoned.run_id!r})) or run the session once (that closes it), then {edit}",
            run_id=abandoned.run_id,
        )
    try:
        yield
    finally:
        run_state.release_session(store, agent, session_id, editor)


def undo(store: MemoryStore, agent: str, session_id: str) -> list[Message]:
    """Mark the last run's messages of the session inactive; return them (oldest first)."""
    with _holding(store, agent, session_id, "undo"):
        tail = _last_turn(store, agent, session_id)
        if not store.deactivate(agent, session_id, first_seq=tail[0].seq, last_seq=tail[-1].seq, expected_count=len(tail)):  # type: ignore[arg-type]
            raise RunConflictError(f"session {session_id!r} changed while its last run was undone (a summary folded it?): nothing was changed; try again")
    for message in tail:
        message.status = INACTIVE
    return tail


def add_messages(store: MemoryStore, agent: str, session_id: str, messages: list[Message]) -> list[Message]:
    """Append ``messages`` to the session outside any run, holding its lease (refused while a run holds it)."""
    with _holding(store, agent, session_id, "add messages"):
        return store.append(agent, session_id, messages)


def delete_message(store: MemoryStore, agent: str, session_id: str, seq: int) -> bool:
    """Delete the message at ``seq``, holding the session's lease (refused while a run holds it); whether there was one."""
    with _holding(store, agent, session_id, "delete a message"):
        return store.delete_message(agent, session_id, seq)


def search(
    store: MemoryStore,
    agent: str,
    query: str,
    session_id: str | None,
    limit: int,
    before: datetime | None,
    after: datetime | None,
) -> list[SearchHit]:
    """The agent's active messages holding every term of ``query``, best first (none for a query with no terms)."""
    if not isinstance(query, str):
        raise ConfigurationError(f"query must be a string, not {type(query).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise ConfigurationError(f"limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}, not {limit!r}")
    for name, moment in (("before", before), ("after", after)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            raise ConfigurationError(f"{name} must be a timezone-aware datetime, not {moment!r}")
    terms = query_terms(query)
    if not terms:
        return []
    found = store.search_messages(agent, terms, session_id=session_id, limit=limit, before=before, after=after)
    return [hit_of(f, terms) for f in found]


def _uncommitted_from(store: MemoryStore, agent: str, session_id: str) -> tuple[str, int] | None:
    """The run holding the session and the first seq it wrote, if it is unfinished and has written (its turn is not committed)."""
    _lease, holder = store.load_lease(agent, run_state.session_lease_id(session_id))
    if holder is None or holder.is_finished or holder.first_written_seq is None:
        return None
    return holder.run_id, holder.first_written_seq


def _last_committed(store: MemoryStore, agent: str, session_id: str, running: tuple[str, int] | None) -> int | None:
    """The newest stored seq (undone messages too) before the run still going, if any; None when there is none.

    Read now, so a run that starts (or writes) while the copy is made adds nothing to it."""
    before = running[1] if running is not None else None
    newest = store.latest(agent, session_id, 1, before_seq=before)
    last = newest[0].seq if newest else None
    while True:  # inactive messages after the newest active one (an undo's), a page at a time
        page = store.history_page(agent, session_id, last, _PAGE, include_inactive=True)
        kept = [m.seq for m in page if m.seq is not None and (before is None or m.seq < before)]
        if kept:
            last = kept[-1]
        if len(page) < _PAGE or len(kept) < len(page):
            return last


def _fork_point(store: MemoryStore, agent: str, session_id: str, at: int) -> int:
    found = store.history_page(agent, session_id, at - 1, 1, include_inactive=True)
    if not found or found[0].seq != at:
        raise ConfigurationError(f"session {session_id!r} has no message at seq {at}: pass a seq from its history (include_inactive=True shows them)")
    message = found[0]
    if message.status != ACTIVE:
        raise ConfigurationError(
            f"message {at} of session {session_id!r} is inactive (folded into a summary, or undone): fork at an active message"
        )
    if message.is_tool_result or message.tool_calls:
        return _exchange_end(store, agent, session_id, message)
    return at


def _exchange_end(store: MemoryStore, agent: str, session_id: str, message: Message) -> int:
    """The seq of the last tool result of the exchange ``message`` is part of; refused if it is not all written."""
    call = message
    if message.is_tool_result:
        page = store.latest(agent, session_id, _PAGE, before_seq=message.seq)
        callers = [m for m in page if m.tool_calls]
        if not callers:
            raise ConfigurationError(f"the tool result at seq {message.seq} has no tool call before it to fork with")
        call = callers[0]
    wanted = {c.get("id") for c in call.tool_calls or []}
    last = call.seq
    after = call.seq
    while wanted:
        page = store.history_page(agent, session_id, after, _PAGE)
        results = []
        for m in page:
            if not m.is_tool_result:
                break
            results.append(m)
        for m in results:
            wanted.discard(m.tool_call_id)
            last = m.seq
        if len(results) < len(page) or len(page) < _PAGE:
            break
        after = page[-1].seq
    if wanted:
        raise ConfigurationError(
            f"the tool call at seq {call.seq} of session {session_id!r} does not have all its results yet: "
            "fork before the call, or once its run has written them"
        )
    return last  # type: ignore[return-value]


def _last_turn(store: MemoryStore, agent: str, session_id: str) -> list[Message]:
    """The active messages from the newest active user message to the end, oldest first."""
    tail: list[Message] = []
    before: int | None = None
    while True:
        page = store.latest(agent, session_id, _PAGE, before_seq=before)
        for message in page:
            if message.is_summary:
                raise ConfigurationError(
                    f"the last run of session {session_id!r} was folded into a summary: there is no whole run left to undo"
                )
            tail.append(message)
            if message.role == "user":
                tail.reverse()
                return tail
        if len(page) < _PAGE:
            raise ConfigurationError(f"session {session_id!r} has no run to undo (no active user message)")
        before = page[-1].seq
