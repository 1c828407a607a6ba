"""Every assistant message OpenAI's API description allows is stored in a form that can be sent again.

Each shape of ``ChatCompletionResponseMessage`` in the vendored description is answered by the
fake model (tests/helpers/fake_http.py validates every request against ``CreateChatCompletionRequest``);
the next run of the session sends it back, and that request must be valid: no reply the model
may legally give poisons the session.
"""

from __future__ import annotations

import uuid

import pytest

from helpers.agent_helpers import LOCAL_MODEL, echo
from helpers.fake_http import completion, install
from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry
from omnisync.storable import storable_reply
from helpers.openapi import OpenAPI

CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Paris"}'}}
CITATION = {"type": "url_citation", "url_citation": {"start_index": 0, "end_index": 4, "url": "https://example.com/", "title": "Example"}}
AUDIO = {"id": "audio_1", "expires_at": 1_700_003_600, "data": "UklGRiQAAABXQVZF", "transcript": "Sunny in Paris."}

SHAPES = {
    "text": {"content": "Sunny."},
    "empty content": {"content": ""},
    "only whitespace": {"content": " \n\t "},
    "content null, nothing else": {"content": None},
    "refusal": {"content": None, "refusal": "I can't help with that."},
    "refusal beside text": {"content": "No.", "refusal": "I can't help with that."},
    "annotations": {"content": "Sunny, says example.com.", "annotations": [CITATION]},
    "audio": {"content": None, "audio": AUDIO},
    "function_call (deprecated)": {"content": None, "function_call": {"name": "lookup", "arguments": '{"city": "Paris"}'}},
    "empty tool_calls": {"content": "Sunny.", "tool_calls": []},
    "tool call, content null": {"content": None, "tool_calls": [CALL]},
    "tool call with text": {"content": "Let me look.", "tool_calls": [CALL]},
    "tool call, arguments not JSON": {"content": None, "tool_calls": [{**CALL, "function": {"name": "lookup", "arguments": '{"city": "Par'}}]},
    "tool call, arguments empty": {"content": None, "tool_calls": [{**CALL, "function": {"name": "lookup", "arguments": ""}}]},
    "tool call to no such tool": {"content": None, "tool_calls": [{**CALL, "function": {"name": "no_such_tool", "arguments": "{}"}}]},
    "two tool calls": {"content": None, "tool_calls": [CALL, {**CALL, "id": "call_2"}]},
}


def reply_of(shape: str) -> dict:
    """A whole CreateChatCompletionResponse whose message has ``shape``."""
    body = completion("placeholder")
    message = {"role": "assistant", "refusal": None, **SHAPES[shape]}
    body["choices"][0]["message"] = message
    body["choices"][0]["finish_reason"] = "tool_calls" if message.get("tool_calls") else "stop"
    return body


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_is_one_the_description_allows(shape):
    assert OpenAPI().errors("CreateChatCompletionResponse", reply_of(shape)) == []


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_is_stored_as_a_message_a_request_may_carry(shape):
    stored = storable_reply(reply_of(shape)["choices"][0]["message"])
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}, stored]}
    assert OpenAPI().errors("CreateChatCompletionRequest", request) == []
    assert stored["content"] is not None or stored.get("tool_calls")  # "required unless tool_calls is specified"


@pytest.fixture(params=["in_memory", "sqlite"])
def router(request, tmp_path):
    url = None if request.param == "in_memory" else f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryRouter("sql" if url else "in_memory", url=url) as router:
        yield router


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_session_holding_any_legal_reply_is_sent_again_as_a_valid_request(router, monkeypatch, shape):
    answers = [reply_of(shape)]
    adapter = install(monkeypatch, lambda body: answers.pop(0) if answers else _after_tools(body))
    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    agent = OmniCoreAgent(
        name=f"shapes-{uuid.uuid4().hex[:8]}",
        system_instruction="You are a test.",
        model_config=LOCAL_MODEL,
        memory_router=router,
        local_tools=tools,
    )
    first = agent.run("What is the weather in Paris?", session_id="s")
    assert first["status"] == "completed"
    second = agent.run("And tomorrow?", session_id="s")
    assert second["status"] == "completed" and adapter.refused == []
    resent = adapter.sent[-1]["messages"]
    OpenAPI().check_request(adapter.sent[-1])
    assert all(m["content"] is not None or m.get("tool_calls") for m in resent if m["role"] == "assistant")


def _after_tools(body: dict) -> dict:
    return completion("done") if body["messages"][-1]["role"] == "tool" else echo(body)
