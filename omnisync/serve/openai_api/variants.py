"""A served agent with a response's ``instructions`` and sampling: a twin on the same store.

The twin has the agent's name, store, memory config, tools and token counter, so it reads and
writes the same sessions and runs; only what it sends the upstream model differs: the
instructions after the agent's own system instruction, and ``temperature``, ``top_p``,
``max_tokens``, and the client's function tools beside the agent's. Twins are kept for reuse,
the most recent ``KEPT`` of them; one evicted is cleaned up once none of its runs goes on.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from ... import aio
from ..._aio_twin import twin_of
from ...agent import OmniCoreAgent
from .client_tools import registry_with

KEPT = 32


class Variants:
    """Twins of the served agents, by (agent, instructions, sampling, client tools)."""

    def __init__(self, in_use: Callable[[aio.OmniCoreAgent], bool]) -> None:
        self._twins: OrderedDict[str, aio.OmniCoreAgent] = OrderedDict()
        self._retired: list[aio.OmniCoreAgent] = []  # evicted, to clean up once no run of theirs goes on
        self._in_use = in_use

    def of(
        self, name: str, agent: aio.OmniCoreAgent, instructions: str | None, sampling: dict[str, Any], tools: list[dict[str, Any]]
    ) -> aio.OmniCoreAgent:
        """The agent itself when nothing differs, else its twin (``tools``: the client's, see :mod:`.client_tools`)."""
        if instructions is None and not sampling and not tools:
            return agent
        key = json.dumps([name, instructions, sampling, tools], sort_keys=True)
        twin = self._twins.get(key)
        if twin is None:
            twin = self._twins[key] = cast(aio.OmniCoreAgent, twin_of(_twin(agent.blocking, instructions, sampling, tools)))
            while len(self._twins) > KEPT:
                self._retired.append(self._twins.popitem(last=False)[1])
            self._clean_up_retired()
        self._twins.move_to_end(key)
        return twin


    def _clean_up_retired(self) -> None:
        """Each retired twin no run uses: its summaries waited for and its connections closed, in a thread of its own."""
        done = [twin for twin in self._retired if not self._in_use(twin)]
        self._retired = [twin for twin in self._retired if twin not in done]
        for twin in done:
            threading.Thread(target=twin.blocking.cleanup, name="omnisync-retired-twin", daemon=True).start()


def _twin(agent: OmniCoreAgent, instructions: str | None, sampling: dict[str, Any], tools: list[dict[str, Any]]) -> OmniCoreAgent:
    system = f"{agent.system_instruction}\n\n{instructions}" if instructions and agent.system_instruction else instructions or agent.system_instruction
    model_config = replace(agent.model_config, sampling={**agent.model_config.sampling, **sampling})
    return OmniCoreAgent(
        agent.name,
        system,
        model_config,
        memory_router=agent.memory_router,
        agent_config=cast(Any, agent.config),  # taken as it is (AgentConfig.from_dict)
        local_tools=registry_with(agent.tools, tools),
        token_counter=agent.token_counter,
    )
