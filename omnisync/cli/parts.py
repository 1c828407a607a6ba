"""Content parts on the command line: a message given as JSON, and base64 data kept out of ``--json`` output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..content import describe_part


def message_json(text: str) -> Any:
    """``--message-json``: a JSON string or list of content parts, or ``@FILE`` holding one (checked again by the agent)."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise argparse.ArgumentTypeError(f"cannot read {text[1:]!r}: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg} at position {exc.pos})") from None
    if not isinstance(value, (str, list)):
        raise argparse.ArgumentTypeError(
            'must be a JSON string or a list of content parts such as [{"type": "text", "text": "Describe it"}, '
            f'{{"type": "image_url", "image_url": {{"url": "https://example.com/cat.png"}}}}], not a JSON {type(value).__name__}'
        )
    return value


def elided(content: Any) -> Any:
    """``content`` with each part's base64 data replaced by the name the tables show (``[image: image/png, 12.3 kB]``).

    The parts keep their shape, so a program reads them as it would the full ones; URLs and
    file ids, which are not data, stay as they are.
    """
    if not isinstance(content, list):
        return content
    return [_elided_part(part) for part in content]


def elided_message(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message (``content``) or an export line (``message.content``) with its parts' data elided."""
    if isinstance(message.get("message"), dict):
        return {**message, "message": elided_message(message["message"])}
    if isinstance(message.get("content"), list):
        return {**message, "content": elided(message["content"])}
    return message


def _elided_part(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    inner = part.get(kind) if isinstance(kind, str) else None
    if not isinstance(inner, dict):
        return part
    key = {"image_url": "url", "input_audio": "data", "file": "file_data"}.get(str(kind))
    if key is None or not isinstance(inner.get(key), str):
        return part
    if kind == "image_url" and not inner[key].startswith("data:"):
        return part
    return {**part, kind: {**inner, key: describe_part(part)}}
