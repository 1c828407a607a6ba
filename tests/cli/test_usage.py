"""Usage you can add up: every model call kept on its run record with its kind and details, summaries included."""

from __future__ import annotations

import json
import urllib.request

import pytest

from helpers.agent_helpers import make_agent
from helpers.backend_routers import BACKENDS, open_router
from helpers.fake_http import completion, install
from helpers.fake_stream import Streamed, chunk, sse
from helpers.fake_stream import install as install_stream
from omnisync import OmniCoreAgent, ToolRegistry
from omnisync.router import MemoryRouter
from omnisync.serve import create_app
from omnisync.tokens import MESSAGE_OVERHEAD
from omnisync.usage import add_usage, read_usage
from helpers.serve_servers import uvicorn_server
from helpers.cli_run import cli, environment

SUMMARY_SYSTEM = "You write the running summary"
STEP_USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
SUMMARY_USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


def detailed(content, cached=0, reasoning=0, **usage):
    """A completion whose usage carries the detail objects, as OpenAI sends them."""
    body = completion(content, **usage)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning, "audio_tokens": 0}
    return body


def answers_with_summaries(body):
    if body["messages"][0]["content"].startswith(SUMMARY_SYSTEM):
        return completion("they talked", **{k: v for k, v in SUMMARY_USAGE.items() if k != "total_tokens"})
    return completion("noted", prompt_tokens=10, completion_tokens=2)


def summarizing_agent(router=None, value=2):
    config = {"memory_config": {"mode": "sliding_window", "value": value, "summary": {"enabled": True}}}
    return make_agent(name="usage", router=router, agent_config=config)


def test_each_step_is_kept_with_its_details_and_the_run_adds_them_up(monkeypatch):
    call = {"id": "c1", "type": "function", "function": {"name": "nothing", "arguments": "{}"}}
    first = detailed(None, cached=4, reasoning=1, prompt_tokens=20, completion_tokens=5)
    first["choices"][0]["message"]["tool_calls"] = [call]
    first["choices"][0]["finish_reason"] = "tool_calls"
    install(monkeypatch, [first, detailed("done", cached=16, reasoning=3, prompt_tokens=30, completion_tokens=6)])
    agent = make_agent()
    result = agent.run("go", session_id="s")
    record = agent.get_run(result["run_id"])
    assert [c["kind"] for c in record["model_calls"]] == ["step", "step"]
    assert record["model_calls"][0] == {
        "kind": "step",
        "model": "test-model",
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 5,
            "total_tokens": 25,
            "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 1, "audio_tokens": 0},
        },
    }
    assert result["usage"] == record["usage"] == {
        "prompt_tokens": 50,
        "completion_tokens": 11,
        "total_tokens": 61,
        "prompt_tokens_details": {"cached_tokens": 20, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 4, "audio_tokens": 0},
    }


def test_a_streamed_reply_keeps_the_usage_chunks_details(monkeypatch):
    usage = {"prompt_tokens": 9, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 8}}
    body = sse([chunk(role="assistant", content=""), chunk("Hi."), chunk(finish_reason="stop"), chunk(usage=usage, choices=False)])
    install_stream(monkeypatch, [Streamed(body)])
    agent = make_agent()
    with agent.stream("hello", session_id="s") as stream:
        list(stream)
    [call] = agent.get_run(stream.result["run_id"])["model_calls"]
    assert call["usage"] == {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11, "prompt_tokens_details": {"cached_tokens": 8}}


def test_summary_calls_are_counted_on_the_run_that_led_to_them_on_every_backend(monkeypatch, router):
    http = install(monkeypatch, answers_with_summaries)
    agent = summarizing_agent(router)
    run_ids = [agent.run(text, session_id="s")["run_id"] for text in ("one", "two", "three")]
    total = agent.get_session_usage("s")  # waits for the last fold
    summary_requests = [b for b in http.sent if b["messages"][0]["content"].startswith(SUMMARY_SYSTEM)]
    assert len(summary_requests) >= 1
    kinds = [[c["kind"] for c in agent.get_run(run_id)["model_calls"]] for run_id in run_ids]
    assert kinds[0] == ["step"]  # the first run fit the window: no fold followed it
    assert sum(k.count("summary") for k in kinds) == len(summary_requests)
    assert all(k[0] == "step" and set(k[1:]) <= {"summary"} for k in kinds)
    assert agent.get_run(run_ids[1])["usage"] == STEP_USAGE  # the budget's count is the run's own calls only
    summaries = len(summary_requests)
    assert total == {
        "usage": {"prompt_tokens": 30 + 7 * summaries, "completion_tokens": 6 + 3 * summaries, "total_tokens": 36 + 10 * summaries},
        "by_kind": {
            "step": {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36},
            "summary": {"prompt_tokens": 7 * summaries, "completion_tokens": 3 * summaries, "total_tokens": 10 * summaries},
        },
        "model_calls": {"step": 3, "summary": summaries},
        "runs": 3,
    }
    assert agent.get_session_usage("another")["runs"] == 0


def two_runs_and_a_summary(monkeypatch, summary_answer):
    """An agent after two runs (answered with usage) whose end led to a summary answered by ``summary_answer()``."""

    def model(body):
        if body["messages"][0]["content"].startswith(SUMMARY_SYSTEM):
            return summary_answer()
        return completion("noted", prompt_tokens=10, completion_tokens=2)

    install(monkeypatch, model)
    agent = summarizing_agent()
    for text in ("one", "two"):
        agent.run(text, session_id="s")
    return agent


def test_a_failed_summary_still_costs_and_is_counted(monkeypatch):
    def cut_summary():
        answer = completion("they tal", prompt_tokens=7, completion_tokens=3)
        answer["choices"][0]["finish_reason"] = "length"
        return answer

    agent = two_runs_and_a_summary(monkeypatch, cut_summary)
    total = agent.get_session_usage("s")
    assert total["model_calls"] == {"step": 2, "summary": 1}
    assert total["by_kind"]["summary"] == SUMMARY_USAGE
    assert not any(m["summary"] for m in agent.get_session_history("s", include_inactive=True))  # nothing folded


def test_the_runs_command_shows_each_runs_tokens(monkeypatch, tmp_path):
    install(monkeypatch, answers_with_summaries)
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryRouter("sql", url=url) as router, summarizing_agent(router) as agent:
        first = agent.run("one", session_id="s")["run_id"]
        second = agent.run("two", session_id="s")["run_id"]
    shown = cli("runs", "--agent", "usage", env=environment(DATABASE_URL=url))
    assert shown.returncode == 0, shown.stderr
    header, *rows = shown.stdout.splitlines()
    assert "TOKENS" in header.split()
    by_run = {row.split()[0]: row for row in rows}
    assert "12 (10/2)" in by_run[first] and "summary" not in by_run[first]
    assert "12 (10/2) +10 summary" in by_run[second]


def test_usage_from_a_server_keeps_counts_and_drops_the_rest():
    raw = {"prompt_tokens": 5, "completion_tokens": None, "total_tokens": 5, "prompt_tokens_details": {"cached_tokens": 2, "note": "x"}, "extra": 1}
    assert read_usage(raw) == {"prompt_tokens": 5, "total_tokens": 5, "prompt_tokens_details": {"cached_tokens": 2}}
    assert read_usage(None) == {}
    assert add_usage({"prompt_tokens": 1, "prompt_tokens_details": {"cached_tokens": 1}}, read_usage(raw)) == {
        "prompt_tokens": 6,
        "total_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 3},
    }


# --- a server that sends no usage: counted with the agent's token counter, marked estimated ---------


def words(text):
    return len(text.split())


def nothing_tool():
    tools = ToolRegistry()

    @tools.register_tool()
    def nothing() -> str:
        """Does nothing."""
        return "nothing happened"

    return tools


def test_a_server_without_usage_has_each_call_counted_and_marked_estimated(monkeypatch):
    call = {"id": "c1", "type": "function", "function": {"name": "nothing", "arguments": "{}"}}
    install(monkeypatch, [completion(None, [call]), completion("all done now")])
    agent = make_agent(token_counter=words, local_tools=nothing_tool())
    result = agent.run("go on then", session_id="s")
    first, second = agent.get_run(result["run_id"])["model_calls"]
    tools = words(json.dumps(agent.tools.schemas()))
    prompt = MESSAGE_OVERHEAD * 2 + words("You are a test.") + words("go on then") + tools
    assert first["usage"] == {"prompt_tokens": prompt, "completion_tokens": words(json.dumps([call])), "total_tokens": prompt + words(json.dumps([call])), "estimated": True}
    assert second["usage"]["completion_tokens"] == 3 and second["usage"]["estimated"] is True
    assert second["usage"]["prompt_tokens"] > prompt  # the call and its result were sent too
    assert result["usage"] == {**add_usage(first["usage"], second["usage"]), "estimated": True}
    assert result["usage"]["total_tokens"] == first["usage"]["total_tokens"] + second["usage"]["total_tokens"]
    session = agent.get_session_usage("s")
    assert session["usage"] == result["usage"] and session["by_kind"]["step"]["estimated"] is True
    agent.cleanup()


def test_the_servers_own_figures_always_win(monkeypatch):
    install(monkeypatch, [completion("hi", prompt_tokens=1000, completion_tokens=1)])
    agent = make_agent(token_counter=words)
    result = agent.run("hello", session_id="s")
    assert result["usage"] == {"prompt_tokens": 1000, "completion_tokens": 1, "total_tokens": 1001}
    agent.cleanup()


def test_a_streamed_reply_without_a_usage_chunk_is_estimated(monkeypatch):
    body = sse([chunk(role="assistant", content=""), chunk("Hello there"), chunk(" friend."), chunk(finish_reason="stop")])
    install_stream(monkeypatch, [Streamed(body)])
    agent = make_agent(token_counter=words)
    with agent.stream("hello", session_id="s") as stream:
        list(stream)
    prompt = MESSAGE_OVERHEAD * 2 + words("You are a test.") + 1
    estimate = {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3, "estimated": True}
    assert stream.result["usage"] == estimate
    assert agent.get_session_usage("s")["usage"] == estimate
    agent.cleanup()


def test_a_summary_without_usage_is_estimated_and_the_session_total_says_so(monkeypatch):
    agent = two_runs_and_a_summary(monkeypatch, lambda: completion("they said one"))
    total = agent.get_session_usage("s")
    assert total["by_kind"]["step"] == {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}
    summary = total["by_kind"]["summary"]
    assert summary["estimated"] is True and summary["completion_tokens"] > 0 and summary["prompt_tokens"] > 0
    assert total["usage"]["estimated"] is True
    agent.cleanup()


def test_a_served_run_against_a_server_without_usage_reports_the_estimate(monkeypatch):
    body = sse([chunk(role="assistant", content=""), chunk("Hello there."), chunk(finish_reason="stop")])
    install_stream(monkeypatch, [Streamed(body)])
    agent = make_agent(token_counter=words)
    with uvicorn_server(create_app(agent)) as base:  # urllib: the patched requests would answer for the server too
        request = urllib.request.Request(
            base + "/agents/assistant/sessions/s/runs", data=json.dumps({"message": "hi"}).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            result = json.loads(response.read())
        with urllib.request.urlopen(base + "/agents/assistant/sessions/s/usage", timeout=30) as response:
            session = json.loads(response.read())
    assert result["usage"]["estimated"] is True and result["usage"]["completion_tokens"] == 2
    assert session["usage"] == result["usage"]
    agent.cleanup()


def test_a_streamed_run_recorded_from_llama_cpp_reports_estimated_usage(omnisync_cassette, monkeypatch):
    """stream.yaml: llama.cpp's streams carry no usage chunk, though the request asks for one."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = {"provider": "openai", "model": "gpt-5.4-mini", "max_tokens": 128, "base_url": "http://127.0.0.1:8080/v1"}
    agent = OmniCoreAgent(name="assistant", system_instruction="You are a helpful assistant. Answer in plain text, briefly.", model_config=model)
    with omnisync_cassette("recorded/stream"):
        for question in ["My project is called Atlas.", "What is my project called?"]:
            with agent.stream(question, session_id="user_123") as stream:
                list(stream)
            usage = stream.result["usage"]
            assert usage["estimated"] is True and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert agent.get_session_usage("user_123")["usage"]["estimated"] is True
    agent.cleanup()
