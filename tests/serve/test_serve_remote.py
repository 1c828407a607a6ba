"""One scenario, two agents: a local OmniCoreAgent and a RemoteAgent of a served one behave alike.

The server is uvicorn on a loopback port; the model is cassettes/scripted_model.py, served on
another (``use tool({...})`` asks for a tool call, anything else is echoed).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TypedDict

import pytest
from helpers.serve_servers import local_or_remote, scripted_model_server, uvicorn_server
from helpers.tool_agents import SYSTEM, counting_tools

from omnisync import OmniCoreAgent, aio
from omnisync.errors import ConfigurationError, OutputValidationError, RunNotFoundError, RunStateError, SessionBusyError
from omnisync.messages import Message, utcnow
from omnisync.remote import RemoteAgent
from omnisync.run_record import RunRecord
from omnisync.run_events import RunFinished, RunPaused, RunStarted, TextDelta, ToolCall, ToolResult
from omnisync.serve import create_app


# A 1x1 PNG: content parts carry it as a data URL, as a user's image would be.
PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PARTS = [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": PIXEL, "detail": "low"}}]
COUNT_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}


@dataclass
class City:
    name: str
    population: int


class Place(TypedDict):
    name: str
    country: str


@pytest.fixture(scope="module")
def model_url():
    with scripted_model_server() as url:
        yield url


def make_agent(model_url: str) -> OmniCoreAgent:
    return OmniCoreAgent(
        name="assistant",
        system_instruction=SYSTEM,
        model_config={"model": "gpt-5.4-mini", "base_url": model_url, "api_key": "test", "max_retries": 0},
        agent_config={"budget": {"max_tool_calls": 2}},
        local_tools=counting_tools(),
    )


@pytest.fixture(params=["local", "remote"])
def agent(request, model_url):
    local = make_agent(model_url)
    with local_or_remote(local, request.param) as agent:
        yield agent
    local.cleanup()


def test_a_run_answers_and_is_remembered(agent):
    result = agent.run("hello there", session_id="s1")
    assert (result["response"], result["status"], result["session_id"]) == ("echo: hello there", "completed", "s1")
    assert agent.get_session_history("s1") == [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "echo: hello there"}]
    assert agent.get_run(result["run_id"])["status"] == "completed"


def test_a_run_without_a_session_gets_a_new_one(agent):
    first, second = agent.run("one"), agent.run("two")
    assert first["session_id"] != second["session_id"]
    assert len(agent.get_session_history(second["session_id"])) == 2


def test_a_history_read_in_pages_is_the_whole_history_once(agent):
    for word in ("one", "two", "three", "four"):
        agent.run(word, session_id="h1")
    whole = agent.get_session_history("h1")
    pages, cursor = [], None
    while True:
        page = agent.get_session_history_page("h1", cursor=cursor, limit=3)
        pages.append(page["messages"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [3, 3, 2] and [m for p in pages for m in p] == whole
    first = agent.get_session_history_page("h1", limit=3)
    agent.run("five", session_id="h1")  # appended between two pages: read once, on a later page
    rest = agent.get_session_history_page("h1", cursor=first["next_cursor"], limit=100)
    assert first["messages"] + rest["messages"] == agent.get_session_history("h1") and rest["next_cursor"] is None
    marked = agent.get_session_history_page("h1", limit=2, include_inactive=True)["messages"]
    assert marked == agent.get_session_history("h1", include_inactive=True)[:2] and marked[0]["status"] == "active" and "seq" in marked[0]
    assert agent.get_session_history_page("nobody") == {"messages": [], "next_cursor": None}


@pytest.mark.parametrize("bad", [{"cursor": "x"}, {"cursor": "-1"}, {"limit": 0}])
def test_a_bad_history_cursor_or_limit_is_a_configuration_error(agent, bad):
    agent.run("hello", session_id="h2")
    with pytest.raises(ConfigurationError, match="cursor|limit"):
        agent.get_session_history_page("h2", **bad)
    assert len(agent.get_session_history("h2")) == 2  # nothing lost


def test_a_remote_history_longer_than_a_page_is_read_whole_in_pages(model_url):
    local = make_agent(model_url)
    store = local.memory_router.store
    store.append("assistant", "long", [Message(role="user", content=f"m{i}", tokens=1) for i in range(1203)])
    with uvicorn_server(create_app(local)) as base, RemoteAgent(base, agent="assistant") as remote:
        sent = []
        remote._http.hooks["response"].append(lambda response, *args, **kwargs: sent.append(response.url))
        history = remote.get_session_history("long")
    assert [m["content"] for m in history] == [f"m{i}" for i in range(1203)]
    assert len(sent) == 3 and all("limit=500" in url for url in sent)  # three bounded pages
    local.cleanup()


def test_a_stream_yields_the_text_then_the_result(agent):
    with agent.stream("tell me a longer story please", session_id="s2") as stream:
        events = list(stream)
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "echo: tell me a longer story please"
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1
    assert isinstance(events[-1], RunFinished) and events[-1].result == stream.result
    assert stream.result["response"] == text


def test_an_approval_pauses_the_run_until_a_decision_and_a_resume(agent):
    paused = agent.run('use delete_file({"path": "/tmp/x"})', session_id="s3")
    assert paused["status"] == "awaiting_approval"
    call = paused["approvals"][0]
    assert call["tool"] == "delete_file"
    with pytest.raises(SessionBusyError) as busy:
        agent.run("anyone there?", session_id="s3", on_busy="raise")
    assert busy.value.paused and busy.value.run_id == paused["run_id"]
    with pytest.raises(RunStateError):
        agent.resume(paused["run_id"])  # no decision yet
    agent.resolve_approval(paused["run_id"], call["id"], approved=True, reason="fine")
    done = agent.resume(paused["run_id"])
    assert (done["status"], done["response"]) == ("completed", "Done: deleted /tmp/x")
    with pytest.raises(RunStateError):
        agent.resume(paused["run_id"])


def test_a_denied_call_is_streamed_on_resume(agent):
    paused = agent.run('use delete_file({"path": "/etc"})', session_id="s4")
    agent.resolve_approval(paused["run_id"], paused["approvals"][0]["id"], approved=False, reason="no")
    events = list(agent.resume_stream(paused["run_id"]))
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 1 and "deleted" not in results[0].content
    assert isinstance(events[-1], RunFinished) and events[-1].result["status"] == "completed"


def test_a_budget_pauses_the_run_until_it_is_raised(agent):
    ask = " ".join(f'use lookup({{"city": "c{n}"}})' for n in range(3))
    paused = agent.run(ask, session_id="s5")
    assert paused["status"] == "awaiting_budget" and paused["budget_request"]["limit"] == "max_tool_calls"
    agent.grant_budget(paused["run_id"], extra_tool_calls=5)
    done = agent.resume(paused["run_id"])
    assert done["status"] == "completed" and "sunny in c2" in done["response"]


def test_a_paused_run_streams_its_call_and_pause(agent):
    stream = agent.stream('use delete_file({"path": "/a"})', session_id="s6")
    events = list(stream)
    assert [type(e) for e in events] == [RunStarted, ToolCall, RunPaused]
    assert events[0] == RunStarted(events[-1].result["run_id"], "s6") and stream.run_id == events[0].run_id
    cancelled = agent.cancel_run(events[-1].result["run_id"], reason="changed my mind")
    assert cancelled["status"] == "cancelled"
    assert agent.run("again", session_id="s6")["status"] == "completed"  # the session is free


def test_runs_are_listed_by_status_and_session(agent):
    agent.run("a", session_id="s7")
    paused = agent.run('use delete_file({"path": "/b"})', session_id="s7")
    agent.run("c", session_id="s8")
    assert [r["status"] for r in agent.list_runs(session_id="s7")] == ["completed", "awaiting_approval"]
    assert [r["run_id"] for r in agent.list_runs(status="awaiting_approval")] == [paused["run_id"]]


def test_runs_read_in_pages_are_every_run_once(agent):
    for word in ("a", "b", "c", "d"):
        agent.run(word, session_id="p1")
    agent.run("elsewhere", session_id="p2")
    whole = agent.list_runs()
    pages, cursor = [], None
    while True:
        page = agent.list_runs_page(cursor=cursor, limit=2)
        pages.append([r["run_id"] for r in page["runs"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [2, 2, 1] and [r for p in pages for r in p] == [r["run_id"] for r in whole]
    first = agent.list_runs_page(session_id="p1", limit=3)
    later = agent.run("e", session_id="p1")  # started between two pages: read once, on a later page
    rest = agent.list_runs_page(session_id="p1", cursor=first["next_cursor"])
    assert [r["run_id"] for r in first["runs"] + rest["runs"]] == [r["run_id"] for r in agent.list_runs(session_id="p1")]
    assert rest["runs"][-1]["run_id"] == later["run_id"] and rest["next_cursor"] is None
    assert agent.list_runs_page(status="failed") == {"runs": [], "next_cursor": None}


@pytest.mark.parametrize("bad", [{"cursor": "x"}, {"cursor": "2026-01-01T00:00:00/r"}, {"limit": 0}, {"status": "done"}])
def test_a_bad_runs_cursor_limit_or_status_is_a_configuration_error(agent, bad):
    agent.run("hello", session_id="p3")
    with pytest.raises(ConfigurationError, match="cursor|limit|status"):
        agent.list_runs_page(**bad)
    assert len(agent.list_runs(session_id="p3")) == 1  # nothing lost


def test_remote_runs_more_than_a_page_are_read_whole_in_pages(model_url):
    local = make_agent(model_url)
    store = local.memory_router.store
    made = utcnow()
    for i in range(1203):
        store.save_run(RunRecord(run_id=f"run-{i:04}", agent="assistant", session_id="many", status="completed", created_at=made), None)
    with uvicorn_server(create_app(local)) as base, RemoteAgent(base, agent="assistant") as remote:
        sent = []
        remote._http.hooks["response"].append(lambda response, *args, **kwargs: sent.append(response.url))
        runs = remote.list_runs()
    assert [r["run_id"] for r in runs] == [f"run-{i:04}" for i in range(1203)]
    assert len(sent) == 3 and all("limit=500" in url for url in sent)  # three bounded pages
    local.cleanup()


def test_errors_are_the_same_classes(agent):
    with pytest.raises(RunNotFoundError):
        agent.get_run("run_nothing_here")
    with pytest.raises(ConfigurationError):
        agent.run(42, session_id="s9")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        agent.run("hi", session_id="s9", on_busy="sometimes")
    with pytest.raises(ConfigurationError):
        agent.list_runs(status="sleeping")


def test_clearing_a_session_forgets_it(agent):
    agent.run("remember me", session_id="s10")
    assert agent.clear_session_history("s10") == 2
    assert agent.get_session_history("s10") == []


def test_content_parts_are_run_streamed_and_kept_as_given(agent):
    result = agent.run(PARTS, session_id="p1")
    assert result["response"] == "echo: what is this? [image_url]"
    with agent.stream(PARTS, session_id="p1") as stream:
        text = "".join(e.text for e in stream if isinstance(e, TextDelta))
    assert text == "echo: what is this? [image_url]"
    history = agent.get_session_history("p1")
    assert [m["content"] for m in history if m["role"] == "user"] == [PARTS, PARTS]


def test_bad_content_parts_are_refused_at_the_call_alike(agent):
    with pytest.raises(ConfigurationError, match=r"message\[1\]"):
        agent.run([{"type": "text", "text": "x"}, {"type": "video", "video": {}}], session_id="p2")
    with pytest.raises(ConfigurationError, match="empty list"):
        agent.stream([], session_id="p2")  # refused before iteration, as locally
    assert agent.list_runs(session_id="p2") == []


def test_output_comes_back_as_the_type_asked_for(agent):
    city = agent.run('answer {"name": "Paris", "population": 2100000}', session_id="o1", output_type=City)
    assert city["output"] == City("Paris", 2100000)
    place = agent.run('answer {"name": "Lyon", "country": "FR"}', session_id="o1", output_type=Place)
    assert place["output"] == {"name": "Lyon", "country": "FR"}
    assert agent.run('answer {"n": 3}', session_id="o1", output_type=COUNT_SCHEMA)["output"] == {"n": 3}
    assert "output" not in agent.run("plain", session_id="o1")


def test_a_streamed_output_is_the_type_too(agent):
    with agent.stream('answer {"name": "Oslo", "population": 700000}', session_id="o2", output_type=City) as stream:
        events = list(stream)
    assert isinstance(events[-1], RunFinished) and events[-1].result["output"] == City("Oslo", 700000)
    assert stream.result["output"] == City("Oslo", 700000)


def test_an_answer_that_is_not_json_fails_the_run_alike(agent):
    with pytest.raises(OutputValidationError) as error:
        agent.run("answer {not json}", session_id="o3", output_type=City)
    assert error.value.text == "{not json}" and error.value.problems[0].startswith("not JSON")
    assert [r["status"] for r in agent.list_runs(session_id="o3")] == ["failed"]


def test_an_answer_that_does_not_fit_the_type_raises_alike(agent):
    with pytest.raises(OutputValidationError, match="population") as error:
        agent.run('answer {"name": "Rome", "population": "many"}', session_id="o4", output_type=City)
    assert error.value.text == '{"name": "Rome", "population": "many"}' and error.value.run_id


def test_resume_reads_the_answer_into_the_output_type_given_again(agent):
    paused = agent.run('use delete_file({"path": "/tmp/o5"})', session_id="o5")
    agent.resolve_approval(paused["run_id"], paused["approvals"][0]["id"], approved=True)
    with pytest.raises(OutputValidationError) as error:  # the model's "Done: ..." is no City
        agent.resume(paused["run_id"], output_type=City)
    assert error.value.text == "Done: deleted /tmp/o5"
    assert agent.get_run(paused["run_id"])["status"] == "failed"


def test_session_usage_adds_up_every_run(agent):
    first, second = agent.run("one", session_id="u1"), agent.run("two two two", session_id="u1")
    usage = agent.get_session_usage("u1")
    assert usage["runs"] == 2 and usage["model_calls"]["step"] == 2
    assert usage["usage"]["total_tokens"] == first["usage"]["total_tokens"] + second["usage"]["total_tokens"] > 0
    assert agent.get_session_usage("nobody")["runs"] == 0


def test_the_async_twins_run_and_stream_alike(model_url):
    local = make_agent(model_url)

    async def scenario(twin):
        result = await twin.run("async hello", session_id="a1")
        events = [event async for event in twin.stream("async stream", session_id="a1")]
        history = await twin.get_session_history("a1")
        return result["response"], "".join(e.text for e in events if isinstance(e, TextDelta)), len(history)

    with uvicorn_server(create_app(local)) as base:
        remote = asyncio.run(scenario(aio.RemoteAgent(base, token=None)))
    alone = asyncio.run(scenario(aio.OmniCoreAgent(name="solo", system_instruction=SYSTEM, model_config=local.model_config)))
    assert remote == alone == ("echo: async hello", "echo: async stream", 4)
    local.cleanup()
