import logging

import pytest

from omnisync import ConfigurationError, MemoryRouter, OmniCoreAgent
from omnisync.errors import InternalServerError, RunNotFoundError
from helpers.agent_helpers import LOCAL_MODEL, echo, make_agent
from helpers.fake_http import completion, install


def test_run_returns_response_ids_status_and_usage(monkeypatch):
    install(monkeypatch, echo)
    with make_agent() as agent:
        result = agent.run("hello", session_id="s1")
    assert result["response"] == "echo: hello"
    assert (result["session_id"], result["status"]) == ("s1", "completed")
    assert result["run_id"].startswith("run_")
    assert result["usage"] == {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def test_history_is_sent_to_the_model_and_kept_in_order(monkeypatch):
    http = install(monkeypatch, echo)
    agent = make_agent()
    agent.run("My project is called Atlas.", session_id="user_123")
    agent.run("What is my project called?", session_id="user_123")
    assert http.sent[1]["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "My project is called Atlas."},
        {"role": "assistant", "content": "echo: My project is called Atlas."},
        {"role": "user", "content": "What is my project called?"},
    ]
    assert [m["content"] for m in agent.get_session_history("user_123")] == [
        "My project is called Atlas.",
        "echo: My project is called Atlas.",
        "What is my project called?",
        "echo: What is my project called?",
    ]


def test_a_left_out_session_id_is_fresh_and_unguessable(monkeypatch):
    install(monkeypatch, echo)
    agent = make_agent()
    ids = {agent.run("hi")["session_id"] for _ in range(5)}
    assert len(ids) == 5 and all(len(i) >= 24 for i in ids)
    other = agent.run("hi", session_id="another")
    assert agent.get_session_history(other["session_id"])[0]["content"] == "hi"
    assert agent.get_session_history("never-used") == []


def test_history_reads_have_no_side_effects(monkeypatch):
    http = install(monkeypatch, echo)
    agent = make_agent()
    agent.run("x", session_id="s")
    before = agent.get_session_history("s")
    for _ in range(3):
        assert agent.get_session_history("s") == before
    assert len(http.sent) == 1


def test_agents_sharing_a_router_and_session_see_only_their_own(monkeypatch):
    install(monkeypatch, echo)
    with MemoryRouter("sql", url="sqlite://") as router:
        alpha, beta = make_agent("alpha", router), make_agent("beta", router)
        alpha.run("I am alpha", session_id="same")
        beta.run("I am beta", session_id="same")
        assert [m["content"] for m in alpha.get_session_history("same")] == ["I am alpha", "echo: I am alpha"]
        assert [m["content"] for m in beta.get_session_history("same")] == ["I am beta", "echo: I am beta"]
        alpha.cleanup()
        assert not router.closed  # a router passed in belongs to the caller
        assert beta.get_session_history("same")


def test_clear_one_all_and_unknown(monkeypatch):
    install(monkeypatch, echo)
    agent = make_agent()
    for session in ("a", "b"):
        agent.run("x", session_id=session)
    assert agent.clear_session_history("does-not-exist") == 0
    assert agent.get_session_history("a") and agent.get_session_history("b")
    assert agent.clear_session_history("a") == 2
    assert agent.get_session_history("a") == [] and agent.get_session_history("b")
    assert agent.clear_session_history() == 2
    assert agent.get_session_history("b") == []


def test_switch_memory_store_copies_nothing(monkeypatch, tmp_path):
    install(monkeypatch, echo)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'memory.db'}")
    agent = make_agent()
    agent.run("kept in process", session_id="s")
    assert agent.get_memory_store_type() == "in_memory"
    agent.switch_memory_store("sql")
    assert agent.get_memory_store_type() == "sql"
    assert agent.get_session_history("s") == []
    agent.run("in sqlite", session_id="s")
    assert [m["content"] for m in agent.get_session_history("s")] == ["in sqlite", "echo: in sqlite"]
    with pytest.raises(ConfigurationError, match="Invalid memory store type: postgres"):
        agent.switch_memory_store("postgres")
    assert agent.get_memory_store_type() == "sql"
    agent.cleanup()


def test_a_model_error_leaves_the_session_as_it_was(monkeypatch):
    install(monkeypatch, [completion("first"), (500, {"error": {"message": "boom"}}, {})])
    agent = make_agent()
    agent.run("one", session_id="s")
    before = agent.get_session_history("s")
    with pytest.raises(InternalServerError, match="boom"):
        agent.run("two", session_id="s")
    assert agent.get_session_history("s") == before
    [failed] = agent.list_runs(status="failed")
    assert "boom" in failed["error"]


@pytest.mark.parametrize("session_id", ["", 123, ["a"], "x" * 256])
def test_bad_session_ids_are_refused_before_anything_happens(monkeypatch, session_id):
    http = install(monkeypatch, echo)
    agent = make_agent()
    with pytest.raises(ConfigurationError, match="session_id must be a non-empty string"):
        agent.run("hi", session_id=session_id)
    assert http.sent == []


@pytest.mark.parametrize("message", [None, 42, {"role": "user"}])
def test_a_message_must_be_a_string(monkeypatch, message):
    install(monkeypatch, echo)
    with pytest.raises(ConfigurationError, match="message must be a string"):
        make_agent().run(message, session_id="s")


@pytest.mark.parametrize(
    "kwargs,text",
    [
        ({"name": ""}, "name must be a non-empty string"),
        ({"model_config": {"provider": "openai"}}, "needs a model name"),
        ({"model_config": {**LOCAL_MODEL, "provider": "acme"}}, "Unknown provider"),
        ({"agent_config": {"memory_config": {"mode": "window"}}}, "Invalid memory mode: window"),
        ({"agent_config": {"max_step": 3}}, "Unknown agent_config key"),
        ({"agent_config": {"run_retention_days": 0}}, "run_retention_days must be a positive whole number"),
        ({"agent_config": {"run_retention_days": 1.5}}, "run_retention_days"),
    ],
)
def test_bad_configuration_fails_when_the_agent_is_built(kwargs, text):
    base = {"name": "assistant", "system_instruction": "x", "model_config": LOCAL_MODEL}
    with pytest.raises(ConfigurationError, match=text):
        OmniCoreAgent(**{**base, **kwargs})


def test_unknown_run_is_a_clear_error(monkeypatch):
    install(monkeypatch, echo)
    with pytest.raises(RunNotFoundError, match="no run 'run_nope'"):
        make_agent().resume("run_nope")


def test_the_library_prints_nothing_and_logs_to_its_logger(monkeypatch, capsys):
    install(monkeypatch, echo)
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("omnisync").handlers)
    agent = make_agent()
    agent.run("quiet", session_id="s")
    agent.cleanup()
    assert capsys.readouterr() == ("", "")


def test_runs_work_from_inside_a_running_event_loop(monkeypatch):
    import asyncio

    install(monkeypatch, echo)
    agent = make_agent()

    async def notebook_cell():
        return agent.run("from a coroutine", session_id="s")["response"]

    assert asyncio.run(notebook_cell()) == "echo: from a coroutine"
