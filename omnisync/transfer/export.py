"""Sessions and run records out of a store: as JSON Lines (to a file or a stream) or as a SQLite file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..errors import ConfigurationError
from ..messages import Message
from ..run_record import RunRecord
from ..stores.base import MemoryStore, SessionInfo
from . import sqlite_file
from .records import by_agent, dumps, event_batches, iter_lines, selected_sessions


@dataclass(frozen=True)
class Exported:
    """What an export wrote: JSON Lines count ``lines``; a SQLite export ``messages``, ``runs`` and ``events`` rows."""

    sessions: int
    lines: int = 0
    messages: int = 0
    runs: int = 0
    events: int = 0


def export_jsonl(
    store: MemoryStore, out: TextIO | str | os.PathLike[str], *, agent: str | None = None, session_id: str | None = None, decrypt: bool = False
) -> Exported:
    """Write the sessions (every agent's, or ``agent``'s; every one, or ``session_id``) and their runs as JSON Lines.

    ``out`` is an open text stream, or a path: the file appears whole or not at all. A store with
    encryption at rest is written as it is stored (sealed, with its wrapped data keys) unless
    ``decrypt``: then in clear.
    """
    store = as_exported(store, decrypt)
    sessions = _Counted(selected_sessions(store, agent, session_id))
    lines = iter_lines(store, sessions, agent, session_id)
    if not isinstance(out, (str, os.PathLike)):
        written = _write_lines(lines, out)
        return Exported(sessions.count, lines=written)
    target = Path(out)
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as stream:
            count = _write_lines(lines, stream)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return Exported(sessions.count, lines=count)


def export_sqlite(
    store: MemoryStore, path: str | os.PathLike[str], *, agent: str | None = None, session_id: str | None = None, decrypt: bool = False
) -> Exported:
    """Write a new SQLite file (tables ``messages``, ``runs`` and ``run_events``); an existing file is refused with TransferError.
    Sealed as stored unless ``decrypt``, as :func:`export_jsonl`."""
    store = as_exported(store, decrypt)
    sessions = _Counted(selected_sessions(store, agent, session_id))
    agents: list[str] = []
    messages = _messages(store, by_agent(sessions, agent), agents)
    events = (batch for record in _runs(store, agents, session_id) for batch in event_batches(store, record.agent, record.run_id))
    counts = sqlite_file.write(Path(path), messages, _runs(store, agents, session_id), events)
    return Exported(sessions.count, messages=counts[0], runs=counts[1], events=counts[2])


def as_exported(store: MemoryStore, decrypt: bool) -> MemoryStore:
    """What an export reads: a store with encryption at rest as it is stored (sealed), or opened
    with ``decrypt``; ConfigurationError for ``decrypt`` without keys."""
    from ..stores.encrypted import EncryptedStore

    if isinstance(store, EncryptedStore):
        return store if decrypt else store.inner
    if decrypt:
        raise ConfigurationError("decrypt needs the keys: open the store's router with encryption= (or set OMNISYNC_ENCRYPTION_KEYS)")
    return store


class _Counted:
    """Sessions read once, as they come, counted."""

    def __init__(self, sessions: Iterator[SessionInfo]) -> None:
        self.sessions = sessions
        self.count = 0

    def __iter__(self) -> Iterator[SessionInfo]:
        for info in self.sessions:
            self.count += 1
            yield info


def _write_lines(lines: Iterator[dict[str, Any]], out: TextIO) -> int:
    count = 0
    for line in lines:
        out.write(dumps(line) + "\n")
        count += 1
    return count


def _messages(store: MemoryStore, groups: Iterator[tuple[str, Iterator[SessionInfo]]], agents: list[str]) -> Iterator[Message]:
    """Every message of the sessions, noting in ``agents`` each agent whose runs go too."""
    for name, infos in groups:
        agents.append(name)
        for info in infos:
            yield from store.iter_history(info.agent, info.session_id, include_inactive=True)


def _runs(store: MemoryStore, agents: list[str], session_id: str | None) -> Iterator[RunRecord]:
    """The runs of ``agents``, which the messages have listed by the time the first run is read
    (``sqlite_file.write`` inserts every message first)."""
    for name in agents:
        yield from store.iter_records(name, session_id=session_id)
