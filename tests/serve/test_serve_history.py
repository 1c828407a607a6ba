"""fork_session, undo, regenerate and search_history: a local agent and a RemoteAgent of a served one behave alike."""

from __future__ import annotations

import pytest
import requests
from helpers.serve_servers import local_or_remote, scripted_model_server, uvicorn_server
from helpers.tool_agents import SYSTEM, counting_tools

from omnisync import OmniCoreAgent
from omnisync.errors import ConfigurationError
from omnisync.serve import create_app


@pytest.fixture(scope="module")
def model_url():
    with scripted_model_server() as url:
        yield url


@pytest.fixture(params=["local", "remote"])
def agent(request, model_url):
    local = OmniCoreAgent(
        name="assistant",
        system_instruction=SYSTEM,
        model_config={"model": "gpt-5.4-mini", "base_url": model_url, "api_key": "test", "max_retries": 0},
        local_tools=counting_tools(),
    )
    with local_or_remote(local, request.param) as agent:
        yield agent
    local.cleanup()


def test_fork_undo_regenerate_and_search_alike(agent):
    agent.run("plan the Lisbon trip", session_id="s")
    agent.run("and the hotel", session_id="s")
    fork = agent.fork_session("s", at=2, new_session_id="s-branch")
    assert fork == "s-branch" and agent.get_session_history(fork) == [{"role": "user", "content": "plan the Lisbon trip"}]
    undone = agent.undo("s")
    assert [(m["role"], m["content"], m["status"]) for m in undone] == [("user", "and the hotel", "inactive"), ("assistant", "echo: and the hotel", "inactive")]
    again = agent.regenerate("s")
    assert (again["response"], again["status"]) == ("echo: plan the Lisbon trip", "completed")
    assert [m["content"] for m in agent.get_session_history("s")] == ["plan the Lisbon trip", "echo: plan the Lisbon trip"]
    hits = agent.search_history("lisbon trip")
    assert sorted((h["session_id"], h["role"]) for h in hits) == [("s", "assistant"), ("s", "user"), ("s-branch", "user")]
    assert agent.search_history("lisbon", session_id="s-branch")[0]["snippet"] == "plan the Lisbon trip"
    assert agent.search_history("") == []
    with pytest.raises(ConfigurationError, match="no message at seq 99"):
        agent.fork_session("s", at=99)


def test_the_routes_are_described_and_refuse_bad_input(model_url):
    local = OmniCoreAgent(name="assistant", system_instruction=SYSTEM, model_config={"model": "gpt-5.4-mini", "base_url": model_url, "api_key": "test", "max_retries": 0})
    with uvicorn_server(create_app(local)) as base:
        paths = requests.get(base + "/openapi.json", timeout=10).json()["paths"]
        assert {"/agents/{agent}/search", "/agents/{agent}/sessions/{session}/fork", "/agents/{agent}/sessions/{session}/undo", "/agents/{agent}/sessions/{session}/regenerate"} <= set(paths)
        bad = requests.get(base + "/agents/assistant/search", params={"q": "x", "limit": "500"}, timeout=10)
        assert bad.status_code == 422 and "limit" in bad.json()["error"]["message"]
        bad = requests.get(base + "/agents/assistant/search", params={"q": "x", "before": "yesterday"}, timeout=10)
        assert bad.status_code == 422 and "ISO 8601" in bad.json()["error"]["message"]
        bad = requests.post(base + "/agents/assistant/sessions/s/fork", json={"at": "two"}, timeout=10)
        assert bad.status_code == 422
        nothing = requests.post(base + "/agents/assistant/sessions/empty/undo", json={}, timeout=10)
        assert nothing.status_code == 422 and "no run to undo" in nothing.json()["error"]["message"]
        assert requests.get(base + "/agents/assistant/search", timeout=10).status_code == 422  # q is required
        local.run("keep me", session_id="r")
        bad = requests.post(base + "/agents/assistant/sessions/r/regenerate", json={"on_busy": "later"}, timeout=10)
        assert bad.status_code == 422 and "on_busy" in bad.json()["error"]["message"]
        assert [m["content"] for m in local.get_session_history("r")] == ["keep me", "echo: keep me"]  # nothing undone
    local.cleanup()
