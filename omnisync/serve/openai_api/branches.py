"""``previous_response_id`` naming a response that is not its session's latest: a fork of the
session up to that response (``agent.fork_session``: its messages, folded ones and summaries
too), so the answer continues from that point and the later turns stay where they were.
"""

from __future__ import annotations

import secrets

from ... import aio
from ...errors import ConfigurationError
from .errors import OpenAIError


async def session_at(agent: aio.OmniCoreAgent, session_id: str, run_id: str) -> str:
    """``session_id`` when ``run_id`` wrote its newest active message, else a new session forked at that run's last message."""
    history = await agent.get_session_history(session_id, include_inactive=True)
    newest = next((m for m in reversed(history) if m.get("status") == "active"), None)
    if newest is None or newest.get("run_id") == run_id:
        return session_id
    ends = [seq for m in history if m.get("run_id") == run_id and (seq := m.get("seq")) is not None]
    if not ends:
        return session_id  # the run wrote nothing the session still holds: nothing to branch from
    try:
        return await agent.fork_session(session_id, at=max(ends), new_session_id=f"resp_{secrets.token_hex(16)}")
    except ConfigurationError as exc:  # its turn was folded into a summary or undone
        raise OpenAIError(
            400,
            f"previous_response_id {run_id!r} cannot be continued from: {exc}. Continue the conversation from its latest response instead",
            "previous_response_id",
            "invalid_value",
        ) from exc
