"""Which agents a server serves, by the name in its URLs.

A token's scope is a served entry. Two entries whose agents have one ``name`` on one store
would read and write the same sessions and runs, so a token of one would reach the other's:
they are refused at start. Stores are told apart without opening them: two agents on one
router share a store, and so may two routers of the same kind on a URL (only two separate
in-process stores certainly do not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union, cast

from .. import aio
from .._aio_twin import twin_of
from ..agent import OmniCoreAgent
from ..errors import ConfigurationError
from ..storable import unstorable_characters
from ..stores.registry import KINDS

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
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_LENGTH or "/" in name or unstorable_characters(name):
            raise ConfigurationError(
                f"an agent's name in the URL must be 1 to {MAX_NAME_LENGTH} characters without '/', NUL or lone surrogates, not {name!r}"
            )
        if name in served:
            raise ConfigurationError(f"two agents are served as {name!r}: give them different names (or serve a mapping)")
        served[name] = agent if isinstance(agent, aio.OmniCoreAgent) else cast(aio.OmniCoreAgent, twin_of(agent))
    if not served:
        raise ConfigurationError("there is no agent to serve")
    _check_apart(served)
    return served


def _check_apart(served: Mapping[str, aio.OmniCoreAgent]) -> None:
    seen: dict[str, tuple[str, OmniCoreAgent]] = {}
    for entry, agent in served.items():
        blocking = agent.blocking
        earlier = seen.get(blocking.name)
        if earlier is not None and _may_share_a_store(earlier[1], blocking):
            raise ConfigurationError(
                f"the served entries {earlier[0]!r} and {entry!r} are agents with the same name {blocking.name!r} on a store they may share "
                "(one router, or two of one kind): "
                "each would see the other's sessions and runs, and so would a token of either; "
                "give the agents a different name (OmniCoreAgent(name=...)) or serve only one of them"
            )
        seen.setdefault(blocking.name, (entry, blocking))


def _may_share_a_store(a: OmniCoreAgent, b: OmniCoreAgent) -> bool:
    if a.memory_router is b.memory_router:
        return True
    return KINDS[a.get_memory_store_type()].networked or KINDS[b.get_memory_store_type()].networked  # two in-process stores are apart
