"""Message content on spans: only when asked for, and then redacted.

Content (``gen_ai.input.messages``, ``gen_ai.output.messages``, tool arguments and results)
goes on a span only with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` or an
agent built with ``agent_config={"capture_message_content": True}``, and then through :mod:`omnisync.redact` (API keys, bearer tokens, URL passwords masked). Messages
take the conventions' shape: a role and its parts; an image or file part says its type only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .. import _env
from ..redact import redact_text, redact_value


def capturing(asked: bool = False) -> bool:
    """Whether spans may carry content: ``asked`` (the agent's ``capture_message_content``) or the
    environment's opt-in, read at each run."""
    return asked or _env.capture_message_content()


def as_json(value: Any) -> str:
    """``value`` redacted, as the JSON string an attribute holds."""
    return json.dumps(redact_value(value), ensure_ascii=False, default=str)


def redacted(text: str) -> str:
    return redact_text(text)


def messages(chat: Iterable[Mapping[str, Any]]) -> str:
    """Chat Completions messages as the conventions' ``gen_ai.input.messages`` (redacted JSON)."""
    return as_json([_message(m) for m in chat])


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"), "response": message.get("content")})
    else:
        parts.extend(_content_parts(message.get("content")))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"), "arguments": function.get("arguments")})
    return {"role": role, "parts": parts}


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append({"type": "text", "content": part.get("text")})
        else:  # an image, audio or file: its data stays out
            parts.append({"type": part.get("type") if isinstance(part, Mapping) else type(part).__name__})
    return parts
