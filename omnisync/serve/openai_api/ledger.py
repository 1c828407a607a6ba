"""What the OpenAI API keeps beside an agent's sessions and runs: a conversation's metadata, a
response's request. Each is an append-only log of ``(name, data)`` records in the agent's store
(the same log a run's events use, under a key of its own), so it lives on every store the
server supports and a restarted server, or another worker, reads the same.
"""

from __future__ import annotations

from typing import Any

from ... import aio

CONVERSATION = "oai.c:"
RESPONSE = "oai.r:"


async def append(agent: aio.OmniCoreAgent, key: str, name: str, data: dict[str, Any]) -> None:
    await agent.append_run_events(key, [(name, data)])


async def read(agent: aio.OmniCoreAgent, key: str) -> dict[str, Any] | None:
    """The records folded into one dict (a later record's keys over an earlier's); None if there are none or the last is ``deleted``."""
    folded: dict[str, Any] = {}
    after = 0
    while True:
        page = await agent.read_run_events(key, after)
        if not page:
            break
        for event in page:
            if event.name == "deleted":
                folded = {}
            else:
                folded.update(event.data)
        after = page[-1].id
    return folded or None
