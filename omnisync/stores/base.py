"""The memory store contract every backend implements.

A store keeps messages per (agent, session_id), ordered by ``seq``, and the agent's run
records. Backends implement the abstract primitives; the window rules (bounds, token
budgets, never splitting a tool exchange) are written once here, on top of
:meth:`MemoryStore.latest`, so every backend behaves alike.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from ..errors import NotSerializableError, RunConflictError, StoreError
from ..messages import Message
from ..run_record import RUN, RUN_KINDS, RunRecord
from ..search.hits import Found
from ..search.keyed import SealedTerms
from ..search.scan import bm25_search
from .checked_calls import check_calls_of

SEQ_STEP = 2
"""Messages take seq 2, 4, 6, ...; a summary of messages up to s takes s + 1."""

_TOKEN_PAGE = 256
_TOKENS_PER_MESSAGE_GUESS = 40  # sizes the first page of a token window; later pages double


@dataclass(frozen=True)
class SessionInfo:
    """One session of one agent, as :meth:`MemoryStore.sessions` lists it."""

    agent: str
    session_id: str
    message_count: int
    last_activity: datetime | None


@dataclass(frozen=True)
class StoredEvent:
    """One stored event of a run: its id (1, 2, 3... within the run), SSE name and JSON data."""

    id: int
    name: str
    data: dict[str, Any]


RunCursor = tuple[datetime, str]
"""A place in the pages of an agent's runs: the ``(created_at, run_id)`` of the run before it."""

MAX_EVENTS_READ = 1000
"""The most events one :meth:`MemoryStore.read_events` returns."""


class MemoryStore(ABC):
    """Where messages and run records live. Every method raises on failure.

    A read that cannot be done raises (a :class:`~omnisync.errors.StoreError` or the
    driver's own error); no method ever answers an empty history in place of an error.
    Every method of the contract checks its arguments here, once, before a backend's code
    runs (:mod:`omnisync.stores.checked_calls`): an id some store could not keep is a
    ConfigurationError naming it, on every backend, and nothing is read or written.
    """

    kind: ClassVar[str]
    message_seal: Callable[[Message], Message] | None = None
    """What a message becomes as written, once its seq is known (set by
    :class:`~omnisync.stores.encrypted.EncryptedStore`; None: written as it is). See :meth:`as_stored`."""
    sealed_terms: SealedTerms | None = None
    """The keyed terms of a sealed message the store holds (set by the EncryptedStore): what
    :meth:`reindex` writes for it (:mod:`omnisync.search.keyed`)."""
    keeps_search_index: ClassVar[bool] = False
    """Whether :meth:`search_messages` reads an index the store keeps (else it scans)."""

    event_seal: Callable[[str, str, int, str, dict[str, Any]], dict[str, Any]] | None = None
    """What an event's data becomes as written, once its id is known: ``(agent, run_id, id, name,
    data)`` to the data stored (set by the encrypted store; None: written as it is). See :meth:`events_as_stored`."""

    def as_stored(self, placed: Sequence[Message]) -> Sequence[Message]:
        """``placed`` messages (seq given) as :meth:`append` writes them: sealed when encryption is on."""
        seal = self.message_seal
        return placed if seal is None else [seal(m) for m in placed]

    def events_as_stored(
        self, agent: str, run_id: str, first_id: int, events: Sequence[tuple[str, dict[str, Any]]], checked: list[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """The ``checked`` events (:func:`check_events` of ``events``), numbered from ``first_id``,
        as :meth:`append_events` writes them: sealed, each bound to its id, when encryption is on."""
        seal = self.event_seal
        if seal is None:
            return checked
        return check_events([(name, seal(agent, run_id, first_id + i, name, data)) for i, (name, data) in enumerate(events)])

    @property
    def database_system(self) -> str | None:
        """``db.system.name`` of the server every call is a round trip to (telemetry's store
        spans); None where calls stay in this process, which makes no span: this store, SQLite."""
        return None

    @property
    def writes_run_atomically(self) -> bool:
        """True where :meth:`append_and_save_run` checks the record's version before it writes
        anything (both or neither); elsewhere a run reads its record just before its last write,
        so a run whose record someone else changed (a clear, a take-over) writes nothing."""
        return False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_calls_of(cls)

    # --- messages -------------------------------------------------------------------

    @abstractmethod
    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        """Write ``messages`` as one atomic step and return them with ``seq`` and ``created_at``.

        ``seq`` is assigned inside the write: the next even numbers after the session's last,
        strictly increasing even when several processes append to one session at once.
        """

    @abstractmethod
    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        """Up to ``limit`` active messages with ``seq < before_seq``, newest first.

        One bounded, indexed read: its cost depends on ``limit``, not on the session's length.
        """

    @abstractmethod
    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        """Every active message of the session (with ``include_inactive``, every stored one), oldest first."""

    @abstractmethod
    def history_page(
        self, agent: str, session_id: str, after_seq: int | None, limit: int, include_inactive: bool = False
    ) -> list[Message]:
        """Up to ``limit`` messages with ``seq > after_seq`` (None: from the start), oldest first.

        Active only, or with ``include_inactive`` every stored one. One bounded read: its cost
        depends on ``limit``, not on the session's length. The next page starts after the last
        seq of this one (see :meth:`iter_history`).
        """

    def iter_history(
        self, agent: str, session_id: str, include_inactive: bool = False, page_size: int = 500
    ) -> Iterator[Message]:
        """The session's history, oldest first, read ``page_size`` messages at a time.

        Holds one page in memory, never the whole session. Each page starts after the last seq
        seen, so a message appended while paging is read once (if it lands after the cursor) and
        none is read twice. Not one snapshot: a fold made meanwhile may show across two pages.
        """
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, not {page_size!r}")
        after: int | None = None
        while True:
            page = self.history_page(agent, session_id, after, page_size, include_inactive=include_inactive)
            yield from page
            if len(page) < page_size:
                return
            after = page[-1].seq

    def delete_message(self, agent: str, session_id: str, seq: int) -> bool:
        """Delete the one message of the session at ``seq`` (active or not); whether there was one.

        The session's seq counter stays, so no later message takes that seq. Run records are not touched.
        """
        raise StoreError(f"{type(self).__name__} cannot delete one message of a session; clear the session instead")

    @abstractmethod
    def clear(self, agent: str, session_id: str | None = None) -> int:
        """Delete one session of ``agent`` (or, with no id, all of its sessions); return how many messages went.

        An id that does not exist deletes nothing. Run records are not touched.
        """

    def sessions(self, agent: str | None = None) -> list[SessionInfo]:
        """The sessions that hold messages, of one agent or of all, with counts and last activity.

        In :meth:`sessions_page` order: the pages read to the end (a store may read them in one
        go). Holds every one in memory: for a store with very many sessions, read them with
        :meth:`iter_sessions`.
        """
        return list(self.iter_sessions(agent))

    @abstractmethod
    def sessions_page(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionInfo]:
        """Up to ``limit`` sessions that hold messages, of ``agent`` (None: of every agent),
        ordered by ``(agent, session_id)``, strictly after the ``after`` cursor (None: from the start).

        The order is the store's own comparison of the two strings, the same one the cursor is
        compared with, so pages never skip or repeat a session: Python's order of ``str``
        (code points, which is the byte order of UTF-8) on every store but PostgreSQL, which
        orders by the columns' collation (Python's order in a database whose collation is C).
        A session that holds no messages (a cleared one) is left out. Each store's docstring
        says what a page costs: a bounded read where the engine allows, never the whole
        listing. The next page starts after the last session of this one (see :meth:`iter_sessions`).
        ``limit`` below 1 is a ValueError.
        """

    def iter_sessions(self, agent: str | None = None, page_size: int = 500) -> Iterator[SessionInfo]:
        """The sessions :meth:`sessions` lists, in the same order, read ``page_size`` at a time.

        Holds one page in memory, never the whole listing. Each page starts after the last
        session seen, so a session that first gets messages while paging is listed once (if
        it sorts after the cursor) and none twice. Not one snapshot: counts are each page's.
        """
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, not {page_size!r}")
        after: tuple[str, str] | None = None
        while True:
            page = self.sessions_page(agent, after, page_size)
            yield from page
            if len(page) < page_size:
                return
            after = (page[-1].agent, page[-1].session_id)

    @abstractmethod
    def fold(
        self,
        agent: str,
        session_id: str,
        summary: Message,
        *,
        first_seq: int,
        last_seq: int,
        expected_count: int,
        delete: bool,
    ) -> Message | None:
        """Replace the active messages in ``[first_seq, last_seq]`` by ``summary``, atomically.

        A compare-and-set: it happens only if exactly ``expected_count`` messages are active in
        that range (so a fold another process already made is not made twice); otherwise
        nothing changes and it returns None. The summary is written with ``seq = last_seq + 1``.
        The folded messages are marked inactive, or with ``delete`` removed, in the same write.
        """

    def replace_values(self, agent: str, session_id: str, messages: Sequence[Message]) -> int:
        """Write each message's content, tool calls and metadata over those of the stored message
        with its seq (status, role, tokens and times unchanged); return how many were found.
        What ``omnisync encrypt`` seals a store in place with, a page at a time."""
        raise NotImplementedError(f"{type(self).__name__} cannot rewrite stored values in place")

    def replace_events(self, agent: str, run_id: str, events: Sequence[StoredEvent]) -> int:
        """Write each event's data over that of the run's stored event with its id (name and id
        unchanged); return how many were found. What ``omnisync encrypt`` seals events with."""
        raise NotImplementedError(f"{type(self).__name__} cannot rewrite stored events in place")

    # --- runs -----------------------------------------------------------------------

    @abstractmethod
    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        """Save ``record`` and return it with its new version.

        ``expected_version=None`` creates it (and fails if it exists); otherwise the save
        happens only if the stored version is still ``expected_version``. A failed
        compare-and-set raises :class:`~omnisync.errors.RunConflictError`. A record with
        ``expires_at`` may be expired by the backend itself (Redis expiry, a MongoDB TTL index).
        """

    @abstractmethod
    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        """The run record, or None if there is none."""

    def load_lease(self, agent: str, run_id: str) -> tuple[RunRecord | None, RunRecord | None]:
        """A lease record and the record of the run it names as holder (``lease_owner``), each
        or None. Every run reads its session's lease this way: a store that can, reads both at once."""
        lease = self.load_run(agent, run_id)
        holder = self.load_run(agent, lease.lease_owner) if lease is not None and lease.lease_owner else None
        return lease, holder

    @abstractmethod
    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        """This agent's run records, oldest first, optionally of one status or session."""

    def runs_page(
        self,
        agent: str,
        after: RunCursor | None = None,
        limit: int = 100,
        *,
        status: str | None = None,
        session_id: str | None = None,
        kind: str = RUN,
    ) -> list[RunRecord]:
        """Up to ``limit`` of the agent's runs (records of kind ``run``, or of the ``kind`` given:
        see :data:`~omnisync.run_record.RUN_KINDS`), optionally of one status or session, ordered
        by ``(created_at, run_id)``, strictly after the ``after`` cursor (:func:`run_cursor` of
        the last run of the page before; None: from the start).

        A run created while paging is listed once, if it sorts after the cursor (a new run
        does). A record with no ``created_at`` (omnisync writes none) is not paged. The SQL, Redis
        and MongoDB stores read a page with bounded reads, and say in their ``_page_of_runs``
        docstrings what a page costs. ``limit`` below 1 is a ValueError.
        """
        return self._page_of_runs(agent, after, page_limit(limit, "runs"), status, session_id, kind)

    def _page_of_runs(
        self, agent: str, after: RunCursor | None, limit: int, status: str | None, session_id: str | None, kind: str
    ) -> list[RunRecord]:
        """:meth:`runs_page`, ``limit`` checked. This default reads :meth:`list_runs` whole."""
        found = [
            r
            for r in self.list_runs(agent, status=status, session_id=session_id)
            if r.kind == kind and r.created_at is not None and (after is None or run_cursor(r) > after)
        ]
        return sorted(found, key=run_cursor)[:limit]

    def iter_runs(
        self, agent: str, *, status: str | None = None, session_id: str | None = None, kind: str = RUN, page_size: int = 500
    ) -> Iterator[RunRecord]:
        """The agent's runs (or records of ``kind``) in :meth:`runs_page` order, read ``page_size`` at a time."""
        after: RunCursor | None = None
        while True:
            page = self.runs_page(agent, after, page_size, status=status, session_id=session_id, kind=kind)
            yield from page
            if len(page) < page_size:
                return
            after = run_cursor(page[-1])

    def iter_records(self, agent: str, *, session_id: str | None = None, page_size: int = 500) -> Iterator[RunRecord]:
        """Every record the agent keeps beside its messages (runs, session leases, summary claims
        and idempotency keys: :data:`~omnisync.run_record.RUN_KINDS`), optionally of one session,
        a kind at a time, each in :meth:`runs_page` order: what an export or a copy carries,
        read ``page_size`` at a time, never held whole."""
        for kind in RUN_KINDS:
            yield from self.iter_runs(agent, session_id=session_id, kind=kind, page_size=page_size)

    def run_agents(self) -> list[str]:
        """Every agent that keeps run records (of any kind), sorted, whether or not it has
        sessions: a run that failed before writing a message leaves an agent with runs only."""
        raise NotImplementedError(f"{type(self).__name__} does not list the agents of its run records")

    @abstractmethod
    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        """Delete this agent's finished runs that finished before ``finished_before``, and their
        events (:meth:`append_events`); return how many runs went."""

    # --- a run's events ---------------------------------------------------------------

    @abstractmethod
    def append_events(self, agent: str, run_id: str, events: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """Store ``(name, data)`` events of a run as one atomic write; return the last one's id.

        They take consecutive ids after the run's last, ending at the returned one: ids start at
        1 and only grow, even when two processes append to one run at once (a worker whose run
        lease ran out while another took the run over), and a reader never sees an id before a
        smaller one. They go with the run's record: :meth:`prune_runs` deletes them, and a
        backend that expires a record by itself (``expires_at``) expires them too.
        """

    @abstractmethod
    def read_events(self, agent: str, run_id: str, after: int = 0, limit: int = MAX_EVENTS_READ) -> list[StoredEvent]:
        """Up to ``limit`` events of the run with an id above ``after``, in id order: one bounded read."""

    # --- lifecycle ------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None:
        """Release the connections this store owns. A store keeps them open until then."""

    # --- editing and searching history (omnisync/history_edit.py) ----------------------

    def copy_session(self, agent: str, source_session_id: str, target_session_id: str, *, last_seq: int) -> int:
        """Copy every stored message of the source with ``seq <= last_seq`` (active and inactive,
        summaries, token counts) into the target, which must hold no messages; return how many.

        The source is only read. A store copies on its server where it can, and says what the copy
        costs; one that cannot replays the messages through :meth:`append` and :meth:`fold`, a page
        at a time (:func:`omnisync.stores.copy_by_replay.copy_by_replay`).
        """
        raise NotImplementedError(f"{type(self).__name__} cannot copy a session")

    def deactivate(self, agent: str, session_id: str, *, first_seq: int, last_seq: int, expected_count: int) -> bool:
        """Mark the active messages in ``[first_seq, last_seq]`` inactive (kept for ``include_inactive``).

        A compare-and-set, like :meth:`fold`: only if exactly ``expected_count`` are active in the
        range; otherwise nothing changes and it returns False.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot mark messages inactive")

    def search_messages(
        self,
        agent: str,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        limit: int = 10,
        before: datetime | None = None,
        after: datetime | None = None,
    ) -> list[Found]:
        """The ``limit`` active messages of ``agent`` that hold every one of ``terms``
        (:func:`omnisync.search.terms.query_terms`), best first.

        This default is the bounded scan of :mod:`omnisync.search.scan`; a store with a
        full-text index overrides it and keeps that index in the same write as each message.
        """
        if not terms or limit < 1:
            return []
        if session_id is not None:
            messages: Iterator[Message] = self.iter_history(agent, session_id)
        else:
            messages = (m for info in self.iter_sessions(agent) for m in self.iter_history(agent, info.session_id))
        return bm25_search(messages, list(terms), limit, before=before, after=after)

    def reindex(self, agent: str | None = None) -> int:
        """Rebuild the search index of one agent's messages (None: every agent's); return how many
        messages it holds terms of. A store that keeps no index (it scans) has nothing to rebuild: 0."""
        return 0

    # --- what one run does, in as few round trips as the backend allows ---------------
    #
    # Each is the composition of the methods above, and that is the default; a backend that
    # can do one in a single round trip overrides it (Redis, on one server).

    def load_lease_and_window(
        self, agent: str, lease_id: str, session_id: str, *, max_messages: int | None = None, max_tokens: int | None = None
    ) -> tuple[RunRecord | None, RunRecord | None, list[Message]]:
        """:meth:`load_lease` and :meth:`window` together: what a run reads before it starts.

        Not one snapshot unless the backend says so: the caller takes the session with a
        compare-and-set on the lease it read, so a window read before another run took the
        session is never used.
        """
        lease, holder = self.load_lease(agent, lease_id)
        return lease, holder, self.window(agent, session_id, max_messages=max_messages, max_tokens=max_tokens)

    def save_runs(self, saves: Sequence[tuple[RunRecord, int | None]]) -> list[RunRecord]:
        """:meth:`save_run` of each ``(record, expected_version)``, in order; records of one agent.

        Raises RunConflictError at the first that does not fit. A backend that overrides this
        checks every version first and writes all or none; by default the saves before the
        one that did not fit stay saved.
        """
        return [self.save_run(record, expected_version) for record, expected_version in saves]

    def append_and_save_run(
        self, agent: str, session_id: str, messages: Sequence[Message], record: RunRecord, expected_version: int | None
    ) -> tuple[list[Message], RunRecord]:
        """:meth:`append` the messages of ``record``'s run, then :meth:`save_run` the record.

        A record whose ``first_written_seq`` is None is saved with the seq of the first message
        written. A backend that overrides this checks the record's version first and writes
        both or neither; by default a record that does not fit raises after the messages are
        written (the run's next save fails on the same conflict).
        """
        written = self.append(agent, session_id, messages)
        if record.first_written_seq is None and written:
            record = record.evolve(first_written_seq=written[0].seq)
        return written, self.save_run(record, expected_version)

    # --- written once for every backend ---------------------------------------------

    def window(
        self,
        agent: str,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        before_seq: int | None = None,
    ) -> list[Message]:
        """The most recent active messages (with ``seq < before_seq``) within the bounds, oldest first.

        Never starts inside a tool exchange: tool results whose assistant call fell outside
        the bounds are left out too. The token bound reads pages of stored token counts, so
        its cost follows the window's size, not the session's.
        """
        if max_tokens is None:
            if max_messages is None:
                raise ValueError("window() needs max_messages or max_tokens")
            newest_first = self.latest(agent, session_id, max_messages, before_seq=before_seq)
        else:
            newest_first = self._token_window(agent, session_id, max_tokens, max_messages, before_seq)
        return drop_orphan_tool_results(list(reversed(newest_first)))

    def _token_window(
        self, agent: str, session_id: str, max_tokens: int, max_messages: int | None, before: int | None
    ) -> list[Message]:
        chosen: list[Message] = []
        spent = 0
        page_size = min(_TOKEN_PAGE, max(16, max_tokens // _TOKENS_PER_MESSAGE_GUESS))
        while True:
            room = page_size if max_messages is None else min(page_size, max_messages - len(chosen))
            if room <= 0:
                return chosen
            page = self.latest(agent, session_id, room, before_seq=before)
            for message in page:
                spent += max(message.tokens, 1)
                if spent > max_tokens:
                    return chosen
                chosen.append(message)
            if len(page) < room:
                return chosen
            before = page[-1].seq
            page_size = min(_TOKEN_PAGE * 4, page_size * 2)

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


check_calls_of(MemoryStore)


def drop_orphan_tool_results(oldest_first: list[Message]) -> list[Message]:
    """Drop leading tool results: their assistant call is not in the window."""
    start = 0
    while start < len(oldest_first) and oldest_first[start].is_tool_result:
        start += 1
    return oldest_first[start:]


def check_events(events: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, str]]:
    """The events as (name, JSON text), refused before anything is written if JSON cannot hold them."""
    checked = []
    for name, data in events:
        if not isinstance(name, str) or not name:
            raise ValueError(f"an event's name must be a non-empty string, not {name!r}")
        try:
            checked.append((name, json.dumps(data, ensure_ascii=False, separators=(",", ":"))))
        except (TypeError, ValueError) as exc:
            raise NotSerializableError(f"an event's data must be JSON data: {exc}. Nothing was written.") from None
    return checked


def page_limit(limit: int, of: str = "sessions") -> int:
    """A page's ``limit`` (:meth:`MemoryStore.sessions_page`, :meth:`MemoryStore.runs_page`), checked."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number of {of}, at least 1, not {limit!r}: pass the page size you want")
    return limit


def run_cursor(record: RunRecord) -> RunCursor:
    """Where a page of runs that ends with ``record`` leaves off (:meth:`MemoryStore.runs_page`)."""
    if record.created_at is None:
        raise ValueError(f"run {record.run_id!r} has no created_at, so no place in the pages of runs")
    return (record.created_at, record.run_id)


def events_limit(after: int, limit: int) -> int:
    """``limit`` checked, and capped at MAX_EVENTS_READ."""
    if not isinstance(after, int) or after < 0:
        raise ValueError(f"after must be an event id (an int >= 0), not {after!r}")
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be an int >= 1, not {limit!r}")
    return min(limit, MAX_EVENTS_READ)


def run_conflict(record: RunRecord, expected_version: int | None) -> RunConflictError:
    """The error of a save_run whose compare-and-set did not hold, worded alike by every store."""
    if expected_version is None:
        return RunConflictError(f"run {record.run_id} already exists")
    return RunConflictError(f"run {record.run_id} was changed by someone else (expected version {expected_version})")
