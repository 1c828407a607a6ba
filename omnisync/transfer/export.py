"""Sessions and run records out of a store: as JSON Lines (to a file or a stream) or as a SQLite file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..messages import Message
from ..run_record import RunRecord
from ..stores.base import MemoryStore, SessionInfo
from . import sqlite_file
from .records import agents_of, dumps, event_batches, iter_lines, selected_sessions


@dataclass(frozen=True)
class Exported:
    """What an export wrote: JSON Lines count ``lines``; a SQLite export ``messages``, ``runs`` and ``events`` rows."""

    sessions: int
    lines: int = 0
    messages: int = 0
    runs: int = 0
    events: int = 0


def export_jsonl(store: MemoryStore, out: TextIO | str | os.PathLike[str], *, agent: str | None = None, session_id: str | None = None) -> Exported:
    """Write the sessions (every agent's, or ``agent``'s; every one, or ``session_id``) and their runs as JSON Lines.

    ``out`` is an open text stream, or a path: the file appears whole or not at all.
    """
    sessions = selected_sessions(store, agent, session_id)
    lines = iter_lines(store, sessions, agent, session_id)
    if not isinstance(out, (str, os.PathLike)):
        return Exported(len(sessions), lines=_write_lines(lines, out))
    target = Path(out)
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as stream:
            count = _write_lines(lines, stream)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return Exported(len(sessions), lines=count)


def export_sqlite(store: MemoryStore, path: str | os.PathLike[str], *, agent: str | None = None, session_id: str | None = None) -> Exported:
    """Write a new SQLite file (tables ``messages``, ``runs`` and ``run_events``); an existing file is refused with TransferError."""
    sessions = selected_sessions(store, agent, session_id)
    runs = _runs(store, sessions, agent, session_id)
    events = (batch for record in _runs(store, sessions, agent, session_id) for batch in event_batches(store, record.agent, record.run_id))
    counts = sqlite_file.write(Path(path), _messages(store, sessions), runs, events)
    return Exported(len(sessions), messages=counts[0], runs=counts[1], events=counts[2])


def _write_lines(lines: Iterator[dict[str, Any]], out: TextIO) -> int:
    count = 0
    for line in lines:
        out.write(dumps(line) + "\n")
        count += 1
    return count


def _messages(store: MemoryStore, sessions: list[SessionInfo]) -> Iterator[Message]:
    for info in sessions:
        yield from store.iter_history(info.agent, info.session_id, include_inactive=True)


def _runs(store: MemoryStore, sessions: list[SessionInfo], agent: str | None, session_id: str | None) -> Iterator[RunRecord]:
    for name in agents_of(sessions, agent):
        yield from store.list_runs(name, session_id=session_id)
