"""Context management: keep one model call under its token budget.

Order of sacrifice: the oldest tool results of this run are shortened first, then the oldest
history messages are left out (a tool exchange as a whole). The system prompt and the newest
user message are never touched.
"""

from __future__ import annotations

from typing import Any

from .agent_config import ContextConfig
from .tokens import TokenCounter, message_tokens

SHORTENED_NOTE = "\n[... shortened to fit the context budget ...]"


def fit_context(
    system: dict[str, Any],
    history: list[dict[str, Any]],
    current: list[dict[str, Any]],
    config: ContextConfig,
    counter: TokenCounter,
    history_tokens: list[int] | None = None,
) -> list[dict[str, Any]]:
    """The messages for one call: ``system``, then ``history`` (earlier runs), then ``current`` (this run).

    ``current`` starts with this run's user message. ``history_tokens`` are the counts the
    store kept for the history, so a long window is not counted again on every call.
    """
    if not config.enabled:
        return [system, *history, *current]
    costs = {id(m): message_tokens(counter, m) for m in [system, *current]}
    if history_tokens is not None:
        costs.update((id(m), tokens) for m, tokens in zip(history, history_tokens))
    else:
        costs.update((id(m), message_tokens(counter, m)) for m in history)
    total = sum(costs.values())
    budget = config.budget
    if total <= budget:
        return [system, *history, *current]

    current = list(current)
    for index, message in enumerate(current):
        if total <= budget:
            break
        if message.get("role") != "tool" or len(message.get("content") or "") <= config.min_tool_result_chars:
            continue
        shortened = dict(message, content=message["content"][: config.min_tool_result_chars] + SHORTENED_NOTE)
        total += message_tokens(counter, shortened) - costs[id(message)]
        costs[id(shortened)] = message_tokens(counter, shortened)
        current[index] = shortened

    history = list(history)
    while history and total > budget:
        total -= costs[id(history.pop(0))]
        while history and history[0].get("role") == "tool":  # never keep results without their call
            total -= costs[id(history.pop(0))]
    return [system, *history, *current]
