"""Context management: keep one model call under its token budget.

Order of sacrifice: the oldest tool results of this run are shortened first, then the oldest
history messages are left out (a tool exchange as a whole). The system prompt and the newest
user message are never touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .agent_config import ContextConfig
from .tokens import TokenCounter, message_tokens

SHORTENED_NOTE = "\n[... shortened to fit the context budget ...]"


class Priced(NamedTuple):
    """A chat message with its token count, counted once."""

    chat: dict[str, Any]
    tokens: int


def price(counter: TokenCounter, chat: dict[str, Any]) -> Priced:
    return Priced(chat, message_tokens(counter, chat))


def fit_context(
    system: Priced,
    history: Sequence[Priced],
    current: Sequence[Priced],
    config: ContextConfig,
    counter: TokenCounter,
) -> list[Priced]:
    """The messages for one call: ``system``, then ``history`` (earlier runs), then ``current`` (this run).

    ``current`` starts with this run's user message. Only a shortened tool result is counted
    here; every other count comes with its message.
    """
    everything = [system, *history, *current]
    if not config.enabled:
        return everything
    total = sum(m.tokens for m in everything)
    budget = config.budget
    if total <= budget:
        return everything

    current = list(current)
    for index, message in enumerate(current):
        if total <= budget:
            break
        content = message.chat.get("content") or ""
        if message.chat.get("role") != "tool" or len(content) <= config.min_tool_result_chars:
            continue
        shortened = price(counter, dict(message.chat, content=content[: config.min_tool_result_chars] + SHORTENED_NOTE))
        total += shortened.tokens - message.tokens
        current[index] = shortened

    history = list(history)
    while history and total > budget:
        total -= history.pop(0).tokens
        while history and history[0].chat.get("role") == "tool":  # never keep results without their call
            total -= history.pop(0).tokens
    return [system, *history, *current]
