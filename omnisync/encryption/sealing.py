"""What is sealed, field by field, and where each field is bound.

A message's content, tool calls and metadata are bound to (agent, session, seq, field); a run
record's response, partial response, error, pending tool calls, user message and each approval
decision's reason to (agent, session, run id, field); a stored event's data to (agent, run id, event id, its name). Ids, roles, seq,
status, times and token counts stay in clear. A field that is empty stays empty.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from ..errors import DecryptionError, NotSerializableError
from ..messages import Message
from ..run_record import DATA_KEY, RunRecord
from . import envelope
from .data_keys import OPENED_TEXTS, DataKey, OpenedTexts

SEALED = "osx"
"""The one key of a dict that stands for a sealed dict (metadata, event data, a run's pending calls)."""

SEALED_EVENT = "osxe"
"""The one key of a stored event's data sealed bound to its event id (``SEALED``: bound to its name only, as events were sealed first)."""

RUN_FIELDS = ("response", "partial_response", "error", "message", "pending_calls")

Opener = Callable[[str, str], DataKey]
"""The data key of the session a value is read from, by the data key id it carries (and what to call the value)."""


def seal_message(data_key: DataKey, message: Message) -> Message:
    """``message`` (placed: its seq known) with its content, tool calls and metadata sealed."""
    place = envelope.place_of(message.agent, message.session_id, message.seq)
    content, tool_calls, metadata = message.content, message.tool_calls, message.metadata
    return _with_values(
        message,
        None if content is None else _seal_at(data_key, content, place("content")),
        None if not tool_calls else cast(Any, _seal_at(data_key, tool_calls, place("tool_calls"))),
        {SEALED: _seal_at(data_key, metadata, place("metadata"))} if metadata else {},
    )


def open_messages(messages: list[Message], opener: Opener, accept_plaintext: bool, opened: OpenedTexts | None = None) -> list[Message]:
    """Messages of one session as they were before :func:`seal_message`; DecryptionError if a field does not open.

    With ``opened``, a text content already opened at the very same place (agent, session, seq)
    is taken from there instead of being decrypted again; a copy elsewhere is not there. Such a
    message gets its text in place: every store builds the messages of a read for that read
    alone (never a copy it keeps), so nobody else holds them."""
    if not messages:
        return messages
    session, keys = envelope.place_of(messages[0].agent, messages[0].session_id), _Keys(opener)
    if opened is None:
        return [_open_message(m, session, keys, accept_plaintext) for m in messages]
    found = []
    for m in messages:
        content = m.content
        hit = opened.get(content) if type(content) is str else None
        if hit is not None and hit[2] == m.seq and hit[1] == m.session_id and hit[0] == m.agent:
            if not m.tool_calls and not m.metadata:
                m.content = hit[3]
                found.append(m)
                continue
        opened_message = _open_message(m, session, keys, accept_plaintext)
        if type(content) is str and type(opened_message.content) is str and content is not opened_message.content:
            if len(opened) >= OPENED_TEXTS:
                opened.clear()
            opened[content] = (m.agent, m.session_id, cast(int, m.seq), opened_message.content)
        found.append(opened_message)
    return found


def open_message(message: Message, opener: Opener, accept_plaintext: bool) -> Message:
    """``message`` as it was before :func:`seal_message`; DecryptionError if a field does not open."""
    return open_messages([message], opener, accept_plaintext)[0]


def _open_message(message: Message, session: Callable[..., bytes], opener: "_Keys", accept_plaintext: bool) -> Message:
    seq, what = message.seq, message
    content, tool_calls, metadata = message.content, message.tool_calls, message.metadata
    if content is not None:
        content = _open_at(content, session(seq, "content"), "content", opener, accept_plaintext, what)
    if tool_calls:
        tool_calls = _open_at(tool_calls, session(seq, "tool_calls"), "tool_calls", opener, accept_plaintext, what)
    if metadata:
        if _is_sealed_dict(metadata):
            metadata = _open_at(metadata[SEALED], session(seq, "metadata"), "metadata", opener, accept_plaintext, what)
        else:
            metadata = _clear(metadata, accept_plaintext, what, "metadata")
    return _with_values(message, content, tool_calls, metadata)


def _with_values(message: Message, content: Any, tool_calls: Any, metadata: Any) -> Message:
    """``message`` with other values (built directly: ``replace`` costs several times more)."""
    m = message
    return Message(m.role, content, tool_calls, m.tool_call_id, m.name, metadata, m.tokens, m.run_id, m.agent, m.session_id, m.seq, m.status, m.created_at)


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
    return record.kind != DATA_KEY and (any(getattr(record, name) for name in RUN_FIELDS) or bool(_reasons(record)))


def _reasons(record: RunRecord) -> list[str]:
    """The ids of the calls whose approval decision gives a reason (a person's words: sealed; the decision itself stays in clear)."""
    return [call_id for call_id, decision in record.decisions.items() if isinstance(decision, dict) and decision.get("reason") is not None]


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
    reasons = _reasons(record)
    if reasons:
        decisions = dict(record.decisions)
        for call_id in reasons:
            decisions[call_id] = {**decisions[call_id], "reason": _seal(data_key, decisions[call_id]["reason"], *where, f"decisions.{call_id}.reason")}
        changes["decisions"] = decisions
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
    reasons = _reasons(record)
    if reasons:
        decisions = dict(record.decisions)
        for call_id in reasons:
            field = f"decisions.{call_id}.reason"
            decisions[call_id] = {**decisions[call_id], "reason": _open(decisions[call_id]["reason"], where, field, opener, accept_plaintext, what)}
        changes["decisions"] = decisions
    return record.evolve(**changes) if changes else record


def seal_event(data_key: DataKey, agent: str, run_id: str, event_id: int, name: str, data: dict[str, Any]) -> dict[str, Any]:
    """An event's data sealed, bound to (agent, run, event id, name): stored as ``{"osxe": envelope}``."""
    return {SEALED_EVENT: _seal(data_key, data, agent, f"run:{run_id}", "event", event_id, name)}


def open_event(agent: str, run_id: str, event_id: int, name: str, data: dict[str, Any], opener: Opener, accept_plaintext: bool) -> dict[str, Any]:
    """An event's data as it was before :func:`seal_event`; one sealed before events were bound to
    their ids (``{"osx": envelope}``, bound to agent, run and name only) opens at that place."""
    what = f"event {event_id} ({name!r}) of run {run_id!r} of agent {agent!r}"
    if isinstance(data, dict) and len(data) == 1 and envelope.is_sealed(data.get(SEALED_EVENT)):
        return cast("dict[str, Any]", _open(data[SEALED_EVENT], (agent, f"run:{run_id}", "event", event_id), name, opener, accept_plaintext, what))
    return cast("dict[str, Any]", _open_dict(data, (agent, f"run:{run_id}", "event"), name, opener, accept_plaintext, what))


def is_sealed_event(data: Any) -> bool:
    """Whether an event's stored data is sealed and bound to its id (what ``omnisync encrypt`` leaves alone)."""
    return isinstance(data, dict) and len(data) == 1 and envelope.is_sealed(data.get(SEALED_EVENT))


_ID_START = len(envelope.PREFIX)
_TEXT = b"'"  # a plaintext that is a str: its UTF-8 after this byte (no JSON to write or read); else JSON


def _seal(data_key: DataKey, value: Any, *where: object) -> str:
    return _seal_at(data_key, value, envelope.place(*where))


def _seal_at(data_key: DataKey, value: Any, where: bytes) -> str:
    try:
        plaintext = _TEXT + value.encode() if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:
        raise NotSerializableError(f"a value to store must be JSON data: {exc}. Nothing was written.") from None
    return envelope.seal(data_key.key, data_key.id, plaintext, where)


class _Keys:
    """An opener's data keys, asked once per id for a page of values (what describes a value is
    only written out when it is needed: in an error)."""

    def __init__(self, opener: Opener) -> None:
        self.opener = opener
        self.known: dict[str, DataKey] = {}

    def get(self, data_key_id: str, what: "str | Message") -> DataKey:
        key = self.known.get(data_key_id)
        if key is None:
            key = self.known[data_key_id] = self.opener(data_key_id, _describe(what))
        return key


def _describe(what: "str | Message") -> str:
    if isinstance(what, Message):
        return f"message seq {what.seq} of session {what.session_id!r} of agent {what.agent!r}"
    return what


def _open(value: Any, where: tuple[object, ...], field: str, opener: Opener, accept_plaintext: bool, what: str) -> Any:
    return _open_at(value, envelope.place(*where, field), field, _Keys(opener), accept_plaintext, what)


def _open_at(value: Any, where: bytes, field: str, keys: _Keys, accept_plaintext: bool, what: "str | Message") -> Any:
    if not (isinstance(value, str) and value.startswith(envelope.PREFIX)):
        return _clear(value, accept_plaintext, what, field)
    data_key = keys.get(value[_ID_START : value.index(".", _ID_START)], what)
    plaintext = envelope.open_sealed(data_key.key, value, where, f"the {field} of {_describe(what)}")
    return plaintext[1:].decode() if plaintext[:1] == _TEXT else json.loads(plaintext)


def _open_dict(value: Any, where: tuple[object, ...], field: str, opener: Opener, accept_plaintext: bool, what: str) -> Any:
    if not _is_sealed_dict(value):
        return _clear(value, accept_plaintext, what, field)
    return _open(value[SEALED], where, field, opener, accept_plaintext, what)


def _is_sealed_dict(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and envelope.is_sealed(value.get(SEALED))


def _clear(value: Any, accept_plaintext: bool, what: "str | Message", field: str) -> Any:
    if accept_plaintext:
        return value
    raise DecryptionError(
        f"the {field} of {_describe(what)} is stored in clear, and this store is encrypted: it is refused, not read. "
        "Encrypt the store in place with `omnisync encrypt --url ...` (or open it with Encryption(..., accept_plaintext=True))."
    )
