"""``preview``: exactly what the next model call of a session would be given, without making it.

The window depends on the agent's ``memory_config`` and the first message on its system
instruction, which live in the agent's code, not in the store: ``--memory-config`` and
``--system`` give them. It uses the agents' own prompt builder, and no model.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..content import describe
from ..router import MemoryRouter
from .errors import UsageError
from .output import print_json, snippet, table
from .parts import elided_message

def memory_config(text: str) -> dict[str, Any]:
    """``--memory-config``: a JSON object (checked again, in full, by the agent)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f'must be a JSON object such as {{"mode": "sliding_window", "value": 20}}, not {text!r}')
    return value


def preview(args: argparse.Namespace, router: MemoryRouter) -> int:
    from ..errors import ConfigurationError
    from ..prompt import preview as preview_of

    agent_config = {"memory_config": args.memory_config} if args.memory_config is not None else None
    try:
        shown = preview_of(
            router.store, args.agent, args.session, system_instruction=args.system, message=args.message, agent_config=agent_config
        )
    except ConfigurationError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print_json(shown if args.full else {**shown, "messages": [elided_message(dict(m)) for m in shown["messages"]]})
        return 0
    window = shown["window"]
    print(f"window: {window['mode']} {window['value']}: {window['messages']} messages of history")
    print(f"summary: {snippet(shown['summary']) if shown['summary'] else '(none)'}")
    print(f"total tokens: {shown['total_tokens']}")
    print()
    table(
        ("#", "ROLE", "TOKENS", "CONTENT"),
        [(i, m["role"], tokens, _content(m)) for i, (m, tokens) in enumerate(zip(shown["messages"], shown["tokens"]))],
    )
    return 0


def _content(chat: dict[str, Any]) -> str:
    if chat.get("tool_calls"):
        return snippet("→ " + ", ".join(c.get("function", {}).get("name", "?") for c in chat["tool_calls"]))
    return snippet(describe(chat.get("content")))
