"""Token counting that never touches the network during a run.

The default counter uses tiktoken's encoding for the model when tiktoken is installed and the
encoding file is already in its local cache; otherwise an estimator that counts every script
sensibly: a CJK character is about one token, a run of letters or digits about one token per
four characters, any other visible character one token. Pass ``token_counter=`` to the agent
for an exact count of your own.

A message of content parts counts its text parts as text and the others by rule (no part's
count depends on ``token_counter``):

- an image by OpenAI's documented rule for GPT-4o's vision: 85 tokens at ``detail: "low"``;
  otherwise (``"high"``, and ``"auto"`` counted as high) scaled to fit 2048x2048, then its
  shortest side to 768 px, and 85 plus 170 per 512 px tile. Its size is read from a data URL's
  header (PNG, JPEG, GIF, WebP); an image by URL, or of a size that cannot be read, is
  estimated as 1024x1024 (765 tokens). Models that count images in 32 px patches differ.
- audio: an estimate of 10 tokens a second, the length read from a WAV header, an MP3
  taken as 128 kbit/s.
- a file: an estimate of 1,000 tokens per PDF page (a page's text and image), pages counted
  in the data; 1,000 for a ``file_id`` or a PDF whose pages cannot be counted; one token per
  four bytes of any other file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from . import _env
from .content import data_url_bytes
from .image_size import image_size

TokenCounter = Callable[[str], int]

MESSAGE_OVERHEAD = 4  # role and separators, as OpenAI's chat format counts them
IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
UNKNOWN_IMAGE_SIZE = (1024, 1024)
AUDIO_TOKENS_PER_SECOND = 10
MP3_BYTES_PER_SECOND = 16_000  # 128 kbit/s
FILE_PAGE_TOKENS = 1000
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_PIECES = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\s\w]", re.UNICODE)
_ENCODING_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


def estimate_tokens(text: str) -> int:
    """An offline estimate that treats every script fairly."""
    count = 0
    for piece in _PIECES.findall(text):
        count += math.ceil(len(piece) / 4) if piece[0].isalnum() and len(piece) > 1 else 1
    return count


def _tiktoken_cache_dir() -> str | None:
    configured = _env.tiktoken_cache_dir()
    if configured is not None:
        return configured or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


@lru_cache(maxsize=16)
def _offline_tiktoken(model: str) -> TokenCounter | None:
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        name = tiktoken.encoding_name_for_model(model)
    except KeyError:
        name = "o200k_base"
    url = _ENCODING_URLS.get(name)
    cache = _tiktoken_cache_dir()
    if url is None or cache is None:
        return None
    if not os.path.exists(os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())):
        return None
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception:  # a broken cache file: fall back rather than fetch
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def default_counter(model: str) -> TokenCounter:
    """tiktoken for ``model`` if it is available offline, else :func:`estimate_tokens`."""
    return _offline_tiktoken(model) or estimate_tokens


def message_tokens(counter: TokenCounter, chat: dict[str, Any]) -> int:
    """Tokens one chat message costs: its content, its tool calls, and the per-message overhead."""
    total = MESSAGE_OVERHEAD
    content = chat.get("content")
    if isinstance(content, list):
        total += sum(part_tokens(counter, part) for part in content)
    elif content:
        total += counter(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    if chat.get("tool_calls"):
        total += counter(json.dumps(chat["tool_calls"], ensure_ascii=False))
    return total


def part_tokens(counter: TokenCounter, part: dict[str, Any]) -> int:
    """Tokens one content part costs (see the module docstring for the rules)."""
    kind = part.get("type")
    if kind == "text":
        return counter(part["text"])
    if kind == "image_url":
        return image_tokens(part["image_url"]["url"], part["image_url"].get("detail", "auto"))
    if kind == "input_audio":
        return audio_tokens(part["input_audio"]["data"], part["input_audio"]["format"])
    if kind == "file":
        return file_tokens(part["file"].get("file_data"))
    return counter(json.dumps(part, ensure_ascii=False))


def image_tokens(url: str, detail: str = "auto") -> int:
    if detail == "low":
        return IMAGE_BASE_TOKENS
    decoded = data_url_bytes(url)
    size = image_size(decoded[1]) if decoded else None
    return tile_tokens(*(size or UNKNOWN_IMAGE_SIZE))


def tile_tokens(width: float, height: float) -> int:
    """An image's tokens at high detail: fit in 2048x2048, shortest side to 768, 170 per 512 px tile plus 85."""
    if max(width, height) > 2048:
        scale = 2048 / max(width, height)
        width, height = width * scale, height * scale
    if min(width, height) > 768:
        scale = 768 / min(width, height)
        width, height = width * scale, height * scale
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * math.ceil(width / 512) * math.ceil(height / 512)


def audio_tokens(data: str, audio_format: str) -> int:
    audio = _decoded(data)
    per_second = MP3_BYTES_PER_SECOND
    if audio_format == "wav" and audio[:4] == b"RIFF" and audio[8:12] == b"WAVE" and len(audio) >= 32:
        per_second = int.from_bytes(audio[28:32], "little") or per_second  # the fmt chunk's byte rate
    return math.ceil(len(audio) / per_second * AUDIO_TOKENS_PER_SECOND)


def file_tokens(file_data: str | None) -> int:
    if not file_data:
        return FILE_PAGE_TOKENS
    found = data_url_bytes(file_data)
    data = found[1] if found else _decoded(file_data)
    if data[:5] == b"%PDF-":
        return FILE_PAGE_TOKENS * max(1, len(_PDF_PAGE.findall(data)))
    return math.ceil(len(data) / 4)


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data)
    except ValueError:
        return b""
