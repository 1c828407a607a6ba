"""The one converter between omnisync's records and MongoDB documents: a message, a run's saved
version, and times as BSON keeps them (UTC, to the millisecond)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from ...messages import Message
from ...run_record import FINISHED_STATUSES, RunRecord
from .search import document_terms


def as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def as_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def message_document(message: Message) -> dict[str, Any]:
    return {
        "agent": message.agent,
        "session_id": message.session_id,
        "seq": message.seq,
        "status": message.status,
        "role": message.role,
        "content": None if isinstance(message.content, list) else message.content,
        "content_parts": as_json(message.content) if isinstance(message.content, list) else None,
        "tool_calls": as_json(message.tool_calls),
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "run_id": message.run_id,
        "tokens": message.tokens,
        "created_at": message.created_at,
        "metadata": as_json(message.metadata or {}),
        "terms": document_terms(message),
    }


def document_message(doc: dict[str, Any]) -> Message:
    return Message(
        role=doc["role"],
        content=json.loads(doc["content_parts"]) if doc.get("content_parts") else doc.get("content"),
        tool_calls=json.loads(doc["tool_calls"]) if doc.get("tool_calls") else None,
        tool_call_id=doc.get("tool_call_id"),
        name=doc.get("name"),
        metadata=json.loads(doc["metadata"]) if doc.get("metadata") else {},
        tokens=doc.get("tokens") or 0,
        run_id=doc.get("run_id"),
        agent=doc["agent"],
        session_id=doc["session_id"],
        seq=doc["seq"],
        status=doc["status"],
        created_at=as_utc(doc.get("created_at")),
    )


def run_document(record: RunRecord) -> dict[str, Any]:
    return {
        "agent": record.agent,
        "run_id": record.run_id,
        "version": record.version,
        "session_id": record.session_id,
        "status": record.status,
        "created_at": record.created_at,
        "finished_at": record.finished_at if record.status in FINISHED_STATUSES else None,
        "expires_at": record.expires_at,
        "data": record.to_json(),
    }
