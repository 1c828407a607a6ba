"""Stored messages as the API's items, and input items as chat messages.

A session's messages become ``message`` items (``input_text``/``input_image``/``input_file``
parts for the user, ``output_text`` for the assistant, a summary as a ``system`` message),
``function_call`` items (one per tool call of an assistant message) and
``function_call_output`` items. An item's id names the message it comes from by its ``seq``
(``msg_12``, ``fc_12_0``, ``fco_14``), so it is found again without another index.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import OpenAIError, unsupported

PREFIXES = ("msg", "fc", "fco")


def items_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of one history entry (``get_session_history_page(include_inactive=True)``: it has ``seq``)."""
    seq, role = message["seq"], message["role"]
    if role == "tool":
        output = message["content"] if isinstance(message["content"], str) else json.dumps(message["content"])
        return [{"type": "function_call_output", "id": f"fco_{seq}", "call_id": message.get("tool_call_id") or "", "output": output, "status": "completed"}]
    if role == "user":
        return [{"type": "message", "id": f"msg_{seq}", "status": "completed", "role": "user", "content": input_parts(message["content"])}]
    if role == "assistant":
        found: list[dict[str, Any]] = []
        if message.get("content"):
            found.append(output_message(f"msg_{seq}", str(message["content"]), "incomplete" if message.get("partial") else "completed"))
        for n, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            found.append(
                {"type": "function_call", "id": f"fc_{seq}_{n}", "call_id": call.get("id", ""), "name": function.get("name", ""),
                 "arguments": function.get("arguments", ""), "status": "completed"}
            )
        return found
    return [{"type": "message", "id": f"msg_{seq}", "status": "completed", "role": "system", "content": input_parts(message.get("content") or "")}]


def output_message(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": [output_text(text)]}


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def input_parts(content: Any) -> list[dict[str, Any]]:
    """A user message's content as input content parts."""
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    parts: list[dict[str, Any]] = []
    for part in content or []:
        kind = part.get("type")
        if kind == "text":
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url":
            image = part.get("image_url") or {}
            parts.append({"type": "input_image", "image_url": image.get("url"), "detail": image.get("detail", "auto")})
        elif kind == "file":
            file = part.get("file") or {}
            parts.append({"type": "input_file", **{k: file[k] for k in ("file_data", "file_id", "filename") if k in file}})
        else:
            parts.append({"type": "input_text", "text": f"[{kind}]"})
    return parts


def seq_of(item_id: str) -> int | None:
    """The seq of the message an item id names, or None if it is not one of ours."""
    prefix, _, rest = item_id.partition("_")
    head = rest.split("_", 1)[0]
    if prefix not in PREFIXES or not head.isdigit() or len(head) > 18:
        return None
    return int(head)


def chat_messages(items: Any, param: str) -> list[dict[str, Any]]:
    """Input items (``input`` of a response, ``items`` of a conversation) as chat messages, refused with a 400 naming what is not supported.

    ``function_call`` items join the assistant message right before them (parallel calls: one
    message); ``function_call_output`` items are tool messages; an ``mcp_call`` item (a call
    the server ran, sent back by a stateless client) is both.
    """
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise OpenAIError(400, f"{param} must be a string or a list of items", param, "invalid_type")
    chats: list[dict[str, Any]] = []
    for n, item in enumerate(items):
        where = f"{param}[{n}]"
        if not isinstance(item, dict):
            raise OpenAIError(400, f"{where} must be an item object", where, "invalid_type")
        kind = item.get("type", "message")
        if kind == "message":
            chats.append(_chat_message(item, where))
        elif kind in ("function_call", "mcp_call"):
            call = {"id": _text(item, "call_id" if kind == "function_call" else "id", where), "type": "function",
                    "function": {"name": _text(item, "name", where), "arguments": str(item.get("arguments") or "{}")}}
            last = chats[-1] if chats else None
            if last is not None and last["role"] == "assistant":
                last["tool_calls"] = [*(last.get("tool_calls") or []), call]
            else:
                chats.append({"role": "assistant", "content": None, "tool_calls": [call]})
            if kind == "mcp_call":
                chats.append({"role": "tool", "tool_call_id": call["id"], "content": str(item.get("output") or "")})
        elif kind == "function_call_output":
            output = item.get("output")
            if not isinstance(output, str):
                raise unsupported(f"{where}.output", "an output that is not a string")
            chats.append({"role": "tool", "tool_call_id": _text(item, "call_id", where), "content": output})
        else:
            raise unsupported(f"{where}.type", f"items of type {kind!r} (message, function_call, function_call_output)")
    return chats


def _text(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise OpenAIError(400, f"{where}.{key} must be a non-empty string", f"{where}.{key}", "invalid_value")
    return value


def _chat_message(item: dict[str, Any], param: str) -> dict[str, Any]:
    role, content = item.get("role"), item.get("content")
    if role not in ("user", "assistant"):
        raise unsupported(f"{param}.role", f"messages of role {role!r} (use 'user' or 'assistant'; give a system message as instructions)")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        raise OpenAIError(400, f"{param}.content must be a string or a list of content parts", f"{param}.content", "invalid_type")
    parts = [_chat_part(part, f"{param}.content[{n}]") for n, part in enumerate(content)]
    if role == "assistant":
        return {"role": role, "content": "".join(part.get("text", "") for part in parts)}
    if all(part["type"] == "text" for part in parts):
        return {"role": role, "content": "".join(part["text"] for part in parts)} if len(parts) == 1 else {"role": role, "content": parts}
    return {"role": role, "content": parts}


def _chat_part(part: Any, param: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text"):
        return {"type": "text", "text": str(part.get("text", ""))}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image: dict[str, Any] = {"url": part["image_url"]}
        if part.get("detail") in ("low", "high", "auto"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file" and (part.get("file_data") or part.get("file_id")):
        return {"type": "file", "file": {k: part[k] for k in ("file_data", "file_id", "filename") if part.get(k)}}
    raise unsupported(f"{param}.type", f"content parts of type {kind!r} (input_text, input_image with an image_url, input_file)")
