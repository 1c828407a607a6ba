"""Every failure ends clean (issue 16), on every backend: each cause the issue lists, reproduced.

The model is mocked HTTP that refuses, as OpenAI does, a request whose tool calls and results
do not pair up (tests/helpers/fake_http.py), so a poisoned session shows as a 400 here.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import timedelta

import pytest

from omnisync import OmniCoreAgent, ToolRegistry, run_state
from omnisync.errors import (
    AuthenticationError,
    ConfigurationError,
    InternalServerError,
    ModelResponseError,
    ModelTimeoutError,
    RunConflictError,
    RunStateError,
    SessionBusyError,
    StoreError,
)
from omnisync.messages import SUMMARY_PREFIX, utcnow
from omnisync.run_events import ToolCall
from omnisync.run_drivers import events
from omnisync.runner import ABANDONED_CALL
from omnisync.storable import MAX_ID_LENGTH, MAX_MESSAGE_BYTES
from helpers.agent_helpers import LOCAL_MODEL, echo
from helpers.backend_routers import BACKENDS, open_router
from helpers.fake_http import ScriptedAdapter, completion, install

WEATHER = "What is the weather in Paris?"


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


@pytest.fixture
def name():
    return f"failures-{uuid.uuid4().hex[:10]}"


def call(call_id, tool="lookup", arguments='{"city": "Paris"}'):
    return {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}


class Tools:
    """lookup, big and approve_me; every execution noted, and a hook to run inside lookup."""

    def __init__(self):
        self.ran: list[str] = []
        self.inside_lookup = None  # called once, inside the first lookup
        self.registry = ToolRegistry()

        @self.registry.register_tool()
        def lookup(city: str) -> str:
            """The weather in a city."""
            self.ran.append(f"lookup {city}")
            hook, self.inside_lookup = self.inside_lookup, None
            if hook is not None:
                hook()
            return f"sunny in {city}"

        @self.registry.register_tool()
        def big() -> str:
            """A result larger than a message may hold, with a NUL in it."""
            self.ran.append("big")
            return "\x00" + "z" * (MAX_MESSAGE_BYTES + 10)

        @self.registry.register_tool(requires_approval=True)
        def approve_me() -> str:
            """Needs a person's yes."""
            self.ran.append("approve_me")
            return "approved and done"


def agent_on(router, name, tools=None, model_config=None, **agent_config):
    return OmniCoreAgent(
        name=name,
        system_instruction="You are a test.",
        model_config=model_config or LOCAL_MODEL,
        memory_router=router,
        local_tools=(tools or Tools()).registry,
        agent_config=agent_config or None,
    )


def weather_model(call_id="call_1", tool="lookup"):
    """Asks for a tool when the user asks about the weather, answers after the result, echoes otherwise."""
    counter = iter(range(1_000_000))

    def model(body):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return completion(f"done: {last['content'][:40]}")
        if last["role"] == "user" and "weather" in last["content"]:
            arguments = '{"city": "Paris"}' if tool == "lookup" else "{}"
            return completion(None, [call(call_id or f"call_{next(counter)}", tool, arguments)])
        return echo(body)

    return model


def roles(agent, session):
    return [m["role"] for m in agent.get_session_history(session)]


def runs(agent, status):
    return agent.list_runs(status=status)


def no_run_is_left_running(agent):
    return agent.list_runs(status="running") == []


# --- lost or repeated ------------------------------------------------------------------


def test_a_summary_of_only_its_prefix_folds_nothing_and_deletes_nothing(router, name, monkeypatch):
    def model(body):
        if body["messages"][0]["content"].startswith("You write the running summary"):
            return completion(f"{SUMMARY_PREFIX}   ")
        return echo(body)

    install(monkeypatch, model)
    agent = agent_on(router, name, memory_config={"value": 2, "summary": {"enabled": True, "retention_policy": "delete"}})
    for text in ("my project is Atlas", "it ships Friday", "and costs 3"):
        agent.run(text, session_id="s")
    history = agent.get_session_history("s", include_inactive=True)
    assert len(history) == 6 and not any(m["summary"] for m in history)
    assert history[0]["content"] == "my project is Atlas"


def test_a_tool_call_id_too_long_for_a_column_runs_its_tool_once(router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model(call_id="c" * 300))
    tools = Tools()
    agent = agent_on(router, name, tools)
    result = agent.run(WEATHER, session_id="s")
    assert result["status"] == "completed" and result["response"] == "done: sunny in Paris"
    assert tools.ran == ["lookup Paris"]
    stored = agent.get_session_history("s")
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    call_id = stored[1]["tool_calls"][0]["id"]
    assert len(call_id) <= MAX_ID_LENGTH and stored[2]["tool_call_id"] == call_id
    assert adapter.refused == [] and no_run_is_left_running(agent)


def test_a_reply_too_large_to_store_fails_typed_and_leaves_the_session_as_it_was(router, name, monkeypatch):
    answers = [completion("hello"), completion("x" * (MAX_MESSAGE_BYTES + 1)), completion("y" * (MAX_MESSAGE_BYTES - 64))]
    install(monkeypatch, answers)
    agent = agent_on(router, name)
    agent.run("hi", session_id="s")
    with pytest.raises(ModelResponseError, match="more than the .* a stored message may hold"):
        agent.run("write me a novel", session_id="s")
    assert roles(agent, "s") == ["user", "assistant"]  # the user message went neither
    [failed] = runs(agent, "failed")
    assert failed["error"].startswith("ModelResponseError") and no_run_is_left_running(agent)
    just_fits = agent.run("write me a long one", session_id="s")  # stored, and so is its record
    assert just_fits["status"] == "completed" and agent.get_run(just_fits["run_id"])["status"] == "completed"
    assert len(agent.get_session_history("s")[-1]["content"]) == MAX_MESSAGE_BYTES - 64


def test_a_tool_result_too_large_to_store_is_shortened_and_its_tool_runs_once(router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model(tool="big"))
    tools = Tools()
    agent = agent_on(router, name, tools)
    assert agent.run(WEATHER, session_id="s")["status"] == "completed"
    result = agent.get_session_history("s")[2]["content"]
    assert tools.ran == ["big"] and result.startswith("\ufffdzzz") and result.endswith("bytes a message may hold ...]")
    assert len(result.encode()) <= MAX_MESSAGE_BYTES and adapter.refused == []


# --- sessions that get stuck -----------------------------------------------------------


def test_two_runs_of_one_session_with_tools_never_interleave(router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model(call_id=None))
    tools = Tools()
    first, other = agent_on(router, name, tools), agent_on(router, name)  # two agents: as two processes
    waiting = threading.Event()
    first._runner.sleep = lambda seconds: (waiting.set(), threading.Event().wait(seconds))
    outcome = {}

    def inside_the_tool():
        with pytest.raises(SessionBusyError, match="is busy: run .* is running in it") as busy:
            other.run(WEATHER, session_id="s", on_busy="raise")
        outcome["busy"] = busy.value
        queued = threading.Thread(target=lambda: outcome.update(second=first.run("and tomorrow's weather?", session_id="s")))
        queued.start()  # the same agent, a second request: it waits for the session
        outcome["thread"] = queued
        assert waiting.wait(30)

    tools.inside_lookup = inside_the_tool
    result = first.run(WEATHER, session_id="s")
    outcome["thread"].join(30)
    assert result["status"] == "completed" and outcome["second"]["status"] == "completed"
    assert outcome["busy"].run_id == result["run_id"]
    assert roles(first, "s") == ["user", "assistant", "tool", "assistant"] * 2
    assert adapter.refused == [] and no_run_is_left_running(first)


def _expire_lease(store, name, run_id):
    record = run_state.load(store, name, run_id)
    store.save_run(record.evolve(lease_until=utcnow() - timedelta(minutes=1)), expected_version=record.version)


def test_a_run_whose_process_died_in_a_tool_is_closed_before_the_next_run(router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model())
    tools = Tools()
    dying = agent_on(router, name, tools)
    steps = events(dying._runner.start(WEATHER, "s"), dying._client.complete)
    asked = next(e for e in steps if isinstance(e, ToolCall))  # the process stops here, before its tool returns
    later = agent_on(router, name)
    with pytest.raises(SessionBusyError):  # its lease still runs: it may be a slow tool
        later.run("hello", session_id="s", on_busy="raise")
    _expire_lease(router.store, name, asked.run_id)
    assert later.run("hello", session_id="s")["response"] == "echo: hello"
    sent = adapter.sent[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": ABANDONED_CALL}
    dead = later.get_run(asked.run_id)
    assert dead["status"] == "failed" and dead["error"].startswith("abandoned") and "call_1" in dead["error"]
    with pytest.raises(RunStateError, match="moved on"):
        later.resume(asked.run_id)
    with pytest.raises(RunConflictError, match="lost its lease"):  # the process was only slow: it comes back
        next(steps)
    assert tools.ran == ["lookup Paris"]  # it ran, but its result is not written over the closed call
    assert roles(later, "s") == ["user", "assistant", "tool", "user", "assistant"]
    assert adapter.refused == [] and no_run_is_left_running(later)


def test_a_run_that_lost_its_lease_in_a_tool_cannot_write_after_another_took_over(router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model())
    tools = Tools()
    slow, other = agent_on(router, name, tools), agent_on(router, name)

    def overrun():
        [running] = slow.list_runs(status="running")
        _expire_lease(router.store, name, running["run_id"])
        other.run("hello", session_id="s")  # takes over the session, closing the overrun run

    tools.inside_lookup = overrun
    with pytest.raises(RunConflictError, match="lost its lease"):
        slow.run(WEATHER, session_id="s")
    history = other.get_session_history("s")
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "user", "assistant"]
    assert [m["content"] for m in history if m["role"] == "tool"] == [ABANDONED_CALL]  # no stray result
    assert adapter.refused == [] and no_run_is_left_running(other)


def test_a_run_that_lost_its_lease_during_a_model_call_cannot_write_its_reply(router, name, monkeypatch):
    slow, other = agent_on(router, name), agent_on(router, name)
    clock = FakeClock()
    slow._runner.clock = clock

    def model(body):
        if body["messages"][-1]["content"] == "take your time" and not clock.now > 1000.0:
            clock.now += 300  # the call outlasts the lease (run_lease_seconds 300) ...
            [running] = slow.list_runs(status="running")
            _expire_lease(router.store, name, running["run_id"])
            other.run("hello", session_id="s")  # ... and another process takes the session over
            return completion("too late")
        return echo(body)

    adapter = install(monkeypatch, model)
    with pytest.raises(RunConflictError, match="lost its lease"):
        slow.run("take your time", session_id="s")
    assert [m["content"] for m in other.get_session_history("s")] == ["hello", "echo: hello"]  # no stray "too late"
    assert adapter.refused == [] and no_run_is_left_running(other)


def test_a_session_cleared_while_a_run_is_in_a_tool_stays_valid(router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model())
    tools = Tools()
    agent = agent_on(router, name, tools)
    tools.inside_lookup = lambda: agent.memory_router.store.clear(name, "s")  # as clear_session_history from elsewhere
    assert agent.run(WEATHER, session_id="s")["response"] == "done: sunny in Paris"
    assert roles(agent, "s") == ["tool", "assistant"]  # what the run wrote after the clear
    assert agent.run("and now?", session_id="s")["response"] == "echo: and now?"
    assert [m["role"] for m in adapter.sent[-1]["messages"]] == ["system", "assistant", "user"]  # the orphan result is not sent
    assert adapter.refused == []


def test_tool_arguments_sent_as_an_object_leave_no_call_unanswered(router, name, monkeypatch):
    as_object = call("call_obj", arguments={"city": "Paris"})
    adapter = install(monkeypatch, [completion(None, [as_object]), completion("done")])
    tools = Tools()
    agent = agent_on(router, name, tools)
    assert agent.run(WEATHER, session_id="s")["response"] == "done"
    assert tools.ran == ["lookup Paris"] and roles(agent, "s") == ["user", "assistant", "tool", "assistant"]
    assert agent.get_session_history("s")[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    assert adapter.refused == []


def test_a_paused_run_holds_its_session_and_cancelling_it_answers_its_calls(router, name, monkeypatch):
    adapter = install(monkeypatch, [completion(None, [call("call_ok", "approve_me", "{}")]), completion("echo: next")])
    tools = Tools()
    agent = agent_on(router, name, tools)
    paused = agent.run("do the thing", session_id="s")
    assert paused["status"] == "awaiting_approval"
    with pytest.raises(SessionBusyError, match="awaiting_approval: resolve it and resume it") as busy:
        agent.run("something else", session_id="s")  # waiting would wait on a person: refused at once
    assert busy.value.paused and busy.value.run_id == paused["run_id"]
    cancelled = agent.cancel_run(paused["run_id"], reason="not now")
    assert cancelled["status"] == "cancelled" and tools.ran == []
    assert agent.run("next", session_id="s")["response"] == "echo: next"
    assert roles(agent, "s") == ["user", "assistant", "tool", "user", "assistant"]
    assert agent.get_session_history("s")[2]["content"] == "Error: this call did not run: its run was cancelled: not now."
    assert adapter.refused == []


def test_a_call_left_open_in_the_store_is_never_sent(router, name, monkeypatch):
    adapter = install(monkeypatch, [completion(None, [call("call_x", "approve_me", "{}")]), completion("fine")])
    agent = agent_on(router, name)
    paused = agent.run("do the thing", session_id="s")
    record = run_state.load(router.store, name, paused["run_id"])
    run_state.finish(router.store, record, "cancelled", retention_days=1)  # ended with no answer written for its open call
    assert agent.run("and now?", session_id="s")["response"] == "fine"
    assert [m["role"] for m in adapter.sent[-1]["messages"]] == ["system", "user", "user"]
    assert adapter.refused == []


# --- failures that end dirty -----------------------------------------------------------

MALFORMED = {
    "message is a string": {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": "hi", "finish_reason": "stop"}]},
    "tool call without id": completion(None, [{"type": "function", "function": {"name": "lookup", "arguments": "{}"}}]),
    "tool call without name": completion(None, [{"id": "call_1", "type": "function", "function": {"arguments": "{}"}}]),
}


@pytest.mark.parametrize("shape", list(MALFORMED))
def test_a_malformed_reply_is_a_model_response_error_and_the_run_ends_failed(router, name, monkeypatch, shape):
    install(monkeypatch, [MALFORMED[shape]])
    tools = Tools()
    agent = agent_on(router, name, tools)
    with pytest.raises(ModelResponseError, match="not a chat completion"):
        agent.run(WEATHER, session_id="s")
    assert agent.get_session_history("s") == [] and tools.ran == []
    [failed] = runs(agent, "failed")
    assert failed["error"].startswith("ModelResponseError") and no_run_is_left_running(agent)


@pytest.mark.parametrize("text", ["a NUL \x00 here", "a lone surrogate \ud800 here"], ids=["nul", "surrogate"])
def test_a_user_message_no_store_can_keep_is_refused_before_the_model_is_paid(router, name, monkeypatch, text):
    adapter = install(monkeypatch, echo)
    agent = agent_on(router, name)
    with pytest.raises(ConfigurationError, match="NUL character or a lone surrogate"):
        agent.run(text, session_id="s")
    assert adapter.sent == [] and agent.get_session_history("s") == [] and agent.list_runs() == []


def test_text_from_the_model_or_a_tool_that_no_store_can_keep_is_stored_as_replacement_characters(router, name, monkeypatch):
    bad_call = call("call_\x00", arguments='{"city": "Par\x00is"}')
    answers = [completion("let me look \ud800", [bad_call]), completion("sunny \x00 there")]
    adapter = install(monkeypatch, lambda body: answers.pop(0) if answers else echo(body))
    tools = Tools()
    agent = agent_on(router, name, tools)
    assert agent.run(WEATHER, session_id="s")["response"] == "sunny \ufffd there"
    stored = agent.get_session_history("s")
    assert stored[1]["content"] == "let me look \ufffd"
    assert stored[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Par\ufffdis"}'
    assert stored[2]["tool_call_id"] == stored[1]["tool_calls"][0]["id"] and "\x00" not in stored[2]["tool_call_id"]
    assert tools.ran == ["lookup Par\ufffdis"]
    assert agent.run("again", session_id="s")["status"] == "completed"  # what was stored is sent again as it is
    assert adapter.refused == []


def test_a_store_error_after_the_model_answered_ends_the_run_failed_with_a_typed_error(router, name, monkeypatch):
    install(monkeypatch, echo)
    agent = agent_on(router, name)

    def refuse(*args, **kwargs):
        raise UnicodeEncodeError("utf-8", "x", 0, 1, "surrogates not allowed")  # as a driver refuses, untyped

    monkeypatch.setattr(router.store, "append", refuse)
    monkeypatch.setattr(router.store, "append_and_save_run", refuse)  # a run's last write, one round trip where the store can
    with pytest.raises(StoreError, match="could not write run .* UnicodeEncodeError"):
        agent.run("hello", session_id="s")
    monkeypatch.undo()
    [failed] = runs(agent, "failed")
    assert failed["error"].startswith("StoreError") and no_run_is_left_running(agent)
    assert agent.get_session_history("s") == []


def test_a_store_error_before_a_run_starts_does_not_leave_its_session_busy(router, name, monkeypatch):
    install(monkeypatch, echo)
    agent = agent_on(router, name)
    with monkeypatch.context() as broken:
        for read in ("window", "load_lease_and_window"):  # a run's first read, with its lease where the store can
            broken.setattr(router.store, read, lambda *args, **kwargs: (_ for _ in ()).throw(StoreError("the link went silent")))
        with pytest.raises(StoreError, match="the link went silent"):
            agent.run("hello", session_id="s")
    assert agent.run("hello", session_id="s", on_busy="raise")["response"] == "echo: hello"


def test_a_run_whose_driver_stops_early_ends_cancelled_and_frees_its_session(router, name, monkeypatch):
    install(monkeypatch, echo)
    agent = agent_on(router, name)
    steps = events(agent._runner.start("hi", "s"), agent._client.complete)
    started = next(steps)  # a streaming caller that stops reading here
    steps.close()
    assert agent.get_run(started.run_id)["status"] == "cancelled" and agent.get_session_history("s") == []
    assert agent.run("hi again", session_id="s", on_busy="raise")["status"] == "completed"


def test_an_interrupted_tool_ends_its_run_failed_and_the_run_can_be_resumed(router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model())
    tools = Tools()
    agent = agent_on(router, name, tools)

    def interrupt():
        raise KeyboardInterrupt

    tools.inside_lookup = interrupt
    with pytest.raises(KeyboardInterrupt):
        agent.run(WEATHER, session_id="s")
    [failed] = runs(agent, "failed")
    assert failed["error"] == "interrupted: KeyboardInterrupt" and roles(agent, "s") == ["user", "assistant"]
    assert agent.resume(failed["run_id"])["response"] == "done: sunny in Paris"  # the call never returned, so it runs again
    assert tools.ran == ["lookup Paris", "lookup Paris"] and adapter.refused == []


def test_a_model_error_after_a_tool_call_leaves_a_valid_session_and_a_resumable_run(router, name, monkeypatch):
    adapter = install(monkeypatch, [completion(None, [call("call_1")]), (500, {"error": {"message": "overloaded"}}, {}), completion("sunny, then")])
    tools = Tools()
    agent = agent_on(router, name, tools)
    with pytest.raises(InternalServerError) as error:
        agent.run(WEATHER, session_id="s")
    assert roles(agent, "s") == ["user", "assistant", "tool"]  # what the run stored, and no more: a valid prefix
    [failed] = runs(agent, "failed")
    assert failed["error"].startswith("InternalServerError")
    resumed = agent.resume(failed["run_id"])
    assert resumed["status"] == "completed" and resumed["response"] == "sunny, then" and tools.ran == ["lookup Paris"]
    assert roles(agent, "s") == ["user", "assistant", "tool", "assistant"] and error.value.status_code == 500
    assert adapter.refused == [] and no_run_is_left_running(agent)


def test_a_failed_run_is_not_resumed_once_its_session_moved_on(router, name, monkeypatch):
    answers = [completion(None, [call("call_1")]), (500, {"error": {"message": "overloaded"}}, {})]
    adapter = install(monkeypatch, lambda body: answers.pop(0) if answers else echo(body))
    agent = agent_on(router, name)
    with pytest.raises(InternalServerError):
        agent.run(WEATHER, session_id="s")
    [failed] = runs(agent, "failed")
    assert agent.run("never mind", session_id="s")["response"] == "echo: never mind"
    with pytest.raises(RunStateError, match="moved on"):
        agent.resume(failed["run_id"])
    assert roles(agent, "s") == ["user", "assistant", "tool", "user", "assistant"] and adapter.refused == []


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class TricklingServer(ScriptedAdapter):
    """Answers 200 and then sends its body one space at a time, each taking 10 s of a fake clock, forever."""

    def __init__(self, clock):
        super().__init__([])
        self.clock = clock

    def send(self, request, **kwargs):
        self.answers.append(completion("never seen"))
        response = super().send(request, **kwargs)
        response._content, response._content_consumed = False, False
        response.raw = self
        return response

    def read(self, amount=None, **kwargs):
        self.clock.now += 10
        return b" "


def test_a_server_trickling_its_body_cannot_hold_a_run_past_the_call_deadline(router, name, monkeypatch):
    clock = FakeClock()
    server = install(monkeypatch, [], adapter=TricklingServer(clock))
    agent = agent_on(router, name, model_config=dict(LOCAL_MODEL, timeout=30, deadline=120, max_retries=2))
    agent._client._clock = clock
    with pytest.raises(ModelTimeoutError, match="within the call's deadline of 120 s") as error:
        agent.run("hello", session_id="s")
    assert clock.now - 1000.0 <= 130 and len(server.sent) == 1  # given up at the deadline, and not posted again
    assert error.value.request_sent
    [failed] = runs(agent, "failed")
    assert failed["error"].startswith("ModelTimeoutError") and agent.get_session_history("s") == []


# --- secrets ---------------------------------------------------------------------------

PASSWORD = "pw-s3cret-4711"
KEY = "sk-test-abcdefghij0123456789"


def _secret_free(secret, *texts):
    return all(secret not in text for text in texts)


@pytest.mark.parametrize(
    "answer",
    [(500, {"error": {"message": "boom"}}, {}), (404, "no such thing", {})],
    ids=["500", "404"],
)
def test_a_password_in_the_model_url_is_never_shown_or_stored(router, name, monkeypatch, caplog, answer):
    install(monkeypatch, [answer])
    model = dict(LOCAL_MODEL, base_url=f"http://user:{PASSWORD}@127.0.0.1:9/v1")
    agent = agent_on(router, name, model_config=model)
    with caplog.at_level(logging.DEBUG), pytest.raises(InternalServerError if answer[0] == 500 else Exception) as error:
        agent.run("hello", session_id="s")
    [failed] = runs(agent, "failed")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "user:***@127.0.0.1" in str(error.value)
    assert _secret_free(PASSWORD, str(error.value), repr(error.value.body), failed["error"], logged)
    assert _secret_free(PASSWORD, repr(agent.model_config), repr(agent._client.config), repr(agent))


def test_an_api_key_echoed_in_a_401_body_is_never_stored_or_logged(router, name, monkeypatch, caplog):
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. You can find your key at ...", "code": "invalid_api_key"}}
    install(monkeypatch, [(401, body, {})])
    agent = agent_on(router, name, model_config=dict(LOCAL_MODEL, api_key=KEY))
    with caplog.at_level(logging.DEBUG), pytest.raises(AuthenticationError) as error:
        agent.run("hello", session_id="s")
    [failed] = runs(agent, "failed")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Incorrect API key provided: ***" in str(error.value)
    assert _secret_free(KEY, str(error.value), repr(error.value.body), failed["error"], logged, repr(agent.model_config))


# --- a store that blips ---------------------------------------------------------------


@pytest.fixture(params=[pytest.param(kind, marks=pytest.mark.backend(kind)) for kind in ("postgres", "pgbouncer")])
def postgres_router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


def end_every_connection_to(router):
    """An outage as PostgreSQL's clients see it, without stopping the shared server: every
    server process of the store's database is ended from a second connection (behind PgBouncer,
    the pooler's server connections)."""
    import sqlalchemy as sa

    from helpers.backends import autocommit, postgres_url

    with autocommit(postgres_url()) as admin:
        ended = admin.execute(
            sa.text("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE datname = :db AND pid <> pg_backend_pid()"),
            {"db": router.store.engine.url.database},
        ).scalar()
    assert ended >= 1


def test_an_outage_during_a_tool_costs_neither_its_result_nor_a_second_run_of_it(postgres_router, name, monkeypatch):
    adapter = install(monkeypatch, weather_model())
    tools = Tools()
    agent = agent_on(postgres_router, name, tools)
    tools.inside_lookup = lambda: end_every_connection_to(postgres_router)
    result = agent.run(WEATHER, session_id="s")
    assert result["status"] == "completed" and result["response"] == "done: sunny in Paris"
    assert tools.ran == ["lookup Paris"] and roles(agent, "s") == ["user", "assistant", "tool", "assistant"]
    assert adapter.refused == [] and no_run_is_left_running(agent)


def lose_the_connection_of_the_next_run_update(store, when):
    """The next UPDATE of a run record meets a connection that is gone: ended by the server just
    before the statement, or lost just after it ran, before its answer came back."""
    import psycopg
    import sqlalchemy as sa

    from helpers.backends import autocommit, postgres_url

    def before(conn, _cursor, statement, *_args):
        if statement.startswith("UPDATE omnisync_runs") and not lost:
            lost.append(pid := conn.connection.dbapi_connection.info.backend_pid)
            with autocommit(postgres_url()) as admin:
                admin.execute(sa.text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid})

    def after(conn, _cursor, statement, *_args):
        if statement.startswith("UPDATE omnisync_runs") and not lost:
            lost.append(True)
            conn.connection.dbapi_connection.close()
            raise psycopg.OperationalError("the connection was lost before the answer came back")

    lost: list[object] = []
    sa.event.listen(store.engine, f"{when}_cursor_execute", before if when == "before" else after)
    return lost


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_save_whose_connection_is_lost_is_made_once_more_on_a_fresh_one(postgres_router, name, when):
    from omnisync.run_record import RunRecord

    store = postgres_router.store
    if when == "before" and store.engine.url.port != 5432:
        pytest.skip("behind PgBouncer the server process of a statement is not the client's to end")
    first = store.save_run(RunRecord(run_id="r1", agent=name, session_id="s", created_at=utcnow()), None)
    lost = lose_the_connection_of_the_next_run_update(store, when)
    second = store.save_run(first.evolve(step=2), first.version)
    assert lost and second.version == 2 and store.load_run(name, "r1") == second
    with pytest.raises(RunConflictError):  # still a compare-and-set
        store.save_run(first.evolve(step=3), first.version)


def test_a_pooled_connection_the_server_ended_is_replaced_before_an_append_uses_it(postgres_router, name):
    """An append is never made twice, so it must not meet a dead connection: one the server
    ended while it rested (it said goodbye) is replaced at checkout, without a ping."""
    from omnisync.messages import Message

    store = postgres_router.store
    store.append(name, "s", [Message(role="user", content="before")])
    end_every_connection_to(postgres_router)
    store.append(name, "s", [Message(role="user", content="after")])
    assert [m.content for m in store.history(name, "s")] == ["before", "after"]


@pytest.mark.parametrize("bad", ["nul\x00id", "lone \ud800 surrogate", "x" * 256], ids=["nul", "surrogate", "too-long"])
def test_an_id_no_store_can_keep_is_refused_typed_before_the_model_is_paid(router, name, monkeypatch, bad):
    adapter = install(monkeypatch, echo)
    agent = agent_on(router, name)
    agent.run("kept", session_id="s")
    for refused_call, field in [
        (lambda: agent.run("hello", session_id=bad), "session_id"),
        (lambda: agent.get_session_history(bad), "session_id"),
        (lambda: agent.get_run(bad), "run_id"),
        (lambda: agent.resume(bad), "run_id"),
        (lambda: agent.cancel_run(bad), "run_id"),
    ]:
        with pytest.raises(ConfigurationError, match=field):
            refused_call()
    assert len(adapter.sent) == 1 and roles(agent, "s") == ["user", "assistant"]
    assert [r["session_id"] for r in agent.list_runs()] == ["s"] and no_run_is_left_running(agent)
