"""Agents with tools, shared by the in-process tests and the worker processes.

Their model traffic comes from cassettes/handwritten/ (answers by cassettes/scripted_model.py).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry

SCRIPTED_MODEL = {"provider": "openai", "model": "gpt-5.4-mini", "base_url": "http://127.0.0.1:8081/v1", "max_retries": 0}
SYSTEM = "You are a helpful assistant with tools."


def counting_tools(ledger: Path | None = None) -> ToolRegistry:
    """lookup (free), delete_file (needs approval), explode (raises), hang (sleeps when HANG=1).

    Every execution is appended to ``ledger`` so tests can count them across processes.
    """
    tools = ToolRegistry()

    def note(entry: str) -> None:
        if ledger is not None:
            with open(ledger, "a") as file:
                file.write(entry + "\n")

    @tools.register_tool()
    def lookup(city: str) -> str:
        """The weather in a city."""
        note(f"lookup {city}")
        return f"sunny in {city}"

    @tools.register_tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (asks a person first)."""
        note(f"delete_file {path}")
        return f"deleted {path}"

    @tools.register_tool()
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    @tools.register_tool()
    def hang(seconds: int = 0) -> dict[str, Any]:
        """Waits, when the process is told to."""
        if os.environ.get("HANG") == "1":
            time.sleep(600)
        note("hang")
        return {"waited": seconds}

    return tools


def tool_agent(router: MemoryRouter | None = None, ledger: Path | None = None, name: str = "tool-agent", **agent_config: Any) -> OmniCoreAgent:
    return OmniCoreAgent(
        name=name,
        system_instruction=SYSTEM,
        model_config=SCRIPTED_MODEL,
        memory_router=router,
        agent_config=agent_config or None,
        local_tools=counting_tools(ledger),
    )


def gated_tools(gate: threading.Event, ledger: Path | None = None) -> ToolRegistry:
    """:func:`counting_tools` and ``wait``, which returns once ``gate`` is set: a run held inside a tool."""
    tools = counting_tools(ledger)

    @tools.register_tool()
    def wait() -> str:
        """Waits until the test lets it go."""
        assert gate.wait(20), "the test never opened the gate"
        return "waited"

    return tools


def gated_agent(
    name: str, model_url: str, router: MemoryRouter | None, gate: threading.Event, ledger: Path | None = None, **agent_config: Any
) -> OmniCoreAgent:
    """An agent with :func:`gated_tools` on the scripted model at ``model_url`` (what the served tests run)."""
    config = {"model": "gpt-5.4-mini", "base_url": model_url, "api_key": "test", "max_retries": 0}
    return OmniCoreAgent(
        name=name,
        system_instruction=SYSTEM,
        model_config=config,
        memory_router=router,
        local_tools=gated_tools(gate, ledger),
        agent_config=agent_config or None,
    )
