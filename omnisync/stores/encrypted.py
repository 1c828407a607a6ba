"""EncryptedStore: any store, its values sealed as written and opened as read.

The one place values are encrypted for every backend. Each store calls its
:attr:`~omnisync.stores.base.MemoryStore.message_seal` on the messages it writes once their
seq is known (inside its own atomic write); everything else (run records, events, summaries)
is sealed here before the store sees it, and everything read is opened here. Like every
store it saves what it is given; only :mod:`omnisync.run_state` decides what a run record
becomes and saves it (the data key records too: :mod:`omnisync.run_state.data_keys`, handed
to this store as ``save_data_key`` by the router).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..encryption import sealing
from ..encryption.data_keys import DataKey
from ..encryption.envelope import aesgcm
from ..encryption.keys import Encryption
from ..messages import Message, utcnow
from ..run_record import DATA_KEY, RUN_KINDS, RunRecord
from ..search.hits import Found
from .base import MAX_EVENTS_READ, MemoryStore, RunCursor, StoredEvent, SessionInfo
from .copy_by_replay import copy_by_replay
from .encrypted_keys import DataKeys, SaveDataKey
from .encrypted_search import SearchKeys
from ..search.terms import index_terms, searchable_text


class EncryptedStore(MemoryStore):
    """``inner`` with encryption at rest (:class:`~omnisync.encryption.Encryption`); what the
    router builds when given ``encryption=``. A value that does not open raises
    :class:`~omnisync.errors.DecryptionError` and nothing is skipped, changed or deleted.
    ``save_data_key`` saves a session's first data key record
    (:func:`omnisync.run_state.data_keys.create`, what the router gives)."""

    def __init__(self, inner: MemoryStore, encryption: Encryption, *, save_data_key: SaveDataKey) -> None:
        aesgcm(encryption.keys[encryption.current])  # cryptography is there, or MissingDependencyError now
        self.inner: MemoryStore = inner
        self.encryption: Encryption = encryption
        self.data_keys: DataKeys = DataKeys(inner, encryption, save_data_key)
        self._run_sessions: dict[tuple[str, str], str] = {}
        self.search_keys: SearchKeys = SearchKeys(self.data_keys)
        inner.message_seal = self.seal_placed
        inner.sealed_terms = self._sealed_terms
        inner.event_seal = self.seal_event

    def __getattr__(self, name: str) -> Any:  # what only the backend has (its client, engine, kind...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def database_system(self) -> str | None:
        return self.inner.database_system

    @property
    def writes_run_atomically(self) -> bool:
        """As the store it wraps (with encryption on, PostgreSQL writes a run's messages and record in one transaction)."""
        return self.inner.writes_run_atomically

    # --- sealing and opening ------------------------------------------------------------

    def seal_placed(self, message: Message) -> Message:
        """``message`` (its seq known) as stored: content, tool calls and metadata sealed (and, for
        a store with an index, the keyed hashes of its terms: omnisync.stores.encrypted_search)."""
        sealed = sealing.seal_message(self.data_keys.for_writing(message.agent, message.session_id), message)
        return self.search_keys.keyed(sealed, message) if self.inner.keeps_search_index else sealed

    def _keys_for_writing(self, agent: str, session_id: str) -> None:
        """The session's data key and the agent's search key, read before the store's write (inside which the seal runs)."""
        self.data_keys.for_writing(agent, session_id)
        if self.inner.keeps_search_index:
            self.search_keys.hasher(agent)

    def _sealed_terms(self, stored: Message) -> list[str]:
        """The keyed terms of a message as the store holds it, sealed: its content opened, then hashed."""
        bare = Message(stored.role, stored.content, agent=stored.agent, session_id=stored.session_id, seq=stored.seq)
        opened = self.open_messages(stored.agent, stored.session_id, [bare])[0]
        return self.search_keys.hasher(stored.agent).terms(index_terms(searchable_text(opened.content)))

    def _opener(self, agent: str, session_id: str) -> sealing.Opener:
        def data_key(data_key_id: str, describe: str) -> DataKey:
            return self.data_keys.for_reading(agent, session_id, data_key_id, describe)

        return data_key

    def open_messages(self, agent: str, session_id: str, messages: list[Message]) -> list[Message]:
        """Messages of one session as the store it wraps holds them, opened."""
        return sealing.open_messages(messages, self._opener(agent, session_id), self.encryption.accept_plaintext, self.data_keys.opened_texts)

    def _seal_record(self, record: RunRecord) -> RunRecord:
        self._run_sessions[(record.agent, record.run_id)] = record.session_id
        if not sealing.needs_sealing(record):
            return record
        return sealing.seal_record(self.data_keys.for_writing(record.agent, record.session_id), record)

    def open_record(self, record: RunRecord | None) -> RunRecord | None:
        """A record as the store it wraps holds it, opened."""
        if record is None:
            return None
        self._run_sessions[(record.agent, record.run_id)] = record.session_id
        return sealing.open_record(record, self._opener(record.agent, record.session_id), self.encryption.accept_plaintext)

    def _opened_records(self, records: list[RunRecord]) -> list[RunRecord]:
        return [r for r in map(self.open_record, records) if r is not None]

    @staticmethod
    def _as_given(saved: RunRecord, given: RunRecord) -> RunRecord:
        """The record the store saved, with the clear values it was given."""
        return saved if saved is given else replace(saved, **{name: getattr(given, name) for name in sealing.RUN_FIELDS})

    def _events_session(self, agent: str, run_id: str) -> str:
        """The session whose data key seals a run's events (a run without a record: a key of its own)."""
        session = self._run_sessions.get((agent, run_id))
        if session is None:
            record = self.inner.load_run(agent, run_id)
            session = record.session_id if record is not None else f"run:{run_id}"
            self._run_sessions[(agent, run_id)] = session
        return session

    # --- messages -----------------------------------------------------------------------

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        if messages:
            self._keys_for_writing(agent, session_id)
        return self.inner.append(agent, session_id, messages)

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        return self.open_messages(agent, session_id, self.inner.latest(agent, session_id, limit, before_seq))

    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        return self.open_messages(agent, session_id, self.inner.history(agent, session_id, include_inactive))

    def history_page(
        self, agent: str, session_id: str, after_seq: int | None, limit: int, include_inactive: bool = False
    ) -> list[Message]:
        return self.open_messages(agent, session_id, self.inner.history_page(agent, session_id, after_seq, limit, include_inactive))

    def window(
        self,
        agent: str,
        session_id: str,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        before_seq: int | None = None,
    ) -> list[Message]:
        """The store's window (token counts and roles are in clear), then opened: a message that
        does not open raises, it is never left out."""
        chosen = self.inner.window(agent, session_id, max_messages=max_messages, max_tokens=max_tokens, before_seq=before_seq)
        return self.open_messages(agent, session_id, chosen)

    def clear(self, agent: str, session_id: str | None = None) -> int:
        """Deletes only what these keys can open: a session whose data key they do not unwrap is
        refused (DecryptionError), so a wrong key never deletes history."""
        sessions = [session_id] if session_id is not None else [s.session_id for s in self.inner.iter_sessions(agent) if s.agent == agent]
        for session in sessions:
            self.data_keys.check(agent, session)
        return self.inner.clear(agent, session_id)

    # --- forks, undo and search (history_edit.py) ----------------------------------------

    def copy_session(self, agent: str, source_session_id: str, target_session_id: str, *, last_seq: int) -> int:
        """Replayed through this store, never the backend's copy on its server: a sealed value is
        bound to its session, so each is opened and sealed again for the new one."""
        return copy_by_replay(self, agent, source_session_id, target_session_id, last_seq)

    def deactivate(self, agent: str, session_id: str, *, first_seq: int, last_seq: int, expected_count: int) -> bool:
        """As the store it wraps: only statuses change, no value is read."""
        return self.inner.deactivate(agent, session_id, first_seq=first_seq, last_seq=last_seq, expected_count=expected_count)

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
        """The backend's index searched with the keyed hashes of ``terms``, the hits opened (a store
        without an index: the bounded scan of opened messages); omnisync.stores.encrypted_search."""
        if not self.inner.keeps_search_index:
            return MemoryStore.search_messages(self, agent, terms, session_id=session_id, limit=limit, before=before, after=after)
        if not terms or limit < 1:
            return []
        hashed = sorted(set(self.search_keys.hasher(agent).terms(terms)))
        found = self.inner.search_messages(agent, hashed, session_id=session_id, limit=limit, before=before, after=after)
        return [Found(f.score, self.open_messages(agent, f.message.session_id, [f.message])[0]) for f in found]

    def reindex(self, agent: str | None = None) -> int:
        """As the store it wraps, each sealed message's keyed terms written from its opened content."""
        return self.inner.reindex(agent)

    def delete_message(self, agent: str, session_id: str, seq: int) -> bool:
        """As the store it wraps: a sealed message goes as a whole, no key needed."""
        return self.inner.delete_message(agent, session_id, seq)

    def sessions(self, agent: str | None = None) -> list[SessionInfo]:
        return self.inner.sessions(agent)

    def sessions_page(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionInfo]:
        return self.inner.sessions_page(agent, after, limit)

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
        placed = summary.placed(agent=agent, session_id=session_id, seq=last_seq + 1, created_at=utcnow())
        sealed = self.seal_placed(placed)
        written = self.inner.fold(agent, session_id, sealed, first_seq=first_seq, last_seq=last_seq, expected_count=expected_count, delete=delete)
        if written is None:
            return None
        return replace(written, content=summary.content, tool_calls=summary.tool_calls, metadata=summary.metadata)

    # --- runs ---------------------------------------------------------------------------

    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        return self._as_given(self.inner.save_run(self._seal_record(record), expected_version), record)

    def save_runs(self, saves: Sequence[tuple[RunRecord, int | None]]) -> list[RunRecord]:
        saved = self.inner.save_runs([(self._seal_record(record), expected) for record, expected in saves])
        return [self._as_given(new, given) for new, (given, _) in zip(saved, saves)]

    def append_and_save_run(
        self, agent: str, session_id: str, messages: Sequence[Message], record: RunRecord, expected_version: int | None
    ) -> tuple[list[Message], RunRecord]:
        if messages:
            self._keys_for_writing(agent, session_id)
        written, saved = self.inner.append_and_save_run(agent, session_id, messages, self._seal_record(record), expected_version)
        return written, self._as_given(saved, record)

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        return self.open_record(self.inner.load_run(agent, run_id))

    def load_lease(self, agent: str, run_id: str) -> tuple[RunRecord | None, RunRecord | None]:
        lease, holder = self.inner.load_lease(agent, run_id)
        return self.open_record(lease), self.open_record(holder)

    def load_lease_and_window(
        self, agent: str, lease_id: str, session_id: str, *, max_messages: int | None = None, max_tokens: int | None = None
    ) -> tuple[RunRecord | None, RunRecord | None, list[Message]]:
        lease, holder, window = self.inner.load_lease_and_window(agent, lease_id, session_id, max_messages=max_messages, max_tokens=max_tokens)
        return self.open_record(lease), self.open_record(holder), self.open_messages(agent, session_id, window)

    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        """The agent's records, opened, without the data key records (pages of kind ``data_key`` list those)."""
        return self._opened_records([r for r in self.inner.list_runs(agent, status, session_id) if r.kind != DATA_KEY])

    def _page_of_runs(
        self, agent: str, after: RunCursor | None, limit: int, status: str | None, session_id: str | None, kind: str
    ) -> list[RunRecord]:
        return self._opened_records(self.inner.runs_page(agent, after, limit, status=status, session_id=session_id, kind=kind))

    def iter_records(self, agent: str, *, session_id: str | None = None, page_size: int = 500) -> Iterator[RunRecord]:
        """The records an export or a copy carries, opened, without the data key records: what
        this store gives is in clear, and a destination seals it with keys of its own."""
        for kind in RUN_KINDS:
            if kind != DATA_KEY:
                yield from self.iter_runs(agent, session_id=session_id, kind=kind, page_size=page_size)

    def run_agents(self) -> list[str]:
        """Agents with records other than data keys (an agent whose sessions are encrypted keeps
        a data key record for each; that alone is not a run)."""
        kinds = [kind for kind in RUN_KINDS if kind != DATA_KEY]
        return [a for a in self.inner.run_agents() if any(self.inner.runs_page(a, None, 1, kind=kind) for kind in kinds)]

    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        return self.inner.prune_runs(agent, finished_before)

    # --- a run's events -------------------------------------------------------------------

    def seal_event(self, agent: str, run_id: str, event_id: int, name: str, data: dict[str, Any]) -> dict[str, Any]:
        """An event's data (its id known) as stored: sealed, bound to its id."""
        return sealing.seal_event(self.data_keys.for_writing(agent, self._events_session(agent, run_id)), agent, run_id, event_id, name, data)

    def append_events(self, agent: str, run_id: str, events: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """Sealed by the store it wraps once their ids are known (:meth:`seal_event`, inside its write)."""
        if events:
            self.data_keys.for_writing(agent, self._events_session(agent, run_id))  # read before the store's write, inside which the seal runs
        return self.inner.append_events(agent, run_id, events)

    def read_events(self, agent: str, run_id: str, after: int = 0, limit: int = MAX_EVENTS_READ) -> list[StoredEvent]:
        return self.open_events(agent, run_id, self.inner.read_events(agent, run_id, after, limit))

    def open_events(self, agent: str, run_id: str, events: list[StoredEvent]) -> list[StoredEvent]:
        """A run's events as the store it wraps holds them, opened (each at its id)."""
        if not events:
            return events
        opener, plain = self._opener(agent, self._events_session(agent, run_id)), self.encryption.accept_plaintext
        return [StoredEvent(e.id, e.name, sealing.open_event(agent, run_id, e.id, e.name, e.data, opener, plain)) for e in events]

    def replace_events(self, agent: str, run_id: str, events: Sequence[StoredEvent]) -> int:
        """Each event sealed at its id, written over the stored one (what ``omnisync encrypt`` does)."""
        sealed = [StoredEvent(e.id, e.name, self.seal_event(agent, run_id, e.id, e.name, e.data)) for e in events]
        return self.inner.replace_events(agent, run_id, sealed)

    # --- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        self.inner.close()
