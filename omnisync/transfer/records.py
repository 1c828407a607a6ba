"""The export format: JSON Lines, one message or run record per line.

A message line keeps the message in the Chat Completions format plus what the store knows::

    {"kind": "message", "agent": "assistant", "session_id": "user_123", "seq": 4, "status": "active",
     "message": {"role": "user", "content": "..."}, "metadata": {}, "tokens": 12, "run_id": "...",
     "created_at": "2025-01-01T12:00:00+00:00"}

A summary is a message whose ``metadata["summary"]`` says what it folded (``first_seq``,
``last_seq``, ...). A run line is ``{"kind": "run", "record": RunRecord.to_record()}``; the
run's stored events (what ``omnisync serve`` replays) follow it, up to 1,000 a line::

    {"kind": "run_events", "agent": "assistant", "run_id": "run_...", "first": 1,
     "events": [["run_started", {...}], ["text_delta", {...}], ...]}

``first`` is the id of the line's first event; a run's event lines follow each other, ids
from 1 with no gap. An export lists each session's messages in seq order, then its agent's
run records, each with its events.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ContextManager, cast

from ..messages import ACTIVE, INACTIVE, ROLES, Message, from_chat
from ..run_record import RunRecord
from ..stores.base import MAX_EVENTS_READ, MemoryStore, SessionInfo
from ..content import check_content
from ..errors import ConfigurationError, TransferError

MESSAGE = "message"
RUN = "run"
EVENTS = "run_events"
RunKey = tuple[str, str]
"""(agent, run_id)"""
EventBatch = tuple[str, str, int, list[tuple[str, dict[str, Any]]]]
"""(agent, run_id, the id of the first event, the events as (name, data))"""


def message_line(message: Message) -> dict[str, Any]:
    chat = message.to_chat()
    if message.name is not None:
        chat["name"] = message.name  # to_chat leaves a tool result's name out; an export keeps it
    return {
        "kind": MESSAGE,
        "agent": message.agent,
        "session_id": message.session_id,
        "seq": message.seq,
        "status": message.status,
        "message": chat,
        "metadata": message.metadata,
        "tokens": message.tokens,
        "run_id": message.run_id,
        "created_at": message.created_at.isoformat() if message.created_at else None,
    }


def run_line(record: RunRecord) -> dict[str, Any]:
    return {"kind": RUN, "record": record.to_record()}


def event_batches(store: MemoryStore, agent: str, run_id: str) -> Iterator[EventBatch]:
    """A run's stored events, a bounded read at a time."""
    after = 0
    while True:
        page = store.read_events(agent, run_id, after=after, limit=MAX_EVENTS_READ)
        if not page:
            return
        yield agent, run_id, page[0].id, [(e.name, e.data) for e in page]
        after = page[-1].id


def events_line(batch: EventBatch) -> dict[str, Any]:
    agent, run_id, first, events = batch
    return {"kind": EVENTS, "agent": agent, "run_id": run_id, "first": first, "events": [[name, data] for name, data in events]}


def dumps(line: dict[str, Any]) -> str:
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Counts:
    """What the end-of-copy check compares, per session."""

    total: int = 0
    active: int = 0
    summaries: int = 0

    @classmethod
    def of(cls, messages: Iterable[Message]) -> "Counts":
        """Counted as they go by: ``messages`` may be a store's paged iterator."""
        total = active = summaries = 0
        for message in messages:
            total += 1
            active += message.status == ACTIVE
            summaries += message.is_summary
        return cls(total, active, summaries)

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(self.total + other.total, self.active + other.active, self.summaries + other.summaries)

    def describe(self) -> str:
        return f"{self.total} messages ({self.active} active, {self.total - self.active} inactive, {self.summaries} summaries)"


# --- reading a store -----------------------------------------------------------------


def selected_sessions(store: MemoryStore, agent: str | None, session_id: str | None) -> Iterator[SessionInfo]:
    """The sessions an export or a copy takes, read from the store a page at a time, by agent then id."""
    return (s for s in store.iter_sessions(agent) if session_id is None or s.session_id == session_id)


def by_agent(sessions: Iterable[SessionInfo], agent: str | None) -> Iterator[tuple[str, Iterator[SessionInfo]]]:
    """``sessions``, listed by agent as a store lists them, in one group per agent as they come:
    the agent asked for (even with no sessions), or every agent that has sessions."""
    if agent is not None:
        yield agent, iter(sessions)
        return
    yield from itertools.groupby(sessions, key=lambda s: s.agent)


def agents_of(agents: Iterable[str], agent: str | None) -> list[str]:
    """The agents whose runs a copy includes: the one asked for, or every agent with sessions."""
    if agent is not None:
        return [agent]
    return sorted(set(agents))


# --- reading an export ---------------------------------------------------------------


Key = tuple[str, str]


@dataclass
class Export:
    """A checked export: what each session holds, and the run records; the messages stay in the file.

    :func:`~omnisync.transfer.read_export` checks every line and keeps only per-session counts
    and the run records; :meth:`messages` reads the lines again, one at a time, when an import
    writes them. So an import's memory does not grow with the number of messages.
    """

    sessions: dict[Key, Counts] = field(default_factory=dict)
    """Per (agent, session_id), in the order each first appears."""
    runs: list[RunRecord] = field(default_factory=list)
    event_counts: dict[RunKey, int] = field(default_factory=dict)
    """How many stored events each run has in the export (runs with none are left out)."""
    source: str = "the export"
    reopen: Callable[[], ContextManager[Iterable[str]]] | None = None

    @property
    def message_count(self) -> int:
        return sum(c.total for c in self.sessions.values())

    def messages(self) -> Iterator[Message]:
        """The messages, in file order (each session's oldest first), read again from the source."""
        if self.reopen is None:
            return
        with self.reopen() as lines:
            for number, line in _lines(lines, self.source):
                if line.get("kind") == MESSAGE:
                    yield _message(line, f"{self.source}, line {number}")

    def events(self) -> Iterator[EventBatch]:
        """The runs' stored events, a line at a time, read again from the source."""
        if self.reopen is None:
            return
        with self.reopen() as lines:
            for number, line in _lines(lines, self.source):
                if line.get("kind") == EVENTS:
                    yield _events(line, f"{self.source}, line {number}")


def parse(lines: Iterable[str], source: str) -> Export:
    """Check every line before anything is written (a bad line names its number); keep counts and run records.

    A session's messages must come in seq order, as an export writes them (sessions may interleave).
    """
    parsed = Export(source=source)
    last_seq: dict[Key, int] = {}
    for number, line in _lines(lines, source):
        where = f"{source}, line {number}"
        kind = line.get("kind")
        if kind == MESSAGE:
            message = _message(line, where)
            key = (message.agent, message.session_id)
            seq = cast(int, message.seq)  # _message checked it
            if key in last_seq and seq <= last_seq[key]:
                raise TransferError(
                    f"{where}: seq {seq} of session {message.session_id!r} of agent {message.agent!r} does not come after "
                    f"seq {last_seq[key]}; a session's messages must be in seq order, as export writes them (sort the file by seq)"
                )
            last_seq[key] = seq
            parsed.sessions[key] = parsed.sessions.get(key, Counts()) + Counts.of((message,))
        elif kind == RUN:
            parsed.runs.append(_run(line, where))
        elif kind == EVENTS:
            agent, run_id, first, events = _events(line, where)
            runs = parsed.runs
            if not runs or (runs[-1].agent, runs[-1].run_id) != (agent, run_id):
                raise TransferError(f"{where}: events of run {run_id!r} must follow its run line (or its earlier events), as export writes them")
            held = parsed.event_counts.get((agent, run_id), 0)
            if first != held + 1:
                raise TransferError(f"{where}: the events of run {run_id!r} start at id {first}, after {held} of them; ids run from 1 with no gap")
            parsed.event_counts[(agent, run_id)] = held + len(events)
        else:
            raise TransferError(f"{where}: unknown kind {kind!r} (expected 'message', 'run' or 'run_events')")
    return parsed


def _lines(lines: Iterable[str], source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line as a JSON object, with its number."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TransferError(f"{source}, line {number}: not JSON ({exc.msg})") from None
        if not isinstance(line, dict):
            raise TransferError(f"{source}, line {number}: expected a JSON object, not {type(line).__name__}")
        yield number, line


def _message(line: dict[str, Any], where: str) -> Message:
    for name in ("agent", "session_id"):
        if not isinstance(line.get(name), str) or not line[name]:
            raise TransferError(f"{where}: {name} must be a non-empty string")
    seq = line.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise TransferError(f"{where}: seq must be a whole number, not {seq!r}")
    status = line.get("status", ACTIVE)
    if status not in (ACTIVE, INACTIVE):
        raise TransferError(f"{where}: status must be 'active' or 'inactive', not {status!r}")
    chat = line.get("message")
    if not isinstance(chat, dict) or chat.get("role") not in ROLES:
        raise TransferError(f"{where}: message must be a chat message with a role of {', '.join(ROLES)}")
    content = chat.get("content")
    if isinstance(content, list):
        try:
            check_content(content)
        except ConfigurationError as exc:
            raise TransferError(f"{where}: the content parts are not valid: {exc}") from None
    elif content is not None and not isinstance(content, str):
        raise TransferError(f"{where}: content must be a string, a list of content parts or null")
    calls = chat.get("tool_calls")
    if calls is not None and (not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls)):
        raise TransferError(f"{where}: tool_calls must be a list of objects")
    metadata = line.get("metadata") or {}
    tokens = line.get("tokens") or 0
    if not isinstance(metadata, dict) or isinstance(tokens, bool) or not isinstance(tokens, int):
        raise TransferError(f"{where}: metadata must be an object and tokens a whole number")
    return from_chat(
        chat,
        metadata=metadata,
        tokens=tokens,
        run_id=line.get("run_id"),
        agent=line["agent"],
        session_id=line["session_id"],
        seq=seq,
        status=status,
    )


def _run(line: dict[str, Any], where: str) -> RunRecord:
    record = line.get("record")
    if not isinstance(record, dict):
        raise TransferError(f"{where}: a run line needs a record object")
    try:
        run = RunRecord.from_record(record)
    except (TypeError, ValueError) as exc:
        raise TransferError(f"{where}: not a run record ({exc})") from None
    if not run.run_id or not run.agent or not run.session_id:
        raise TransferError(f"{where}: a run record needs run_id, agent and session_id")
    return run


def _events(line: dict[str, Any], where: str) -> EventBatch:
    agent, run_id, first, events = line.get("agent"), line.get("run_id"), line.get("first"), line.get("events")
    if not (isinstance(agent, str) and agent and isinstance(run_id, str) and run_id):
        raise TransferError(f"{where}: a run_events line needs agent and run_id strings")
    if isinstance(first, bool) or not isinstance(first, int) or first < 1:
        raise TransferError(f"{where}: first must be the id of the line's first event, 1 or more, not {first!r}")
    if not isinstance(events, list) or not events:
        raise TransferError(f"{where}: events must be a non-empty list of [name, data] pairs")
    checked = []
    for event in events:
        if not (isinstance(event, list) and len(event) == 2 and isinstance(event[0], str) and event[0] and isinstance(event[1], dict)):
            raise TransferError(f"{where}: each event must be [name, data], a name string and a data object, not {str(event)[:60]}")
        checked.append((event[0], event[1]))
    return agent, run_id, first, checked


def iter_lines(store: MemoryStore, sessions: Iterable[SessionInfo], agent: str | None, session_id: str | None) -> Iterator[dict[str, Any]]:
    """Every line of an export of ``sessions`` (read once, as they come): per agent, its sessions' messages, then its runs."""
    for name, infos in by_agent(sessions, agent):
        for info in infos:
            for message in store.iter_history(name, info.session_id, include_inactive=True):
                yield message_line(message)
        for record in store.iter_records(name, session_id=session_id):
            yield run_line(record)
            for batch in event_batches(store, name, record.run_id):
                yield events_line(batch)
