"""The run loop as events, one prompt builder, each text counted once, cut-off replies told."""

import json
import logging

import pytest

from omnisync import MemoryRouter, ToolRegistry
from omnisync.errors import InternalServerError
from omnisync.model.completion import Completion
from omnisync.prompt import preview
from omnisync.run_events import (
    ModelCallFinished,
    ModelCallStarted,
    RunFinished,
    RunPaused,
    RunStarted,
    Text,
    ToolCall,
    ToolResult,
)
from omnisync.run_drivers import events
from omnisync.tokens import estimate_tokens
from helpers.agent_helpers import echo, make_agent
from helpers.fake_http import completion, install


def lookup_tools():
    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return tools


def call(call_id, arguments):
    return {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": arguments}}


def test_a_tool_run_reports_each_step_as_it_happens(monkeypatch):
    install(monkeypatch, [completion(None, [call("c1", '{"city": "Paris"}')]), completion("Sunny.")])
    agent = make_agent(local_tools=lookup_tools())
    seen = list(events(agent._runner.start("weather?", "s"), agent._client.complete))
    assert [type(e) for e in seen] == [
        RunStarted, ModelCallStarted, ModelCallFinished, ToolCall, ToolResult, ModelCallStarted, ModelCallFinished, Text, RunFinished
    ]
    assert (seen[3].name, json.loads(seen[3].arguments)) == ("lookup", {"city": "Paris"})
    assert (seen[4].call_id, seen[4].content) == ("c1", "sunny in Paris")
    assert [e.step for e in seen if isinstance(e, ModelCallStarted)] == [1, 2]
    assert seen[-1].result["response"] == "Sunny." and seen[-1].result["status"] == "completed"
    assert seen[-1].result["steps"] == 2 and agent.get_run(seen[-1].result["run_id"])["status"] == "completed"


def test_the_model_call_is_the_drivers_a_fake_one_drives_the_same_loop(monkeypatch):
    """No HTTP at all: the driver hands the loop its completions."""
    agent = make_agent(local_tools=lookup_tools())
    replies = iter([Completion(None, [call("c1", '{"city": "Rome"}')], "tool_calls"), Completion("Warm.", [], "stop")])
    asked = []

    def model(messages, tools):
        asked.append([m["role"] for m in messages])
        return next(replies)

    seen = list(events(agent._runner.start("weather?", "s"), model))
    assert asked == [["system", "user"], ["system", "user", "assistant", "tool"]]
    assert isinstance(seen[-1], RunFinished) and seen[-1].result["response"] == "Warm."
    assert [m["role"] for m in agent.get_session_history("s")] == ["user", "assistant", "tool", "assistant"]


def test_a_model_error_is_thrown_into_the_loop_which_marks_the_run_failed(monkeypatch):
    install(monkeypatch, lambda body: (500, {"error": {"message": "down"}}, {}))
    agent = make_agent()
    with pytest.raises(InternalServerError):
        list(events(agent._runner.start("hi", "s"), agent._client.complete))
    [record] = agent.list_runs()
    assert record["status"] == "failed" and "down" in record["error"]
    assert agent.get_session_history("s") == []


def test_a_paused_run_ends_its_events_with_paused(monkeypatch):
    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def lookup(city: str) -> str:
        """The weather."""
        return "sunny"

    install(monkeypatch, [completion(None, [call("c1", '{"city": "Oslo"}')])])
    agent = make_agent(local_tools=tools)
    seen = list(events(agent._runner.start("weather?", "s"), agent._client.complete))
    assert [type(e) for e in seen] == [RunStarted, ModelCallStarted, ModelCallFinished, ToolCall, RunPaused]
    assert seen[-1].result["status"] == "awaiting_approval"


def test_each_text_is_counted_once_per_run(monkeypatch):
    """With the server's usage; a server that sends none has each reply counted once more, for the estimate (tests/cli/test_usage.py)."""
    sent = {"prompt_tokens": 5, "completion_tokens": 1}
    install(monkeypatch, [completion(None, [call("c1", '{"city": "Paris"}')], **sent), completion(None, [call("c2", '{"city": "Rome"}')], **sent), completion("Both sunny.", **sent)])
    counted = []

    def counter(text):
        counted.append(text)
        return estimate_tokens(text)

    agent = make_agent(local_tools=lookup_tools(), token_counter=counter)
    counted.clear()  # the system prompt is counted once, when the agent is built
    agent.run("weather in Paris and Rome?", session_id="s")
    assert counted.count("weather in Paris and Rome?") == 1
    assert counted.count("You are a test.") == 0
    assert counted.count("sunny in Paris") == 1 and counted.count("Both sunny.") == 1
    assert len(counted) == len(set(counted))  # nothing counted twice


def test_a_reply_cut_off_by_the_output_limit_is_logged_and_marked(monkeypatch, caplog):
    cut = completion("The answer is")
    cut["choices"][0]["finish_reason"] = "length"
    install(monkeypatch, [cut, completion("whole")])
    agent = make_agent()
    with caplog.at_level(logging.WARNING, logger="omnisync"):
        result = agent.run("hi", session_id="s")
    assert result["truncated"] is True and result["response"] == "The answer is"
    assert agent.get_run(result["run_id"])["finish_reason"] == "length"
    assert "cut off by its output limit" in caplog.text and result["run_id"] in caplog.text
    assert agent.run("again", session_id="s")["truncated"] is False


def test_tool_arguments_sent_as_an_object_make_a_valid_next_request(monkeypatch):
    """fake_http checks every request against OpenAI's description: arguments must go back as a string."""
    http = install(monkeypatch, [completion(None, [call("c1", {"city": "Paris"})]), completion("Sunny.")])
    agent = make_agent(local_tools=lookup_tools())
    result = agent.run("weather?", session_id="s")
    assert result["response"] == "Sunny."
    sent_back = http.sent[1]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent_back) == {"city": "Paris"} and isinstance(sent_back, str)
    assert agent.get_session_history("s")[2]["content"] == "sunny in Paris"


def test_preview_needs_no_agent_and_no_model_and_matches_the_agents(monkeypatch):
    install(monkeypatch, echo)
    with MemoryRouter("in_memory") as router:
        config = {"memory_config": {"value": 2}}
        agent = make_agent(router=router, agent_config=config)
        for message in ("one", "two", "three"):
            agent.run(message, session_id="s")
        shown = preview(
            router.store, "assistant", "s", system_instruction="You are a test.", message="four", agent_config=config, model="test-model"
        )
        assert shown == agent.preview("s", message="four")
        assert [m["content"] for m in shown["messages"]] == ["You are a test.", "three", "echo: three", "four"]
        assert shown["window"] == {"mode": "sliding_window", "value": 2, "messages": 2}
        assert shown["total_tokens"] == sum(shown["tokens"])
