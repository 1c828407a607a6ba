"""The one converter between messages and the SQL store's rows, used by every statement that
writes or reads a message (the store, its SQLite and PostgreSQL paths, search). Content parts
are stored as JSON text, marked in the row's metadata; times as integer microseconds since the
epoch, which every database reads without parsing."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from ...messages import ACTIVE, Message
from ...search.keyed import stored_terms_text

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
CONTENT_PARTS = "_omnisync_content_parts"
"""The metadata key that marks a row whose content is a list of content parts, as JSON text."""


def message_row(message: Message, created_at_us: int | None = None) -> dict[str, Any]:
    """The message's column values; ``created_at_us`` its time in µs, if the caller has it already."""
    content, metadata = message.content, message.metadata
    if isinstance(content, list):
        content, metadata = json.dumps(content, ensure_ascii=False), {**metadata, CONTENT_PARTS: True}
    elif CONTENT_PARTS in metadata:
        metadata = {key: value for key, value in metadata.items() if key != CONTENT_PARTS}
    return {
        "agent": message.agent,
        "session_id": message.session_id,
        "seq": message.seq,
        "role": message.role,
        "content": content,
        "tool_calls": json.dumps(message.tool_calls, ensure_ascii=False) if message.tool_calls else None,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "status": message.status,
        "run_id": message.run_id,
        "tokens": message.tokens,
        "created_at_us": micros(message.created_at) if created_at_us is None else created_at_us,  # type: ignore[arg-type]
        "metadata": json.dumps(metadata, ensure_ascii=False) if metadata else None,
        "terms": stored_terms_text(message),
    }


def rows_messages(rows: Iterable[Sequence[Any]], agent: str, session_id: str, status: str | None = ACTIVE) -> list[Message]:
    """Messages from rows of MESSAGE_COLUMNS, in the session the query named (with ``status``
    None, each row ends with its status). A run's messages share their write time, and
    consecutive rows with the same time share one datetime: converting it is a third of a row's cost."""
    loads = json.loads
    messages = []
    last_micros, moment = None, EPOCH
    for row in rows:
        micros = row[9]
        if micros != last_micros:
            last_micros, moment = micros, EPOCH + timedelta(microseconds=micros)
        metadata = loads(row[5]) if row[5] else {}
        messages.append(
            Message(
                row[0],
                loads(row[1]) if metadata and metadata.pop(CONTENT_PARTS, False) else row[1],
                loads(row[2]) if row[2] else None,
                row[3],
                row[4],
                metadata,
                row[6],
                row[7],
                agent,
                session_id,
                row[8],
                row[10] if status is None else status,
                moment,
            )
        )
    return messages


def row_content(content: str | None, metadata: str | None) -> Any:
    """A row's content as the message had it: content parts are stored as JSON text, marked in its metadata."""
    if content is not None and metadata and CONTENT_PARTS in metadata and json.loads(metadata).get(CONTENT_PARTS):
        return json.loads(content)
    return content


def hit_message(agent: str, row: Sequence[Any]) -> Message:
    """A search hit's message from its row: (session_id, seq, role, content, metadata, created_at_us)."""
    metadata = json.loads(row[4]) if row[4] else {}
    parts = metadata.pop(CONTENT_PARTS, False)
    return Message(
        role=row[2],
        content=json.loads(row[3]) if parts else row[3],
        metadata=metadata,
        agent=agent,
        session_id=row[0],
        seq=int(row[1]),
        created_at=EPOCH + timedelta(microseconds=int(row[5])),
    )


def micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def from_micros(value: int | None) -> datetime | None:
    return None if value is None else EPOCH + timedelta(microseconds=value)
