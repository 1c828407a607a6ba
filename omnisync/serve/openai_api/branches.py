"""``previous_response_id`` naming a response that is not its session's latest: a new session
that holds the old one up to that response (its messages copied, folded ones and summaries
too), so the answer continues from that point and the later turns stay where they were.
"""

from __future__ import annotations

import secrets
from dataclasses import replace

from ... import aio
from ..._aio_pool import call as in_thread
from ...agent import OmniCoreAgent


async def session_at(agent: aio.OmniCoreAgent, session_id: str, run_id: str) -> str:
    """``session_id`` when ``run_id`` wrote its newest message, else a new session copied up to that run's last message."""
    return str(await in_thread(_session_at, agent.blocking, session_id, run_id))


def _session_at(agent: OmniCoreAgent, session_id: str, run_id: str) -> str:
    store = agent.memory_router.store
    newest = store.latest(agent.name, session_id, 1)
    if not newest or newest[0].run_id == run_id:
        return session_id
    history = store.history(agent.name, session_id, include_inactive=True)
    ends = [m.seq for m in history if m.run_id == run_id and m.seq is not None]
    if not ends:
        return session_id  # the run wrote nothing the session still holds: nothing to branch from
    copied = [replace(m, seq=None, created_at=None) for m in history if m.seq is not None and m.seq <= max(ends)]
    branch = f"resp_{secrets.token_hex(16)}"
    store.append(agent.name, branch, copied)
    return branch
