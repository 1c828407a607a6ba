"""Tool loops, parallel calls, approvals and budgets, replayed from hand-written cassettes."""

import asyncio
import json

import pytest

from omnisync.errors import RunStateError
from omnisync.tools import ToolRegistry
from helpers.agent_helpers import LOCAL_MODEL, make_agent
from helpers.fake_http import completion, install
from helpers.fake_stream import install as install_stream
from helpers.tool_agents import tool_agent

PARIS = 'use lookup({"city": "Paris"})'
ROME = 'use lookup({"city": "Rome"})'


def roles(history):
    return [m["role"] for m in history]


def ledger_lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_tool_loop_stores_call_and_result_together(omnisync_cassette, tmp_path):
    ledger = tmp_path / "ledger"
    agent = tool_agent(ledger=ledger)
    with omnisync_cassette("handwritten/tool_loop"):
        result = agent.run(f"What is the weather? {PARIS}", session_id="s")
    assert result["status"] == "completed" and result["response"] == "Done: sunny in Paris"
    assert result["steps"] == 2 and ledger_lines(ledger) == ["lookup Paris"]
    history = agent.get_session_history("s")
    assert roles(history) == ["user", "assistant", "tool", "assistant"]
    assert history[1]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"city": "Paris"}'}
    assert history[2]["tool_call_id"] == history[1]["tool_calls"][0]["id"]


def test_parallel_tool_calls_in_one_turn(omnisync_cassette, tmp_path):
    ledger = tmp_path / "ledger"
    agent = tool_agent(ledger=ledger)
    with omnisync_cassette("handwritten/parallel_tools"):
        result = agent.run(f"Compare {PARIS} and {ROME}", session_id="s")
    assert result["response"] == "Done: sunny in Paris | sunny in Rome"
    assert ledger_lines(ledger) == ["lookup Paris", "lookup Rome"]
    assert roles(agent.get_session_history("s")) == ["user", "assistant", "tool", "tool", "assistant"]


def test_failing_tools_and_bad_arguments_become_results(omnisync_cassette):
    agent = tool_agent()
    with omnisync_cassette("handwritten/tool_errors"):
        result = agent.run('Try use explode({}) and use lookup({"town": "x"}) and use nothing({})', session_id="s")
    assert result["status"] == "completed"
    results = [m["content"] for m in agent.get_session_history("s") if m["role"] == "tool"]
    assert results[0] == "Error: explode raised RuntimeError: kaboom"
    assert results[1] == "Error: the arguments do not fit lookup(city: string): missing a required argument: 'city'"
    assert results[2].startswith("Error: there is no tool named 'nothing'")


def test_approval_pauses_then_resumes_when_approved(omnisync_cassette, tmp_path):
    ledger = tmp_path / "ledger"
    agent = tool_agent(ledger=ledger)
    with omnisync_cassette("handwritten/approval"):
        paused = agent.run('Clean up: use delete_file({"path": "/tmp/old.log"})', session_id="s")
        assert paused["status"] == "awaiting_approval" and paused["response"] is None
        [approval] = paused["approvals"]
        assert approval["tool"] == "delete_file" and json.loads(approval["arguments"]) == {"path": "/tmp/old.log"}
        assert ledger_lines(ledger) == []
        with pytest.raises(RunStateError, match="resolve_approval first"):
            agent.resume(paused["run_id"])
        agent.resolve_approval(paused["run_id"], approval["id"], approved=True)
        done = agent.resume(paused["run_id"])
    assert done["status"] == "completed" and done["response"] == "Done: deleted /tmp/old.log"
    assert ledger_lines(ledger) == ["delete_file /tmp/old.log"]
    assert agent.get_run(paused["run_id"])["status"] == "completed"
    with pytest.raises(RunStateError, match="completed"):
        agent.resume(paused["run_id"])


def test_a_denied_call_gets_a_result_saying_so(omnisync_cassette, tmp_path):
    ledger = tmp_path / "ledger"
    agent = tool_agent(ledger=ledger)
    with omnisync_cassette("handwritten/approval_denied"):
        paused = agent.run('Clean up: use delete_file({"path": "/etc/passwd"})', session_id="s")
        agent.resolve_approval(paused["run_id"], paused["approvals"][0]["id"], approved=False, reason="not that one")
        done = agent.resume(paused["run_id"])
    assert done["response"] == "Done: The user denied this call to delete_file: not that one."
    assert ledger_lines(ledger) == []


def test_approving_an_unknown_call_is_refused(omnisync_cassette):
    agent = tool_agent()
    with omnisync_cassette("handwritten/approval_unknown_call"):
        paused = agent.run('use delete_file({"path": "x"})', session_id="s")
    with pytest.raises(RunStateError, match="no pending call 'call_zzz'"):
        agent.resolve_approval(paused["run_id"], "call_zzz", approved=True)


def test_budget_pauses_and_a_grant_lets_it_finish(omnisync_cassette, tmp_path):
    ledger = tmp_path / "ledger"
    agent = tool_agent(ledger=ledger, budget={"max_tool_calls": 1})
    with omnisync_cassette("handwritten/budget"):
        paused = agent.run(f"Both: {PARIS} {ROME}", session_id="s")
        assert paused["status"] == "awaiting_budget"
        assert paused["budget_request"] == {"limit": "max_tool_calls", "used": 1, "allowed": 1}
        assert ledger_lines(ledger) == ["lookup Paris"]
        with pytest.raises(RunStateError, match="awaiting_budget"):
            agent.resolve_approval(paused["run_id"], "x", approved=True)
        agent.grant_budget(paused["run_id"], extra_tool_calls=1)
        done = agent.resume(paused["run_id"])
    assert done["response"] == "Done: sunny in Paris | sunny in Rome"
    assert ledger_lines(ledger) == ["lookup Paris", "lookup Rome"]  # Paris was not repeated


def test_max_steps_stops_the_loop(omnisync_cassette):
    agent = tool_agent(max_steps=1)
    with omnisync_cassette("handwritten/max_steps"):
        result = agent.run(f"Loop: {PARIS}", session_id="s")
    assert result["status"] == "failed" and "max_steps=1" in result["error"]
    assert roles(agent.get_session_history("s")) == ["user", "assistant", "tool"]


def test_list_and_prune_runs(omnisync_cassette):
    agent = tool_agent()
    with omnisync_cassette("handwritten/approval_unknown_call"):
        paused = agent.run('use delete_file({"path": "x"})', session_id="s")
    assert [r["run_id"] for r in agent.list_runs(status="awaiting_approval")] == [paused["run_id"]]
    assert agent.list_runs(session_id="other") == []
    assert agent.prune_runs() == 0  # a paused run is never pruned


def test_tool_schema_from_type_hints():
    tools = ToolRegistry()

    @tools.register_tool(name="search")
    def find(query: str, limit: int = 5, exact: bool | None = None) -> list:
        """Search the notes."""
        return []

    [schema] = tools.schemas()
    assert schema["function"]["name"] == "search" and schema["function"]["description"] == "Search the notes."
    assert schema["function"]["parameters"] == {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}, "exact": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}},
        "required": ["query"],
        "additionalProperties": False,
    }
    with pytest.raises(ValueError, match="already registered"):
        tools.register_tool(name="search")(find)


def call_of(name, arguments, call_id="c1"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def async_tools(loops):
    """Two async tools: ``fetch`` notes the loop it was awaited on, ``broken`` raises after awaiting."""
    tools = ToolRegistry()

    @tools.register_tool()
    async def fetch(city: str) -> str:
        """Fetch a city's weather."""
        await asyncio.sleep(0)
        loops.append(asyncio.get_running_loop())
        return f"fetched {city}"

    @tools.register_tool()
    async def broken() -> str:
        """Always fails."""
        await asyncio.sleep(0)
        raise RuntimeError("no network")

    return tools


def answers_calling(*calls):
    return [completion(None, list(calls)), completion("done")]


def tool_results(agent):
    return [m["content"] for m in agent.get_session_history("s") if m["role"] == "tool"]


def test_an_async_tool_is_described_and_awaited_to_completion_by_the_blocking_agent(monkeypatch):
    loops = []
    install(monkeypatch, answers_calling(call_of("fetch", {"city": "Paris"}), call_of("broken", {}, "c2")))
    agent = make_agent(local_tools=async_tools(loops))
    assert agent.tools.get("fetch").parameters["properties"] == {"city": {"type": "string"}}
    result = agent.run("weather?", session_id="s")
    assert result["status"] == "completed"
    assert tool_results(agent) == ["fetched Paris", "Error: broken raised RuntimeError: no network"]
    assert len(loops) == 1 and loops[0].is_closed()  # a loop of its own, closed when the tool returned
    agent.cleanup()


def test_a_blocking_run_inside_a_running_loop_awaits_its_async_tool_on_a_private_loop(monkeypatch):
    loops = []
    install(monkeypatch, answers_calling(call_of("fetch", {"city": "Oslo"})))
    agent = make_agent(local_tools=async_tools(loops))

    async def blocking_call_in_a_coroutine():
        return agent.run("weather?", session_id="s"), asyncio.get_running_loop()

    result, caller = asyncio.run(blocking_call_in_a_coroutine())
    assert result["status"] == "completed" and tool_results(agent) == ["fetched Oslo"]
    assert loops[0] is not caller and loops[0].is_running()  # the caller's loop was blocked by the call itself
    agent.cleanup()


def test_omnisync_aio_awaits_async_tools_on_the_callers_loop_run_and_stream(monkeypatch):
    from omnisync.aio import OmniCoreAgent as AsyncAgent

    loops = []
    install_stream(
        monkeypatch,
        answers_calling(call_of("fetch", {"city": "Rome"})) + answers_calling(call_of("fetch", {"city": "Lima"}, "c3")),
    )
    agent = AsyncAgent(name="assistant", system_instruction="You are a test.", model_config=LOCAL_MODEL, local_tools=async_tools(loops))

    async def main():
        ran = await agent.run("weather?", session_id="s")
        async with agent.stream("and Lima?", session_id="s") as stream:
            async for _ in stream:
                pass
        history = await agent.get_session_history("s")
        await agent.cleanup()
        return ran, stream.result, history, asyncio.get_running_loop()

    ran, streamed, history, caller = asyncio.run(main())
    assert ran["status"] == streamed["status"] == "completed"
    assert loops == [caller, caller]
    assert [m["content"] for m in history if m["role"] == "tool"] == ["fetched Rome", "fetched Lima"]
