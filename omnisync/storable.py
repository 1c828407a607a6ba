"""What every store can keep, checked before a tool runs or the model is paid.

The stores refuse different things at different moments: PostgreSQL a NUL character or an id
longer than its column, SQLite, Redis and MongoDB a lone surrogate (it cannot be encoded as
UTF-8), MongoDB a document over 16 MB. The run loop applies the strictest of these rules to
every message before it writes, on every backend alike:

- a user message the stores would refuse is refused before anything is written or sent;
- what the model sends back is made storable where the meaning is clear (a NUL or a lone
  surrogate becomes U+FFFD, a tool call id too long for a column becomes a short id derived
  from it) and refused with :class:`~omnisync.errors.ModelResponseError` where it is not (a
  reply too large to store);
- a tool result, whose side effect has already happened, is always stored: made valid, and
  shortened with a note when it is too large;
- an identifier (an agent's name, a session id, a run id, a tool call id, a message's name)
  that some store could not keep is a :class:`~omnisync.errors.ConfigurationError` naming it,
  raised by the store base before any backend reads or writes (:func:`check_id`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from .errors import ConfigurationError, ModelResponseError, NotSerializableError
from .messages import Message

MAX_ID_LENGTH = 255  # the SQL store's id columns: agent, session_id, tool_call_id, a message's name
MAX_RUN_ID_LENGTH = 64  # ... and its run_id columns
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a message, and a run record quoting it, stay far below MongoDB's 16 MB document
REPLACEMENT = "\ufffd"
SHORTENED_NOTE = "\n[... shortened: the tool's result was larger than the {limit} bytes a message may hold ...]"

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_characters(text: str) -> bool:
    """True if ``text`` holds a NUL or a lone surrogate."""
    return _UNSTORABLE.search(text) is not None


def made_storable(text: str) -> str:
    """``text`` with each NUL and lone surrogate replaced by U+FFFD."""
    return _UNSTORABLE.sub(REPLACEMENT, text)


def check_id(value: object, field: str, limit: int = MAX_ID_LENGTH) -> None:
    """Refuse, naming ``field``, an identifier some store cannot keep."""
    if not isinstance(value, str):
        raise ConfigurationError(f"{field} must be a string, not {type(value).__name__} {value!r}")
    if unstorable_characters(value):
        raise ConfigurationError(
            f"{field} {value!r} holds a NUL character or a lone surrogate, which PostgreSQL, SQLite, Redis and MongoDB "
            "cannot all store; pass an id without them"
        )
    if len(value) > limit:
        raise ConfigurationError(f"{field} is {len(value)} characters long; it may be at most {limit}: pass a shorter one")


def check_optional_id(value: object, field: str, limit: int = MAX_ID_LENGTH) -> None:
    if value is not None:
        check_id(value, field, limit)


def check_message(message: Message) -> None:
    """Refuse, before anything is written, a message whose ids or JSON fields some store cannot keep."""
    check_optional_id(message.tool_call_id, "a message's tool_call_id")
    check_optional_id(message.name, "a message's name")
    check_optional_id(message.run_id, "a message's run_id", MAX_RUN_ID_LENGTH)
    check_json_fields(message)


def check_json_fields(message: Message) -> None:
    """Refuse metadata or tool calls that JSON cannot hold (every store keeps them as JSON)."""
    for field_name, value in (("metadata", message.metadata), ("tool_calls", message.tool_calls)):
        if value:
            try:
                json.dumps(value)
            except (TypeError, ValueError) as exc:
                raise NotSerializableError(
                    f"a message's {field_name} must be JSON data (dict, list, str, int, float, bool, None): {exc}. Nothing was written."
                ) from None


def size_in_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def check_user_message(message: str) -> str:
    """The user's message if every store can keep it, else ConfigurationError before anything happens."""
    if unstorable_characters(message):
        raise ConfigurationError(
            "message holds a NUL character or a lone surrogate, which PostgreSQL, SQLite, Redis and MongoDB cannot store; "
            "remove it (or replace it) and run again"
        )
    size = size_in_bytes(message)
    if size > MAX_MESSAGE_BYTES:
        raise ConfigurationError(f"message is {size} bytes; a message may hold at most {MAX_MESSAGE_BYTES} bytes")
    return message


def storable_reply(message: dict[str, Any]) -> dict[str, Any]:
    """The model's assistant message in a form every store keeps and the API takes back.

    Content is null only beside tool calls; a reply of none (a refusal, audio, a deprecated
    ``function_call``, nothing) keeps its refusal or its audio's transcript as text, else ``""``.

    Raises ModelResponseError for a reply too large to store (nothing of it is written).
    """
    calls = [_storable_call(call) for call in message.get("tool_calls") or []]
    content = message.get("content")
    if content is None and not calls:  # a request's assistant message needs content unless it has tool calls
        content = message.get("refusal") or (message.get("audio") or {}).get("transcript") or ""
    if isinstance(content, str):
        content = made_storable(content)
    reply: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        reply["tool_calls"] = calls
    size = size_in_bytes(content or "") + (size_in_bytes(json.dumps(calls, ensure_ascii=False)) if calls else 0)
    if size > MAX_MESSAGE_BYTES:
        raise ModelResponseError(
            f"the model's reply is {size} bytes, more than the {MAX_MESSAGE_BYTES} a stored message may hold; "
            "nothing of it was stored (lower max_tokens in model_config, or ask for a shorter answer)"
        )
    return reply


def storable_tool_result(content: str) -> str:
    """A tool's result as it is stored: valid text, shortened with a note when too large."""
    content = made_storable(content)
    if size_in_bytes(content) <= MAX_MESSAGE_BYTES:
        return content
    note = SHORTENED_NOTE.format(limit=MAX_MESSAGE_BYTES)
    room = MAX_MESSAGE_BYTES - size_in_bytes(note)
    return content.encode("utf-8")[:room].decode("utf-8", "ignore") + note


def storable_call_id(call_id: str) -> str:
    """A tool call id every store keeps: itself when it fits, else a short id derived from it."""
    if len(call_id) <= MAX_ID_LENGTH and not unstorable_characters(call_id):
        return call_id
    return "call_" + hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _storable_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call["function"]
    return {
        **call,
        "id": storable_call_id(call["id"]),
        "function": {**function, "name": made_storable(function["name"]), "arguments": made_storable(function.get("arguments") or "{}")},
    }
