"""An export as a plain SQLite file, one table per kind, that Datasette opens as it is.

``messages`` has one row per stored message (primary key agent, session_id, seq), with a
``summary`` flag; ``runs`` one row per run record (primary key agent, run_id);
``run_events`` one row per stored event of a run (primary key agent, run_id, id). Lists and
objects (tool calls, metadata, pending calls, decisions) are JSON text, which Datasette shows
as JSON. Written with sqlite-utils (``pip install 'omnisync[export]'``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError
from ..messages import Message
from ..run_record import RunRecord
from ..errors import TransferError
from .records import EventBatch

MESSAGE_COLUMNS: dict[str, type] = {
    "agent": str,
    "session_id": str,
    "seq": int,
    "status": str,
    "summary": int,
    "role": str,
    "content": str,
    "tool_calls": str,
    "tool_call_id": str,
    "name": str,
    "metadata": str,
    "tokens": int,
    "run_id": str,
    "created_at": str,
}
RUN_COLUMNS: dict[str, type] = {
    "run_id": str,
    "agent": str,
    "session_id": str,
    "kind": str,
    "status": str,
    "step": int,
    "version": int,
    "created_at": str,
    "updated_at": str,
    "finished_at": str,
    "expires_at": str,
    "response": str,
    "error": str,
    "partial_response": str,
    "finish_reason": str,
    "usage": str,
    "model_calls": str,
    "response_format": str,
    "extra_body": str,
    "trace_parent": str,
    "message": str,
    "tool_calls_made": int,
    "pending_calls": str,
    "decisions": str,
    "budget": str,
    "budget_request": str,
    "loaded_seq": str,
    "first_written_seq": int,
    "lease_owner": str,
    "lease_until": str,
}


EVENT_COLUMNS: dict[str, type] = {"agent": str, "run_id": str, "id": int, "name": str, "data": str}


def write(path: Path, messages: Iterable[Message], runs: Iterable[RunRecord], events: Iterable[EventBatch] = ()) -> tuple[int, int, int]:
    """Write a new SQLite file at ``path`` (never into an existing one); return the rows in each table."""
    try:
        import sqlite_utils
    except ImportError as exc:
        raise MissingDependencyError(
            "A SQLite export (export --sqlite) requires optional dependency 'sqlite-utils'. Install it with: pip install 'omnisync[export]'"
        ) from exc
    if path.exists():
        raise TransferError(f"{path} already exists; a SQLite export writes a new file: remove it or pick another name")
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    counts = [0, 0, 0]

    def counted(rows: Iterable[dict[str, Any]], which: int) -> Iterable[dict[str, Any]]:
        for row in rows:
            counts[which] += 1
            yield row

    db = sqlite_utils.Database(partial)
    try:
        db.table("messages").create(MESSAGE_COLUMNS, pk=("agent", "session_id", "seq"), not_null=("role", "status"))
        db.table("runs").create(RUN_COLUMNS, pk=("agent", "run_id"), not_null=("status",))
        db.table("messages").insert_all(counted((_message_row(m) for m in messages), 0))
        db.table("runs").insert_all(counted((r.to_record() for r in runs), 1))
        db.table("run_events").create(EVENT_COLUMNS, pk=("agent", "run_id", "id"), not_null=("name",))
        db.table("run_events").insert_all(counted(_event_rows(events), 2))
        db.table("messages").create_index(["agent", "session_id", "status", "seq"])
        db.table("runs").create_index(["agent", "status"])
    except BaseException:
        db.close()
        partial.unlink(missing_ok=True)
        raise
    db.close()
    os.replace(partial, path)
    return counts[0], counts[1], counts[2]


def _event_rows(batches: Iterable[EventBatch]) -> Iterable[dict[str, Any]]:
    for agent, run_id, first, events in batches:
        for offset, (name, data) in enumerate(events):
            yield {"agent": agent, "run_id": run_id, "id": first + offset, "name": name, "data": data}


def _message_row(message: Message) -> dict[str, Any]:
    return {
        "agent": message.agent,
        "session_id": message.session_id,
        "seq": message.seq,
        "status": message.status,
        "summary": int(message.is_summary),
        "role": message.role,
        "content": message.content,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "metadata": message.metadata,
        "tokens": message.tokens,
        "run_id": message.run_id,
        "created_at": message.created_at.isoformat() if message.created_at else None,
    }
