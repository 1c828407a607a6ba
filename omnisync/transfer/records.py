"""The export format: JSON Lines, one message or run record per line.

A message line keeps the message in the Chat Completions format plus what the store knows::

    {"kind": "message", "agent": "assistant", "session_id": "user_123", "seq": 4, "status": "active",
     "message": {"role": "user", "content": "..."}, "metadata": {}, "tokens": 12, "run_id": "...",
     "created_at": "2025-01-01T12:00:00+00:00"}

A summary is a message whose ``metadata["summary"]`` says what it folded (``first_seq``,
``last_seq``, ...). A run line is ``{"kind": "run", "record": RunRecord.to_record()}``.
An export lists each session's messages in seq order, then its agent's run records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..messages import ACTIVE, INACTIVE, ROLES, Message, from_chat
from ..run_record import RunRecord
from ..stores.base import MemoryStore, SessionInfo
from ..content import check_content
from ..errors import ConfigurationError, TransferError

MESSAGE = "message"
RUN = "run"


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


def dumps(line: dict[str, Any]) -> str:
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


@dataclass
class SessionDump:
    """One session's stored messages (active, inactive and summaries), oldest first."""

    agent: str
    session_id: str
    messages: list[Message] = field(default_factory=list)

    def counts(self) -> "Counts":
        return Counts.of(self.messages)


@dataclass(frozen=True)
class Counts:
    """What the end-of-copy check compares, per session."""

    total: int = 0
    active: int = 0
    summaries: int = 0

    @classmethod
    def of(cls, messages: Iterable[Message]) -> "Counts":
        listed = list(messages)
        return cls(len(listed), sum(m.status == ACTIVE for m in listed), sum(m.is_summary for m in listed))

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(self.total + other.total, self.active + other.active, self.summaries + other.summaries)

    def describe(self) -> str:
        return f"{self.total} messages ({self.active} active, {self.total - self.active} inactive, {self.summaries} summaries)"


# --- reading a store -----------------------------------------------------------------


def selected_sessions(store: MemoryStore, agent: str | None, session_id: str | None) -> list[SessionInfo]:
    found = store.sessions(agent)
    return [s for s in found if session_id is None or s.session_id == session_id]


def agents_of(sessions: Iterable[SessionInfo], agent: str | None) -> list[str]:
    """The agents whose runs an export includes: the one asked for, or every agent with sessions."""
    if agent is not None:
        return [agent]
    return sorted({s.agent for s in sessions})


# --- reading an export ---------------------------------------------------------------


@dataclass
class Export:
    """A parsed export: sessions in the order they first appear, then run records."""

    sessions: list[SessionDump] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)

    @property
    def message_count(self) -> int:
        return sum(len(s.messages) for s in self.sessions)


def parse(lines: Iterable[str], source: str) -> Export:
    """Read and check every line before anything is written; a bad line names its number."""
    parsed = Export()
    by_key: dict[tuple[str, str], SessionDump] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        where = f"{source}, line {number}"
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TransferError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(line, dict):
            raise TransferError(f"{where}: expected a JSON object, not {type(line).__name__}")
        kind = line.get("kind")
        if kind == MESSAGE:
            message = _message(line, where)
            key = (message.agent, message.session_id)
            if key not in by_key:
                by_key[key] = SessionDump(*key)
                parsed.sessions.append(by_key[key])
            by_key[key].messages.append(message)
        elif kind == RUN:
            parsed.runs.append(_run(line, where))
        else:
            raise TransferError(f"{where}: unknown kind {kind!r} (expected 'message' or 'run')")
    for dump in parsed.sessions:
        dump.messages.sort(key=lambda m: m.seq)  # type: ignore[arg-type, return-value]
        seqs = [m.seq for m in dump.messages]
        if len(set(seqs)) != len(seqs):
            raise TransferError(f"{source}: session {dump.session_id!r} of agent {dump.agent!r} has two messages with one seq")
    return parsed


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


def iter_lines(store: MemoryStore, sessions: list[SessionInfo], agent: str | None, session_id: str | None) -> Iterator[dict[str, Any]]:
    """Every line of an export of ``sessions``: per agent, its sessions' messages, then its runs."""
    for name in agents_of(sessions, agent):
        for info in sessions:
            if info.agent == name:
                for message in store.history(name, info.session_id, include_inactive=True):
                    yield message_line(message)
        for record in store.list_runs(name, session_id=session_id):
            yield run_line(record)
