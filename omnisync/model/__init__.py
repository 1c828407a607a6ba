"""The model side: configuration, the Chat Completions HTTP client and its retry rules."""

from .client import ChatClient, Completion
from .config import ModelConfig

__all__ = ["ChatClient", "Completion", "ModelConfig"]
