"""agent.stream: events as they happen, and what is stored when a stream completes, is stopped, or breaks, on every backend."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import requests

from helpers.agent_helpers import make_agent
from helpers.backend_routers import BACKENDS, open_router
from helpers.fake_http import completion
from helpers.fake_stream import Streamed, chunk, install, sse, tool_fragment
from omnisync.errors import StreamInterruptedError
from omnisync.run_events import RunFailed, RunFinished, RunPaused, RunStarted, TextDelta, ToolCall, ToolResult
from omnisync.tools import ToolRegistry

WORDS = ["Atlas ", "ships ", "on ", "Friday."]
USAGE = {"prompt_tokens": 10, "completion_tokens": 4}


def streamed_answer(words=WORDS, usage=USAGE, done=True):
    events = [chunk(role="assistant", content=""), *(chunk(w) for w in words), chunk(finish_reason="stop")]
    if usage:
        events.append(chunk(usage=usage, choices=False))
    return Streamed(sse(events, done=done))


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


@pytest.fixture
def name():
    return f"stream-{uuid.uuid4().hex[:10]}"


def stored(agent, session_id):
    return [
        (m["role"], m["content"], m.get("tool_calls"), m["partial"])
        for m in agent.get_session_history(session_id, include_inactive=True)
    ]


def test_a_completed_stream_stores_exactly_what_run_stores(router, name, monkeypatch):
    install(monkeypatch, [completion("".join(WORDS), **USAGE), streamed_answer()])
    agent = make_agent(name, router)
    whole = agent.run("When does Atlas ship?", session_id="whole")
    with agent.stream("When does Atlas ship?", session_id="streamed") as stream:
        events = list(stream)
    assert [e.text for e in events if isinstance(e, TextDelta)] == WORDS
    assert isinstance(events[-1], RunFinished) and events[-1].result == stream.result
    assert events[0] == RunStarted(stream.result["run_id"], "streamed") and stream.run_id == stream.result["run_id"]
    streamed = stream.result
    assert {**streamed, "run_id": "", "session_id": ""} == {**whole, "run_id": "", "session_id": ""}
    assert stored(agent, "streamed") == stored(agent, "whole")
    tokens = [m.tokens for m in router.store.latest(name, "streamed", 10)]
    assert tokens == [m.tokens for m in router.store.latest(name, "whole", 10)]
    a, b = agent.get_run(whole["run_id"]), agent.get_run(streamed["run_id"])
    for field in ("status", "usage", "response", "step", "finish_reason"):
        assert a[field] == b[field], field


def test_stopping_early_keeps_the_text_so_far_marked_partial_and_cancels_the_run(router, name, monkeypatch):
    http = install(monkeypatch, [streamed_answer(), completion("Friday.")])
    agent = make_agent(name, router)
    stream = agent.stream("When does Atlas ship?", session_id="s")
    received = []
    for event in stream:
        if isinstance(event, RunStarted):
            assert agent.get_run(event.run_id)["status"] == "running"  # its record is there before the model answers
            continue
        received.append(event.text)
        if len(received) == 2:
            break
    stream.close()
    assert stream.result["status"] == "cancelled" and stream.result["response"] == "Atlas ships "
    assert stored(agent, "s") == [("user", "When does Atlas ship?", None, False), ("assistant", "Atlas ships ", None, True)]
    assert agent.get_run(stream.result["run_id"])["status"] == "cancelled"
    assert len(http.sent) == 1  # nothing was posted again
    assert agent.run("And?", session_id="s")["status"] == "completed"  # the session is free and valid


def test_an_unfinished_tool_call_is_never_stored(router, name, monkeypatch):
    calling = Streamed(
        sse(
            [
                chunk(role="assistant", content="Let me check. "),
                chunk(tool_calls=[tool_fragment(0, id="call_1", name="lookup")]),
                chunk(tool_calls=[tool_fragment(0, arguments='{"ci')]),
                chunk(tool_calls=[tool_fragment(0, arguments='ty": "Paris"}')]),
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    install(monkeypatch, [calling])
    tools = ToolRegistry()
    ran = []

    @tools.register_tool()
    def lookup(city: str) -> str:
        """Weather."""
        ran.append(city)
        return "sunny"

    agent = make_agent(name, router, local_tools=tools)
    with agent.stream("Weather?", session_id="s") as stream:
        for event in stream:
            if not isinstance(event, RunStarted):
                assert isinstance(event, TextDelta)
                break
    assert ran == []
    assert stored(agent, "s") == [("user", "Weather?", None, False), ("assistant", "Let me check. ", None, True)]
    assert stream.result["status"] == "cancelled"
    assert agent.get_run(stream.result["run_id"])["pending_calls"] == []


def test_tool_calls_and_results_stream_as_events_then_the_answer(router, name, monkeypatch):
    calling = Streamed(
        sse(
            [
                chunk(role="assistant"),
                chunk(tool_calls=[tool_fragment(0, id="call_1", name="lookup", arguments="")]),
                chunk(tool_calls=[tool_fragment(0, arguments='{"city": "Paris"}')]),
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    install(monkeypatch, [calling, streamed_answer(["Sunny ", "in Paris."])])
    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """Weather."""
        return f"sunny in {city}"

    agent = make_agent(name, router, local_tools=tools)
    events = list(agent.stream("Weather in Paris?", session_id="s"))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["RunStarted", "ToolCall", "ToolResult", "TextDelta", "TextDelta", "RunFinished"]
    assert events[1].arguments == '{"city": "Paris"}' and events[2].content == "sunny in Paris"
    assert events[-1].result["response"] == "Sunny in Paris."


def test_a_stream_that_breaks_leaves_the_session_as_it_was_and_keeps_the_text_on_the_run(router, name, monkeypatch):
    broken = Streamed(
        sse([chunk(role="assistant", content=""), chunk("Atlas "), chunk("ships ")], done=False),
        requests.ConnectionError("connection reset"),
    )
    install(monkeypatch, [completion("First answer."), broken])
    agent = make_agent(name, router)
    agent.run("Hello", session_id="s")
    before = stored(agent, "s")
    events = []
    with pytest.raises(StreamInterruptedError):
        for event in agent.stream("When does Atlas ship?", session_id="s"):
            events.append(event)
    assert [type(e) for e in events] == [RunStarted, TextDelta, TextDelta, RunFailed]
    assert isinstance(events[-1].error, StreamInterruptedError)
    assert stored(agent, "s") == before
    record = agent.get_run(events[-1].run_id)
    assert record["status"] == "failed" and record["partial_response"] == "Atlas ships "


def test_a_paused_run_streams_its_pause_and_resume_stream_finishes_it(router, name, monkeypatch):
    call = {"id": "call_1", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "/tmp/x"}'}}
    install(monkeypatch, [completion(None, tool_calls=[call]), streamed_answer(["Deleted."])])
    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    agent = make_agent(name, router, local_tools=tools)
    paused = agent.run("Clean up", session_id="s")
    assert paused["status"] == "awaiting_approval"
    agent.resolve_approval(paused["run_id"], "call_1", True)
    events = list(agent.resume_stream(paused["run_id"]))
    assert [type(e) for e in events] == [RunStarted, ToolResult, TextDelta, RunFinished]
    assert events[0] == RunStarted(paused["run_id"], "s", resumed=True)
    assert events[-1].result["status"] == "completed" and events[-1].result["response"] == "Deleted."


def test_a_stream_that_pauses_yields_what_run_returns(monkeypatch):
    call = {"id": "call_1", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "/tmp/x"}'}}
    body = sse([chunk(role="assistant"), chunk(tool_calls=[{"index": 0, **call}]), chunk(finish_reason="tool_calls")])
    install(monkeypatch, [Streamed(body)])
    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted"

    agent = make_agent("pauser", local_tools=tools)
    stream = agent.stream("Clean up", session_id="s")
    events = list(stream)
    assert [type(e) for e in events] == [RunStarted, ToolCall, RunPaused]
    assert events[-1].result == stream.result and stream.result["status"] == "awaiting_approval"
    assert stream.result["approvals"][0]["id"] == "call_1"


def test_async_for_inside_a_running_loop_and_closing_it_cancels(monkeypatch):
    from omnisync.aio import OmniCoreAgent as AsyncAgent
    from helpers.agent_helpers import LOCAL_MODEL

    install(monkeypatch, [streamed_answer(), streamed_answer()])

    async def main():
        agent = AsyncAgent(name="async-stream", system_instruction="You are a test.", model_config=LOCAL_MODEL)
        texts = [e.text async for e in agent.stream("When?", session_id="a") if isinstance(e, TextDelta)]
        stream = agent.stream("When?", session_id="b")
        async for event in stream:
            if isinstance(event, TextDelta):
                break
        await stream.aclose()
        history = await agent.get_session_history("b", include_inactive=True)
        await agent.cleanup()
        return texts, stream.result, history

    texts, stopped, history = asyncio.run(main())
    assert texts == WORDS
    assert stopped["status"] == "cancelled" and stopped["response"] == "Atlas "
    assert history[-1]["partial"] is True and history[-1]["content"] == "Atlas "


def test_ctrl_c_inside_the_loop_keeps_the_text_so_far_and_cancels(monkeypatch):
    install(monkeypatch, [streamed_answer()])
    agent = make_agent("ctrl-c")
    with pytest.raises(KeyboardInterrupt):
        with agent.stream("When does Atlas ship?", session_id="s") as stream:
            for event in stream:
                if isinstance(event, TextDelta):
                    raise KeyboardInterrupt
    assert stream.result["status"] == "cancelled" and stream.result["response"] == "Atlas "
    assert stored(agent, "s")[-1] == ("assistant", "Atlas ", None, True)
