"""What a model call is given: the system prompt, the session's window, this run's messages.

One builder serves the run loop and ``preview``, so a preview shows exactly what a run would
send. Every text is token-counted once: the system prompt when the builder is made, a stored
message when it was written (the count is kept with it), a new message when it is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .agent_config import AgentConfig, ContextConfig
from .content import Content, check_content
from .context import Priced, fit_context, price
from .memory_config import MemoryConfig
from .messages import Message
from .stores.base import MemoryStore
from .tokens import TokenCounter, default_counter


@dataclass(frozen=True)
class Prompt:
    """The messages of one model call, each with its token count."""

    messages: list[dict[str, Any]]
    tokens: list[int]


class PromptBuilder:
    """Builds the messages of an agent's model calls."""

    def __init__(self, system_instruction: str, memory: MemoryConfig, context: ContextConfig, counter: TokenCounter) -> None:
        self.memory = memory
        self.context = context
        self.counter = counter
        self.system: Priced = price(counter, {"role": "system", "content": system_instruction})

    def price(self, chat: dict[str, Any]) -> Priced:
        """A new message with its token count."""
        return price(self.counter, chat)

    def window(self, store: MemoryStore, agent: str, session_id: str, before_seq: int | None = None) -> list[Message]:
        """The session's history a run is given: the window of ``memory_config``."""
        return store.window(
            agent, session_id, max_messages=self.memory.max_messages, max_tokens=self.memory.max_tokens, before_seq=before_seq
        )

    def history(self, window: Sequence[Message]) -> list[Priced]:
        """Stored messages as chat messages, with the counts stored beside them."""
        return [Priced(m.to_chat(), m.tokens) if m.tokens else self.price(m.to_chat()) for m in window]

    def earlier(self, window: Sequence[Message]) -> list[Priced]:
        """Earlier runs' messages as a model call may be given them: only complete tool exchanges."""
        return self.history(complete_exchanges(window))

    def build(self, history: Sequence[Priced], current: Sequence[Priced]) -> Prompt:
        """The messages of one call, fitted to the context budget."""
        fitted = fit_context(self.system, history, current, self.context, self.counter)
        return Prompt([m.chat for m in fitted], [m.tokens for m in fitted])

    def preview(self, store: MemoryStore, agent: str, session_id: str, message: Content | None = None) -> dict[str, Any]:
        """What the next model call of ``session_id`` would be given (``message`` as its user message)."""
        window = self.window(store, agent, session_id)
        current = [self.price({"role": "user", "content": message})] if message is not None else []
        prompt = self.build(self.earlier(window), current)
        return {
            "messages": prompt.messages,
            "tokens": prompt.tokens,
            "total_tokens": sum(prompt.tokens),
            "window": {"mode": self.memory.mode, "value": self.memory.value, "messages": len(window)},
            "summary": next((m.content for m in window if m.is_summary), None),
        }


def complete_exchanges(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every tool call that has no result right after it left out, and every stray result.

    A session can hold such a call when a run was cancelled while it waited for an approval
    or died before it was closed; the API refuses a request that carries one (or a result
    without its call, or anything between a call and its result). A call's results must
    follow its assistant message directly; an assistant message left with neither calls nor
    text is left out as a whole.
    """
    kept: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            continue  # its call is not right before it
        if message.role != "assistant" or not message.tool_calls:
            kept.append(message)
            continue
        results: dict[str, Message] = {}
        while index < len(messages) and messages[index].role == "tool":
            results.setdefault(messages[index].tool_call_id or "", messages[index])
            index += 1
        calls = [c for c in message.tool_calls if c.get("id") in results]
        if len(calls) == len(message.tool_calls) and len(results) == len(calls):
            kept.append(message)
            kept.extend(results[c["id"]] for c in calls)
        elif calls:
            kept.append(replace(message, tool_calls=calls))
            kept.extend(results[c["id"]] for c in calls)
        elif message.content:
            kept.append(replace(message, tool_calls=None))
    return kept


def preview(
    store: MemoryStore,
    agent: str,
    session_id: str,
    *,
    system_instruction: str = "",
    message: str | list[dict[str, Any]] | None = None,
    agent_config: dict[str, Any] | None = None,
    token_counter: TokenCounter | None = None,
    model: str = "",
) -> dict[str, Any]:
    """``OmniCoreAgent.preview`` without an agent or a model: what the next call of a session would be given.

    ``agent_config`` is the agent's (only ``memory_config`` and ``context_management`` matter;
    a bad one raises ConfigurationError); ``model`` picks the default token counter.
    """
    config = AgentConfig.from_dict(agent_config)
    builder = PromptBuilder(system_instruction, config.memory, config.context, token_counter or default_counter(model))
    return builder.preview(store, agent, session_id, None if message is None else check_content(message))
