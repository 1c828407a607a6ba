"""The TypedDicts in omnisync/results.py describe what the agent's methods really return."""

import types
import typing
import uuid

import omnisync
from helpers.agent_helpers import echo, make_agent
from helpers.fake_http import completion as fake_completion
from helpers.fake_http import install
from omnisync import results
from helpers.tool_agents import tool_agent


def problems(value, declared, where="result"):
    """Where ``value`` does not fit the ``declared`` type (TypedDicts, Literals, unions, lists, dicts)."""
    origin, arguments = typing.get_origin(declared), typing.get_args(declared)
    if declared is typing.Any:
        return []
    if typing.is_typeddict(declared):
        if not isinstance(value, dict):
            return [f"{where} is {type(value).__name__}, not a dict"]
        hints = typing.get_type_hints(declared)
        found = [f"{where} lacks {key!r}" for key in declared.__required_keys__ if key not in value]
        found += [f"{where} has undeclared {key!r}" for key in value if key not in hints]
        for key in value.keys() & hints.keys():
            found += problems(value[key], hints[key], f"{where}[{key!r}]")
        return found
    if origin in (typing.Union, types.UnionType):
        fits = [problems(value, option, where) for option in arguments]
        return [] if any(not f for f in fits) else [f"{where} = {value!r} fits none of {declared}"]
    if origin is typing.Literal:
        return [] if value in arguments else [f"{where} = {value!r} is not one of {arguments}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where} is {type(value).__name__}, not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, arguments[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where} is {type(value).__name__}, not a dict"]
        return [p for k, item in value.items() for p in problems(item, arguments[1], f"{where}[{k!r}]")]
    if declared is type(None):
        return [] if value is None else [f"{where} = {value!r} is not None"]
    if declared is int and isinstance(value, bool):
        return [f"{where} = {value!r} is a bool, not an int"]
    return [] if isinstance(value, declared) else [f"{where} = {value!r} is not {declared.__name__}"]


def test_the_checker_notices_a_wrong_shape():
    assert problems({"prompt_tokens": "3"}, results.Usage) == ["result['prompt_tokens'] = '3' is not int"]
    assert problems({"id": "c", "tool": "t"}, results.ApprovalRequest) == ["result lacks 'arguments'"]
    assert problems({"limit": "x", "used": 1, "allowed": 2, "extra": 0}, results.BudgetRequest) == ["result has undeclared 'extra'"]


def test_a_completed_run_its_record_history_and_preview_fit_their_types(monkeypatch):
    install(monkeypatch, echo)
    agent = make_agent(name=f"types-{uuid.uuid4().hex[:8]}")
    result = agent.run("hello", session_id="s")
    assert result["status"] == "completed"
    assert problems(result, omnisync.RunResult) == []
    assert problems(agent.get_run(result["run_id"]), omnisync.RunRecordDict) == []
    assert problems(agent.list_runs(), typing.List[omnisync.RunRecordDict]) == []
    assert problems(agent.get_session_history("s"), typing.List[omnisync.HistoryMessage]) == []
    assert problems(agent.get_session_history("s", include_inactive=True), typing.List[omnisync.HistoryMessage]) == []
    preview = agent.preview("s", "next")
    assert len(preview["messages"]) == 4
    assert problems(preview, omnisync.Preview) == []


def test_a_run_that_awaits_approval_fits_its_type(omnisync_cassette):
    agent = tool_agent(name=f"types-{uuid.uuid4().hex[:8]}")
    with omnisync_cassette("handwritten/approval"):
        paused = agent.run('Clean up: use delete_file({"path": "/tmp/old.log"})', session_id="s")
    assert paused["status"] == "awaiting_approval" and paused["approvals"]
    assert problems(paused, omnisync.RunResult) == []
    assert problems(agent.get_run(paused["run_id"]), omnisync.RunRecordDict) == []
    cancelled = agent.cancel_run(paused["run_id"])
    assert problems(cancelled, omnisync.RunResult) == []


def test_session_usage_and_a_structured_result_fit_their_types(monkeypatch):
    from dataclasses import dataclass

    @dataclass
    class Count:
        n: int

    def answer(body):
        if body["messages"][0]["content"].startswith("You write the running summary"):
            return echo(body)
        content = '{"n": 1}' if body.get("response_format") else "plain"
        return fake_completion(content, prompt_tokens=3, completion_tokens=1)

    install(monkeypatch, answer)
    config = {"memory_config": {"mode": "sliding_window", "value": 2, "summary": {"enabled": True}}}
    agent = make_agent(name=f"types-{uuid.uuid4().hex[:8]}", agent_config=config)
    agent.run("one", session_id="s")
    typed = agent.run("two", session_id="s", output_type=Count)
    assert typed["output"] == Count(1)
    assert problems(typed, omnisync.RunResult) == []
    usage = agent.get_session_usage("s")
    assert usage["model_calls"]["summary"] == 1
    assert problems(usage, omnisync.SessionUsage) == []
    assert problems(agent.get_run(typed["run_id"]), omnisync.RunRecordDict) == []
