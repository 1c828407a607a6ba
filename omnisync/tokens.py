"""Token counting that never touches the network during a run.

The default counter uses tiktoken's encoding for the model when tiktoken is installed and the
encoding file is already in its local cache; otherwise an estimator that counts every script
sensibly: a CJK character is about one token, a run of letters or digits about one token per
four characters, any other visible character one token. Pass ``token_counter=`` to the agent
for an exact count of your own.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from functools import lru_cache
from typing import Any

TokenCounter = Callable[[str], int]

MESSAGE_OVERHEAD = 4  # role and separators, as OpenAI's chat format counts them
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
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return os.environ[variable] or None
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
    if content:
        total += counter(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    if chat.get("tool_calls"):
        total += counter(json.dumps(chat["tool_calls"], ensure_ascii=False))
    return total
