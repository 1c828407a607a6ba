"""Tools the caller runs (``Tool.runs_on_client``) and runs that continue a session (``message=None``)."""

from __future__ import annotations

import pytest
from helpers.serve_servers import scripted_model_server

from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry
from omnisync.errors import ConfigurationError
from omnisync.messages import from_chat
from omnisync.serve.openai_api.client_tools import registry_with

WEATHER = {"name": "get_weather", "description": "The weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


@pytest.fixture
def agent():
    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """Weather, the agent's own way."""
        return f"sunny in {city}"

    with scripted_model_server() as url:
        router = MemoryRouter("in_memory")
        config = {"model": "gpt-5.4-mini", "base_url": url, "api_key": "test", "max_retries": 0}
        yield OmniCoreAgent("client-tools", "You help.", config, memory_router=router, local_tools=registry_with(tools, [WEATHER]))
        router.close()


def test_a_call_to_a_client_tool_ends_the_run_and_a_run_without_a_message_answers_its_result(agent):
    ended = agent.run('use get_weather({"city": "Oslo"})', "s")
    assert ended["status"] == "completed" and ended["response"] is None
    history = agent.get_session_history("s")
    assert history[-1]["role"] == "assistant" and history[-1]["tool_calls"][0]["function"]["name"] == "get_weather"

    call_id = history[-1]["tool_calls"][0]["id"]
    agent.memory_router.store.append(agent.name, "s", [from_chat({"role": "tool", "tool_call_id": call_id, "content": "rainy"})])
    continued = agent.run(None, "s")
    assert continued["response"] == "Done: rainy"
    assert [m["role"] for m in agent.get_session_history("s")] == ["user", "assistant", "tool", "assistant"]


def test_the_agents_own_tools_still_run_beside_client_tools(agent):
    assert agent.run('use lookup({"city": "Rome"})', "s2")["response"] == "Done: sunny in Rome"


def test_a_run_without_a_message_needs_a_session_that_has_messages(agent):
    with pytest.raises(ConfigurationError, match="continue a session"):
        agent.run(None)
    with pytest.raises(ConfigurationError, match="has no messages"):
        agent.run(None, "empty")


def test_twins_past_the_kept_number_are_cleaned_up_once_no_run_uses_them(agent, monkeypatch):
    import time

    from omnisync._aio_twin import twin_of
    from omnisync.serve.openai_api import variants

    cleaned: list[OmniCoreAgent] = []
    monkeypatch.setattr(variants, "KEPT", 1)
    monkeypatch.setattr(OmniCoreAgent, "cleanup", lambda self: cleaned.append(self))
    running: set[object] = set()
    kept = variants.Variants(in_use=lambda twin: twin in running)
    served = twin_of(agent)
    first = kept.of("a", served, "be brief", {}, [])
    assert kept.of("a", served, "be brief", {}, []) is first  # reused
    running.add(first)
    kept.of("a", served, "be long", {}, [])  # evicts the first, whose run goes on: it is kept for later
    time.sleep(0.2)
    assert first.blocking not in cleaned
    running.clear()
    kept.of("a", served, "be kind", {}, [])
    deadline = time.monotonic() + 5
    while first.blocking not in cleaned and time.monotonic() < deadline:
        time.sleep(0.01)
    assert first.blocking in cleaned and served.blocking not in cleaned
