"""A user message's content: a string, or a list of content parts as Chat Completions takes them.

The parts are the four OpenAI's description allows in a user message: ``text``, ``image_url``
(an http(s) URL or a ``data:image/...;base64,`` URL), ``input_audio`` (base64 wav or mp3) and
``file`` (base64 ``file_data`` or an uploaded ``file_id``). :func:`check_content` checks them
before anything is stored or the model is paid and copies them exactly as given;
:func:`describe` names them in a line without their data, for the CLI and summaries.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from typing import Any, Literal, TypedDict, Union
from urllib.parse import urlsplit

from .errors import ConfigurationError
from .storable import MAX_MESSAGE_BYTES, check_user_message, unstorable_characters

__all__ = [
    "AudioPart",
    "ContentPart",
    "FileData",
    "FilePart",
    "ImagePart",
    "ImageURL",
    "InputAudio",
    "PromptCacheBreakpoint",
    "TextPart",
    "UserContent",
]


class PromptCacheBreakpoint(TypedDict):
    mode: Literal["explicit"]


class _PartOptions(TypedDict, total=False):
    prompt_cache_breakpoint: PromptCacheBreakpoint


class TextPart(_PartOptions):
    """``{"type": "text", "text": "..."}``"""

    type: Literal["text"]
    text: str


class _ImageURLKeys(TypedDict):
    url: str


class ImageURL(_ImageURLKeys, total=False):
    """An http(s) URL or a ``data:image/png;base64,...`` URL; ``detail`` defaults to ``"auto"``."""

    detail: Literal["auto", "low", "high"]


class ImagePart(_PartOptions):
    """``{"type": "image_url", "image_url": {"url": "...", "detail": "low"}}``"""

    type: Literal["image_url"]
    image_url: ImageURL


class InputAudio(TypedDict):
    """Base64 audio (the data alone, not a data URL) and its format."""

    data: str
    format: Literal["wav", "mp3"]


class AudioPart(_PartOptions):
    """``{"type": "input_audio", "input_audio": {"data": "<base64>", "format": "wav"}}``"""

    type: Literal["input_audio"]
    input_audio: InputAudio


class FileData(TypedDict, total=False):
    """``file_data`` (base64, or a ``data:`` URL) with a ``filename``, or the ``file_id`` of an uploaded file."""

    filename: str
    file_data: str
    file_id: str


class FilePart(_PartOptions):
    """``{"type": "file", "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64,..."}}``"""

    type: Literal["file"]
    file: FileData


ContentPart = Union[TextPart, ImagePart, AudioPart, FilePart]
"""One part of a user message, as Chat Completions takes it: text, an image, audio or a file."""
UserContent = Union[str, Sequence[ContentPart]]
"""What ``run()`` takes as the user's message: a string, or a list of content parts."""

Content = Union[str, list[dict[str, Any]]]
"""A user message's content as omnisync keeps it: a string, or checked parts as plain dicts."""

_INNER = {"text": None, "image_url": ("url", "detail"), "input_audio": ("data", "format"), "file": ("filename", "file_data", "file_id")}
_DETAILS = ("auto", "low", "high")
_AUDIO_FORMATS = ("wav", "mp3")
_DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+)(?:;[\w.+-]+=[\w.+-]+)*;base64,(?P<data>.*)", re.DOTALL)
_EXAMPLES = {
    "text": '{"type": "text", "text": "What is in this picture?"}',
    "image_url": '{"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}}',
    "input_audio": '{"type": "input_audio", "input_audio": {"data": "<base64 of the file>", "format": "wav"}}',
    "file": '{"type": "file", "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64,<base64>"}}',
}


def check_content(message: object) -> Content:
    """``message`` as it will be stored and sent, or ConfigurationError saying what to change.

    Parts are copied, so changing the caller's list afterwards changes nothing stored.
    """
    if isinstance(message, str):
        return check_user_message(message)
    if not isinstance(message, (list, tuple)):
        raise ConfigurationError(
            f"message must be a string or a list of content parts such as {_EXAMPLES['text']}, not {type(message).__name__}"
        )
    if not message:
        raise ConfigurationError("message is an empty list: give at least one content part, or a string")
    for index, part in enumerate(message):
        _check_part(part, f"message[{index}]")
    text = json.dumps(list(message), ensure_ascii=False)
    size = len(text.encode("utf-8"))
    if size > MAX_MESSAGE_BYTES:
        raise ConfigurationError(
            f"message is {size} bytes as JSON; a message may hold at most {MAX_MESSAGE_BYTES} bytes "
            "(send large images and files by URL or file_id, or make them smaller)"
        )
    parts: list[dict[str, Any]] = json.loads(text)  # a deep copy, in the order given
    return parts


def _check_part(part: object, where: str) -> None:
    if not isinstance(part, dict):
        raise ConfigurationError(f"{where} must be a dict such as {_EXAMPLES['text']}, not {type(part).__name__}")
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in _INNER:
        raise ConfigurationError(f"{where} has type {kind!r}; a user message's parts are of type {_one_of(list(_INNER))}")
    _only(part, ("type", kind, "prompt_cache_breakpoint"), where, kind)
    if "prompt_cache_breakpoint" in part and part["prompt_cache_breakpoint"] != {"mode": "explicit"}:
        raise ConfigurationError(f'{where}["prompt_cache_breakpoint"] must be {{"mode": "explicit"}}')
    if kind == "text":
        _string(part, "text", where, kind)
        return
    inner = part.get(kind)
    if not isinstance(inner, dict):
        raise ConfigurationError(f"{where} needs {kind!r} as an object, e.g. {_EXAMPLES[kind]}")
    inside = f'{where}["{kind}"]'
    _only(inner, _INNER[kind] or (), inside, kind)
    if kind == "image_url":
        _check_image(inner, inside)
    elif kind == "input_audio":
        _check_audio(inner, inside)
    else:
        _check_file(inner, inside)


def _check_image(image: dict[str, Any], where: str) -> None:
    url = _string(image, "url", where, "image_url")
    if "detail" in image and image["detail"] not in _DETAILS:
        raise ConfigurationError(f'{where}["detail"] is {image["detail"]!r}; use {_one_of(list(_DETAILS))} (or leave it out for "auto")')
    if url.startswith("data:"):
        found = _DATA_URL.fullmatch(url)
        if found is None or not found["mime"].startswith("image/"):
            raise ConfigurationError(
                f'{where}["url"] is a data URL but not one of an image: write it as data:image/png;base64,<base64 data> '
                "(or data:image/jpeg, image/gif, image/webp)"
            )
        _base64(found["data"], f'{where}["url"]')
        return
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigurationError(
            f'{where}["url"] must be an http(s) URL or a data:image/...;base64, URL, not {_shown(url)} '
            "(to send a local file, read it and encode it: data:image/png;base64,<base64 of the file>)"
        )


def _check_audio(audio: dict[str, Any], where: str) -> None:
    data = _string(audio, "data", where, "input_audio")
    if audio.get("format") not in _AUDIO_FORMATS:
        raise ConfigurationError(f'{where}["format"] must be {_one_of(list(_AUDIO_FORMATS))}, not {audio.get("format")!r}')
    if data.startswith("data:"):
        raise ConfigurationError(f'{where}["data"] is a data URL; give the base64 data alone, without "data:...;base64,"')
    _base64(data, f'{where}["data"]')


def _check_file(file: dict[str, Any], where: str) -> None:
    if "file_data" not in file and "file_id" not in file:
        raise ConfigurationError(f"{where} needs file_data (with a filename) or file_id, e.g. {_EXAMPLES['file']}")
    for key in ("filename", "file_id"):
        if key in file:
            _string(file, key, where, "file")
    if "file_data" in file:
        data = _string(file, "file_data", where, "file")
        found = _DATA_URL.fullmatch(data) if data.startswith("data:") else None
        if data.startswith("data:") and found is None:
            raise ConfigurationError(f'{where}["file_data"] is a data URL but not a base64 one: write data:application/pdf;base64,<base64>')
        _base64(found["data"] if found else data, f'{where}["file_data"]')


def _only(value: dict[str, Any], allowed: Sequence[str], where: str, kind: str) -> None:
    unknown = [key for key in value if key not in allowed]
    if unknown:
        raise ConfigurationError(f"{where} has unknown key {unknown[0]!r}; it takes {_one_of(list(allowed))}, e.g. {_EXAMPLES[kind]}")


def _string(value: dict[str, Any], key: str, where: str, kind: str) -> str:
    text = value.get(key)
    if not isinstance(text, str) or not text:
        raise ConfigurationError(f'{where}["{key}"] must be a non-empty string, e.g. {_EXAMPLES[kind]}')
    if unstorable_characters(text):
        raise ConfigurationError(
            f'{where}["{key}"] holds a NUL character or a lone surrogate, which PostgreSQL, SQLite, Redis and MongoDB cannot store; '
            "remove it (or replace it) and run again"
        )
    return text


def _base64(data: str, where: str) -> None:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigurationError(
            f"{where} is not valid base64 (no line breaks or spaces): encode the bytes with base64.b64encode(data).decode('ascii')"
        ) from None


def _one_of(options: list[str]) -> str:
    quoted = [repr(option) for option in options]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _shown(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 1] + "…")


# --- naming parts without their data ----------------------------------------------------


def describe(content: object) -> str:
    """``content`` as one line of text: text parts as they are, the others named (``[image: image/png, 12.3 kB]``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    return " ".join(describe_part(part) for part in content)


def describe_part(part: object) -> str:
    if not isinstance(part, dict):
        return "[unknown part]"
    kind = part.get("type")
    inner = part.get(kind) if isinstance(kind, str) else None
    if kind == "text":
        return str(part.get("text", ""))
    if not isinstance(inner, dict):
        return f"[{kind}]"
    if kind == "image_url":
        url = str(inner.get("url", ""))
        found = _DATA_URL.fullmatch(url) if url.startswith("data:") else None
        shown = f"{found['mime']}, {human_size(decoded_size(found['data']))}" if found else url
        return f"[image: {shown}]"
    if kind == "input_audio":
        return f"[audio: {inner.get('format')}, {human_size(decoded_size(str(inner.get('data', ''))))}]"
    if kind == "file":
        data = str(inner.get("file_data", ""))
        found = _DATA_URL.fullmatch(data) if data.startswith("data:") else None
        named = [str(inner[key]) for key in ("filename", "file_id") if inner.get(key)]
        if found:
            named.append(found["mime"])
        if data:
            named.append(human_size(decoded_size(found["data"] if found else data)))
        return f"[file: {', '.join(named)}]"
    return f"[{kind}]"


def data_url_bytes(url: str) -> tuple[str, bytes] | None:
    """The media type and bytes of a base64 data URL, or None for any other URL."""
    found = _DATA_URL.fullmatch(url) if url.startswith("data:") else None
    if found is None:
        return None
    try:
        return found["mime"], base64.b64decode(found["data"])
    except (binascii.Error, ValueError):
        return None


def decoded_size(data: str) -> int:
    """How many bytes base64 ``data`` stands for, without decoding it."""
    return len(data) * 3 // 4 - len(data[-2:]) + len(data[-2:].rstrip("="))


def human_size(size: int) -> str:
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.1f} kB"
    return f"{size / 1_000_000:.1f} MB"
