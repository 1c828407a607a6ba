"""The model side: configuration, the Chat Completions HTTP client and its retry rules."""

from .client import ChatClient, Completion
from .config import ModelConfig
from .stream import CompletionStream, TextDelta, ToolCallDelta

__all__ = ["ChatClient", "Completion", "CompletionStream", "ModelConfig", "TextDelta", "ToolCallDelta"]
