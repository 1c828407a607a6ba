"""An agent for ``omnisync serve served_worker:agent``, as each worker process of the
many-workers tests builds it: its store, model and lease from the environment.

    SERVED_KIND, SERVED_URL    the store every worker shares (no URL for in_memory)
    SERVED_AGENT               the agent's name (one per test)
    SERVED_MODEL_URL           cassettes/scripted_model.py, started by the test
    SERVED_LEASE               run_lease_seconds
    SERVED_SLOW=1              the "slow" tool sleeps for as long as asked (else returns at once)
"""

from __future__ import annotations

import os
import time

from helpers.tool_agents import SYSTEM, counting_tools

from omnisync import MemoryRouter, OmniCoreAgent

tools = counting_tools()


@tools.register_tool()
def slow(seconds: float) -> str:
    """Takes its time, in the process told to."""
    if os.environ.get("SERVED_SLOW") == "1":
        time.sleep(seconds)
    return f"slept {seconds}"


agent = OmniCoreAgent(
    name=os.environ["SERVED_AGENT"],
    system_instruction=SYSTEM,
    model_config={"model": "gpt-5.4-mini", "base_url": os.environ["SERVED_MODEL_URL"], "api_key": "test", "max_retries": 0},
    memory_router=MemoryRouter(os.environ["SERVED_KIND"], url=os.environ.get("SERVED_URL")),
    agent_config={"run_lease_seconds": int(os.environ.get("SERVED_LEASE", "300"))},
    local_tools=tools,
)
