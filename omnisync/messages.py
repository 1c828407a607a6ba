"""The stored message: one record per message, the same in every backend."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any

ACTIVE = "active"
INACTIVE = "inactive"
SUMMARY_PREFIX = "[CONVERSATION SUMMARY]"
ROLES = ("system", "user", "assistant", "tool")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(slots=True)
class Message:
    """A chat message plus what the store keeps about it.

    ``seq`` orders a session (never a clock). Messages take even numbers; a summary takes
    the odd number right after the last message it folded, so it sorts exactly where the
    folded messages stood and before the ones it kept, without renumbering anything.
    """

    role: str
    content: str | list[dict[str, Any]] | None  # a list only for a user message of content parts
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    run_id: str | None = None
    agent: str = ""
    session_id: str = ""
    seq: int | None = None
    status: str = ACTIVE
    created_at: datetime | None = None
    # Not frozen: a window load builds many of these, and frozen fields cost a setattr call each.
    # Treat it as immutable all the same: change a message with dataclasses.replace.

    @property
    def is_summary(self) -> bool:
        return "summary" in self.metadata

    @property
    def is_tool_result(self) -> bool:
        return self.role == "tool"

    def to_chat(self) -> dict[str, Any]:
        """The message as the Chat Completions wire format has it."""
        chat: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            chat["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            chat["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role != "tool":
            chat["name"] = self.name
        return chat

    def placed(self, *, agent: str, session_id: str, seq: int, created_at: datetime) -> "Message":
        """This message as the store has written it (built directly: ``replace`` costs several times more,
        and a bulk import places every message it writes)."""
        return Message(
            self.role, self.content, self.tool_calls, self.tool_call_id, self.name, self.metadata, self.tokens, self.run_id,
            agent, session_id, seq, self.status, created_at,
        )

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (for document and key-value stores)."""
        record = {name: getattr(self, name) for name in _FIELDS}
        record["created_at"] = self.created_at.isoformat() if self.created_at else None
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any], **overrides: Any) -> "Message":
        """A Message from :meth:`to_record`'s dict; ``overrides`` replace fields the store knows better."""
        values = {name: record[name] for name in _FIELDS if name in record}
        values.update(overrides)
        created = values.get("created_at")
        if isinstance(created, str):
            values["created_at"] = datetime.fromisoformat(created)
        elif isinstance(created, datetime) and created.tzinfo is None:
            values["created_at"] = created.replace(tzinfo=timezone.utc)
        values["metadata"] = values.get("metadata") or {}
        values["tokens"] = values.get("tokens") or 0
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_record(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> "Message":
        return cls.from_record(json.loads(text))


_FIELDS = tuple(member.name for member in fields(Message))


def from_chat(chat: dict[str, Any], **extra: Any) -> Message:
    """A Message from a Chat Completions message dict."""
    return Message(
        role=chat["role"],
        content=chat.get("content"),
        tool_calls=chat.get("tool_calls") or None,
        tool_call_id=chat.get("tool_call_id"),
        name=chat.get("name"),
        **extra,
    )
