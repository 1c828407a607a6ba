"""The model side: configuration, the Chat Completions HTTP client and its retry rules.

``Completion`` (omnisync.model.completion) needs no HTTP library; the client and the stream
load ``requests`` when they are first used from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_names

_HOMES = {
    "ChatClient": "client",
    "Completion": "completion",
    "CompletionStream": "stream",
    "ModelConfig": "config",
    "TextFragment": "stream",
    "ToolCallFragment": "stream",
}

__all__ = list(_HOMES)
__getattr__: Callable[[str], Any] = lazy_names(__name__, _HOMES)

if TYPE_CHECKING:
    from .client import ChatClient as ChatClient
    from .completion import Completion as Completion
    from .config import ModelConfig as ModelConfig
    from .stream import CompletionStream as CompletionStream, TextFragment as TextFragment, ToolCallFragment as ToolCallFragment
