"""What the ``/v1`` routes use of the server: its agents, who may use which, its runs, its limits."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from ... import aio
from ..bodies import read_body_json
from ..runs import RunHub
from .errors import OpenAIError
from .variants import Variants


@dataclass
class Host:
    """The server's agents by URL name, ``visible(request)`` the names the request's token may use (401 without one)."""

    agents: dict[str, aio.OmniCoreAgent]
    hub: RunHub
    visible: Callable[[Request], Collection[str]]
    max_body: int
    body_seconds: float
    variants: Variants = field(init=False)

    def __post_init__(self) -> None:
        self.variants = Variants(self.hub.drives_agent)

    def agent(self, request: Request, model: str) -> aio.OmniCoreAgent:
        """The agent ``model`` names, if the token may use it; else a 404 naming ``model``."""
        if model not in self.visible(request) or model not in self.agents:
            raise OpenAIError(404, f"no model {model!r} here: GET /v1/models lists the agents this token may use", "model", "model_not_found")
        return self.agents[model]

    def models(self, request: Request) -> list[str]:
        visible = self.visible(request)
        return [name for name in self.agents if name in visible]

    async def body(self, request: Request) -> dict[str, Any]:
        data = await read_body_json(request, self.max_body, self.body_seconds)
        if not isinstance(data, dict):
            raise OpenAIError(400, "the body must be a JSON object", None, "invalid_type")
        return data


async def append_messages(agent: aio.OmniCoreAgent, session_id: str, chats: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write chat messages into a session outside any run (a conversation's items, a response's earlier
    input items); return them as history entries with their ``seq``."""
    if not chats:
        return []
    written = await agent.add_messages(session_id, chats)
    return [{key: value for key, value in entry.items() if key not in ("status", "summary", "partial", "run_id")} for entry in written]
