"""What is sealed, field by field, and where each field is bound.

A message's content, tool calls and metadata are bound to (agent, session, seq, field); a run
record's response, partial response, error, pending tool calls and user message to (agent,
session, run id, field); a stored event's data to (agent, run id, its name). Ids, roles, seq,
status, times and token counts stay in clear. A field that is empty stays empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from ..errors import DecryptionError
from ..messages import Message
from ..run_record import DATA_KEY, RunRecord
from . import envelope
from .data_keys import DataKey

SEALED = "osx"
"""The one key of a dict that stands for a sealed dict (metadata, event data, a run's pending calls)."""

RUN_FIELDS = ("response", "partial_response", "error", "message", "pending_calls")

Opener = Callable[[str, str], DataKey]
"""The data key of the session a value is read from, by the data key id it carries (and what to call the value)."""


def seal_message(data_key: DataKey, message: Message) -> Message:
    """``message`` (placed: its seq known) with its content, tool calls and metadata sealed."""
    where = (message.agent, message.session_id, message.seq)
    return replace(
        message,
        content=None if message.content is None else _seal(data_key, message.content, *where, "content"),
        tool_calls=None if not message.tool_calls else cast(Any, _seal(data_key, message.tool_calls, *where, "tool_calls")),
        metadata={SEALED: _seal(data_key, message.metadata, *where, "metadata")} if message.metadata else {},
    )


def open_message(message: Message, opener: Opener, accept_plaintext: bool) -> Message:
    """``message`` as it was before :func:`seal_message`; DecryptionError if a field does not open."""
    where = (message.agent, message.session_id, message.seq)
    what = f"message seq {message.seq} of session {message.session_id!r} of agent {message.agent!r}"
    content, tool_calls, metadata = message.content, message.tool_calls, message.metadata
    if content is not None:
        content = _open(content, where, "content", opener, accept_plaintext, what)
    if tool_calls:
        tool_calls = _open(tool_calls, where, "tool_calls", opener, accept_plaintext, what)
    if metadata:
        metadata = _open_dict(metadata, where, "metadata", opener, accept_plaintext, what)
    return replace(message, content=content, tool_calls=tool_calls, metadata=metadata)


def is_clear_message(message: Message) -> bool:
    """Whether any field of ``message`` is held in clear (what ``omnisync encrypt`` seals)."""
    return (
        (message.content is not None and not envelope.is_sealed(message.content))
        or (bool(message.tool_calls) and not envelope.is_sealed(message.tool_calls))
        or (bool(message.metadata) and not _is_sealed_dict(message.metadata))
    )


def is_sealed_field(value: Any) -> bool:
    """Whether a field's stored value is sealed (an envelope, or a dict or list holding one)."""
    if isinstance(value, list):
        return len(value) == 1 and _is_sealed_dict(value[0])
    return envelope.is_sealed(value) or _is_sealed_dict(value)


def needs_sealing(record: RunRecord) -> bool:
    """Whether the record holds anything sealed (a lease or a claim holds none: no data key is made for it)."""
    return record.kind != DATA_KEY and any(getattr(record, name) for name in RUN_FIELDS)


def seal_record(data_key: DataKey, record: RunRecord) -> RunRecord:
    """``record`` with its response, partial response, error, user message and pending calls sealed."""
    where = (record.agent, record.session_id, f"run:{record.run_id}")
    changes: dict[str, Any] = {}
    for name in RUN_FIELDS:
        value = getattr(record, name)
        if value is None or (name == "pending_calls" and not value):
            continue
        sealed = _seal(data_key, value, *where, name)
        changes[name] = [{SEALED: sealed}] if name == "pending_calls" else sealed
    return record.evolve(**changes)


def open_record(record: RunRecord, opener: Opener, accept_plaintext: bool) -> RunRecord:
    """``record`` as it was before :func:`seal_record`."""
    if record.kind == DATA_KEY:
        return record
    where = (record.agent, record.session_id, f"run:{record.run_id}")
    what = f"run record {record.run_id!r} of agent {record.agent!r}"
    changes: dict[str, Any] = {}
    for name in RUN_FIELDS:
        value = getattr(record, name)
        if value is None or (name == "pending_calls" and not value):
            continue
        if name == "pending_calls":
            held = value[0] if len(value) == 1 and isinstance(value[0], dict) else None
            changes[name] = _open_dict(held, where, name, opener, accept_plaintext, what) if held and _is_sealed_dict(held) else _clear(value, accept_plaintext, what, name)
        else:
            changes[name] = _open(value, where, name, opener, accept_plaintext, what)
    return record.evolve(**changes) if changes else record


def seal_event(data_key: DataKey, agent: str, run_id: str, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {SEALED: _seal(data_key, data, agent, f"run:{run_id}", "event", name)}


def open_event(agent: str, run_id: str, name: str, data: dict[str, Any], opener: Opener, accept_plaintext: bool) -> dict[str, Any]:
    what = f"event {name!r} of run {run_id!r} of agent {agent!r}"
    return cast("dict[str, Any]", _open_dict(data, (agent, f"run:{run_id}", "event"), name, opener, accept_plaintext, what))


def _seal(data_key: DataKey, value: Any, *where: object) -> str:
    plaintext = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return envelope.seal(data_key.key, data_key.id, plaintext, envelope.place(*where))


def _open(value: Any, where: tuple[object, ...], field: str, opener: Opener, accept_plaintext: bool, what: str) -> Any:
    if not envelope.is_sealed(value):
        return _clear(value, accept_plaintext, what, field)
    describe = f"the {field} of {what}"
    data_key = opener(envelope.data_key_id_of(value), describe)
    return json.loads(envelope.open_sealed(data_key.key, value, envelope.place(*where, field), describe))


def _open_dict(value: Any, where: tuple[object, ...], field: str, opener: Opener, accept_plaintext: bool, what: str) -> Any:
    if not _is_sealed_dict(value):
        return _clear(value, accept_plaintext, what, field)
    return _open(value[SEALED], where, field, opener, accept_plaintext, what)


def _is_sealed_dict(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and envelope.is_sealed(value.get(SEALED))


def _clear(value: Any, accept_plaintext: bool, what: str, field: str) -> Any:
    if accept_plaintext:
        return value
    raise DecryptionError(
        f"the {field} of {what} is stored in clear, and this store is encrypted: it is refused, not read. "
        "Encrypt the store in place with `omnisync encrypt --url ...` (or open it with Encryption(..., accept_plaintext=True))."
    )
