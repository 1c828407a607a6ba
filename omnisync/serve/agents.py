"""Which agents a server serves, by the name in its URLs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union, cast

from .. import aio
from ..agent import OmniCoreAgent
from ..errors import ConfigurationError

AnyAgent = Union[OmniCoreAgent, aio.OmniCoreAgent]
Agents = Union[AnyAgent, Sequence[AnyAgent], Mapping[str, AnyAgent]]
MAX_NAME_LENGTH = 255


def served_agents(agents: Any) -> dict[str, aio.OmniCoreAgent]:
    """``{url name: aio agent}`` from one agent, a list (named by ``agent.name``) or a mapping."""
    pairs: list[tuple[Any, Any]]
    if isinstance(agents, (OmniCoreAgent, aio.OmniCoreAgent)):
        pairs = [(agents.name, agents)]
    elif isinstance(agents, Mapping):
        pairs = list(agents.items())
    elif isinstance(agents, Sequence) and not isinstance(agents, (str, bytes)):
        pairs = [(getattr(agent, "name", None), agent) for agent in agents]
    else:
        raise ConfigurationError(f"serve an OmniCoreAgent, a list of them or a mapping of names to them, not {type(agents).__name__}")
    served: dict[str, aio.OmniCoreAgent] = {}
    for name, agent in pairs:
        if not isinstance(agent, (OmniCoreAgent, aio.OmniCoreAgent)):
            raise ConfigurationError(f"serve OmniCoreAgent instances (from omnisync or omnisync.aio), not {type(agent).__name__}")
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_LENGTH or "/" in name:
            raise ConfigurationError(f"an agent's name in the URL must be 1 to {MAX_NAME_LENGTH} characters without '/', not {name!r}")
        if name in served:
            raise ConfigurationError(f"two agents are served as {name!r}: give them different names (or serve a mapping)")
        served[name] = agent if isinstance(agent, aio.OmniCoreAgent) else cast(aio.OmniCoreAgent, getattr(aio, "_twin_of")(agent))
    if not served:
        raise ConfigurationError("there is no agent to serve")
    return served
