"""The in-process store: dicts behind one lock, gone when the process ends.

Session keys are also kept sorted (Python's order of (agent, session_id)), so a page of
sessions is a bisect and a walk: O(log N + limit + cleared sessions passed over). A page of
runs looks at every record of the store: O(N log limit).
"""

from __future__ import annotations

import bisect
import heapq
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any, cast

from ..messages import ACTIVE, INACTIVE, Message, utcnow
from ..run_record import RunRecord
from .base import (
    MAX_EVENTS_READ,
    SEQ_STEP,
    MemoryStore,
    RunCursor,
    StoredEvent,
    SessionInfo,
    check_events,
    events_limit,
    page_limit,
    run_conflict,
    run_cursor,
)
from .copy_by_replay import refuse_unless_empty


@dataclass
class _Session:
    messages: list[Message] = field(default_factory=list)  # every stored message, by seq
    seqs: list[int] = field(default_factory=list)  # their seqs, for bisect
    last_seq: int = 0

    def replace_all(self, messages: list[Message]) -> None:
        self.messages = messages
        self.seqs = [m.seq for m in messages]  # type: ignore[misc]


class InMemoryStore(MemoryStore):
    """Messages and runs in this process. Safe to share between threads."""

    kind = "in_memory"

    @property
    def writes_run_atomically(self) -> bool:
        return True  # under the store's lock

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._sessions: dict[tuple[str, str], _Session] = {}
        self._order: list[tuple[str, str]] = []  # the keys of _sessions, sorted
        self._runs: dict[tuple[str, str], RunRecord] = {}
        self._events: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (name, JSON), id = index + 1

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        now = utcnow()
        with self._lock:
            session = self._sessions.get((agent, session_id))
            if session is None:
                session = self._sessions[(agent, session_id)] = _Session()
                bisect.insort(self._order, (agent, session_id))
            placed = []
            for message in messages:
                session.last_seq += SEQ_STEP
                placed.append(message.placed(agent=agent, session_id=session_id, seq=session.last_seq, created_at=now))
            session.messages.extend(_copy(m) for m in self.as_stored(placed))
            session.seqs.extend(m.seq for m in placed)  # type: ignore[misc]
            return [_copy(m) for m in placed]

    def replace_values(self, agent: str, session_id: str, messages: Sequence[Message]) -> int:
        with self._lock:
            session = self._sessions.get((agent, session_id))
            if session is None:
                return 0
            given = {m.seq: m for m in messages}
            found = [i for i, m in enumerate(session.messages) if m.seq in given]
            for i in found:
                new = given[session.messages[i].seq]
                session.messages[i] = _copy(replace(session.messages[i], content=new.content, tool_calls=new.tool_calls, metadata=new.metadata))
            return len(found)

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        with self._lock:
            session = self._sessions.get((agent, session_id))
            if session is None or limit <= 0:
                return []
            end = len(session.messages)
            if before_seq is not None:
                end = bisect.bisect_left(session.seqs, before_seq)
            found = []
            for index in range(end - 1, -1, -1):
                message = session.messages[index]
                if message.status == ACTIVE:
                    found.append(_copy(message))
                    if len(found) == limit:
                        break
            return found

    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        with self._lock:
            session = self._sessions.get((agent, session_id))
            if session is None:
                return []
            return [_copy(m) for m in session.messages if include_inactive or m.status == ACTIVE]

    def history_page(
        self, agent: str, session_id: str, after_seq: int | None, limit: int, include_inactive: bool = False
    ) -> list[Message]:
        with self._lock:
            session = self._sessions.get((agent, session_id))
            if session is None or limit <= 0:
                return []
            start = 0 if after_seq is None else bisect.bisect_right(session.seqs, after_seq)
            found: list[Message] = []
            for index in range(start, len(session.messages)):
                message = session.messages[index]
                if include_inactive or message.status == ACTIVE:
                    found.append(_copy(message))
                    if len(found) == limit:
                        break
            return found

    def delete_message(self, agent: str, session_id: str, seq: int) -> bool:
        with self._lock:
            log = self._sessions.get((agent, session_id))
            if log is None or seq not in log.seqs:
                return False
            log.replace_all([m for m in log.messages if m.seq != seq])  # last_seq stays
            return True

    def clear(self, agent: str, session_id: str | None = None) -> int:
        with self._lock:
            cleared = 0
            for (owner, session), log in self._sessions.items():
                if owner == agent and (session_id is None or session == session_id):
                    cleared += len(log.messages)
                    log.replace_all([])  # the seq counter stays, so seq never goes back
            return cleared

    def sessions_page(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionInfo]:
        limit = page_limit(limit)
        with self._lock:
            start = 0 if after is None else bisect.bisect_right(self._order, (after[0], after[1]))
            if agent is not None:
                start = max(start, bisect.bisect_left(self._order, (agent, "")))
            found: list[SessionInfo] = []
            for index in range(start, len(self._order)):
                key = self._order[index]
                if agent is not None and key[0] != agent or len(found) == limit:
                    break
                log = self._sessions[key]
                if log.messages:
                    found.append(SessionInfo(key[0], key[1], len(log.messages), log.messages[-1].created_at))
            return found

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
        with self._lock:
            session = self._sessions.get((agent, session_id))
            if session is None:
                return None
            in_range = [m for m in session.messages if first_seq <= m.seq <= last_seq and m.status == ACTIVE]  # type: ignore[operator]
            if len(in_range) != expected_count or expected_count == 0:
                return None
            folded = {m.seq for m in in_range}
            kept = []
            for message in session.messages:
                if message.seq not in folded:
                    kept.append(message)
                elif not delete:
                    kept.append(replace(message, status=INACTIVE))
            written = _copy(summary.placed(agent=agent, session_id=session_id, seq=last_seq + 1, created_at=utcnow()))
            position = bisect.bisect_left([cast(int, m.seq) for m in kept], cast(int, written.seq))
            kept.insert(position, written)
            session.replace_all(kept)
            return _copy(written)

    def copy_session(self, agent: str, source_session_id: str, target_session_id: str, *, last_seq: int) -> int:
        """Under the store's lock: the messages up to ``last_seq`` copied as they are (seqs kept)."""
        with self._lock:
            refuse_unless_empty(self, agent, target_session_id)
            source = self._sessions.get((agent, source_session_id))
            copied = [] if source is None else [m for m in source.messages if cast(int, m.seq) <= last_seq]
            if not copied:
                return 0
            target = self._sessions.get((agent, target_session_id))
            if target is None:
                target = self._sessions[(agent, target_session_id)] = _Session()
                bisect.insort(self._order, (agent, target_session_id))
            target.replace_all([_copy(replace(m, session_id=target_session_id)) for m in copied])
            target.last_seq = max(target.last_seq, max(cast(int, m.seq) for m in copied) // SEQ_STEP * SEQ_STEP)
            return len(copied)

    def deactivate(self, agent: str, session_id: str, *, first_seq: int, last_seq: int, expected_count: int) -> bool:
        with self._lock:
            session = self._sessions.get((agent, session_id))
            if session is None or expected_count < 1:
                return False
            chosen = [i for i, m in enumerate(session.messages) if first_seq <= cast(int, m.seq) <= last_seq and m.status == ACTIVE]
            if len(chosen) != expected_count:
                return False
            for index in chosen:
                session.messages[index] = replace(session.messages[index], status=INACTIVE)
            return True

    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        key = (record.agent, record.run_id)
        with self._lock:
            stored = self._runs.get(key)
            if expected_version is None and stored is not None:
                raise run_conflict(record, expected_version)
            if expected_version is not None and (stored is None or stored.version != expected_version):
                raise run_conflict(record, expected_version)
            saved = record.evolve(version=(expected_version or 0) + 1)
            self._runs[key] = saved
            return saved

    def append_and_save_run(
        self, agent: str, session_id: str, messages: Sequence[Message], record: RunRecord, expected_version: int | None
    ) -> tuple[list[Message], RunRecord]:
        """Both or neither, under the store's lock: the record's version is checked before anything is written."""
        with self._lock:
            stored = self._runs.get((record.agent, record.run_id))
            if expected_version is not None and (stored is None or stored.version != expected_version):
                raise run_conflict(record, expected_version)
            return super().append_and_save_run(agent, session_id, messages, record, expected_version)

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        with self._lock:
            return self._runs.get((agent, run_id))

    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        with self._lock:
            runs = [
                r
                for (a, _), r in self._runs.items()
                if a == agent and (status is None or r.status == status) and (session_id is None or r.session_id == session_id)
            ]
        return sorted(runs, key=lambda r: (r.created_at or datetime.min.replace(tzinfo=timezone.utc), r.run_id))

    def _page_of_runs(
        self, agent: str, after: RunCursor | None, limit: int, status: str | None, session_id: str | None, kind: str
    ) -> list[RunRecord]:
        with self._lock:
            found = [
                r
                for (a, _), r in self._runs.items()
                if a == agent and r.kind == kind and r.created_at is not None and (after is None or run_cursor(r) > after)
                and (status is None or r.status == status) and (session_id is None or r.session_id == session_id)
            ]
        return heapq.nsmallest(limit, found, key=run_cursor)

    def run_agents(self) -> list[str]:
        with self._lock:
            return sorted({agent for agent, _ in self._runs})

    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        with self._lock:
            doomed = [
                key
                for key, r in self._runs.items()
                if key[0] == agent and r.is_finished and r.finished_at is not None and r.finished_at < finished_before
            ]
            for key in doomed:
                del self._runs[key]
                self._events.pop(key, None)
            return len(doomed)

    def append_events(self, agent: str, run_id: str, events: Sequence[tuple[str, dict[str, Any]]]) -> int:
        checked = check_events(events)
        with self._lock:
            log = self._events.setdefault((agent, run_id), [])
            log.extend(self.events_as_stored(agent, run_id, len(log) + 1, events, checked))
            return len(log)

    def replace_events(self, agent: str, run_id: str, events: Sequence[StoredEvent]) -> int:
        with self._lock:
            log = self._events.get((agent, run_id), [])
            found = [e for e in events if 0 < e.id <= len(log)]
            for event in found:
                log[event.id - 1] = (log[event.id - 1][0], json.dumps(event.data, ensure_ascii=False, separators=(",", ":")))
            return len(found)

    def read_events(self, agent: str, run_id: str, after: int = 0, limit: int = MAX_EVENTS_READ) -> list[StoredEvent]:
        limit = events_limit(after, limit)
        with self._lock:
            page = self._events.get((agent, run_id), [])[after : after + limit]
        return [StoredEvent(after + i + 1, name, json.loads(data)) for i, (name, data) in enumerate(page)]

    def close(self) -> None:
        """Nothing to release; the data stays until the process ends."""


_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name", "metadata", "tokens", "run_id", "agent", "session_id", "seq", "status", "created_at")
assert tuple(f.name for f in fields(Message)) == _MESSAGE_FIELDS, "_copy builds a Message from its fields in this order"


def _copy(message: Message) -> Message:
    """A message no caller shares with the store: what is stored changes only through the store.

    Built positionally (see _MESSAGE_FIELDS): ``dataclasses.replace`` and ``copy`` cost ten times as much.
    """
    m = message
    return Message(
        m.role,
        _copy_json(m.content) if isinstance(m.content, list) else m.content,
        _copy_json(m.tool_calls) if m.tool_calls else m.tool_calls,
        m.tool_call_id,
        m.name,
        _copy_json(m.metadata) if m.metadata else {},
        m.tokens,
        m.run_id,
        m.agent,
        m.session_id,
        m.seq,
        m.status,
        m.created_at,
    )


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_json(item) for item in value]
    return value
