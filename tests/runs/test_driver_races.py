"""Races between drivers of runs in one process, and runs that must be stopped or resumed from anywhere.

A driver is one start, resume or close of a run. Its claims carry a token of its own, so two
drivers in one process race exactly as two processes do (issue 30, invariants 1 and 2).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry, run_state
from omnisync.errors import RunConflictError, RunStateError, SessionBusyError
from helpers.agent_helpers import LOCAL_MODEL, echo
from helpers.backend_routers import BACKENDS, open_router
from helpers.fake_http import completion, install
from helpers import backends
from helpers.slow_model import SlowModel

TRIALS = 100
TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


def approval_agent(router, name, ran):
    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays once per approval."""
        ran.append(amount)
        time.sleep(0.005)  # long enough for the other driver to try its claim meanwhile
        return "paid"

    return OmniCoreAgent(name=name, system_instruction="You are a test.", model_config=LOCAL_MODEL, memory_router=router, local_tools=tools)


def pay_model(body):
    last = body["messages"][-1]
    if last["role"] == "tool":
        return completion("done")
    return completion(None, [{"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function", "function": {"name": "pay", "arguments": '{"amount": 5}'}}])


def test_two_resumes_of_one_approved_run_in_one_process_run_its_tool_once(router, monkeypatch):
    adapter = install(monkeypatch, pay_model)
    ran: list[int] = []
    agent = approval_agent(router, f"races-{uuid.uuid4().hex[:8]}", ran)
    outcomes = {"completed": 0, "conflict": 0}  # noted for a failure's message
    for trial in range(TRIALS):
        paused = agent.run("pay 5", session_id=f"s{trial}")
        call_id = paused["approvals"][0]["id"]
        agent.resolve_approval(paused["run_id"], call_id, approved=True)
        before = len(ran)
        start = threading.Barrier(2)
        results: list[object] = []

        def resume():
            start.wait()
            try:
                results.append(agent.resume(paused["run_id"])["status"])
            except (RunConflictError, RunStateError) as exc:  # the loser: it claimed nothing, ran nothing
                results.append(exc)

        threads = [threading.Thread(target=resume) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(ran) - before == 1, f"trial {trial}: the approved tool ran {len(ran) - before} times"
        assert "completed" in results, results
        outcomes["completed"] += results.count("completed")
        outcomes["conflict"] += sum(isinstance(r, (RunConflictError, RunStateError)) for r in results)
        assert agent.get_run(paused["run_id"])["status"] == "completed"
    assert len(ran) == TRIALS and adapter.refused == []


def test_a_live_run_renews_its_lease_while_the_model_is_slow(router, monkeypatch):
    """A run whose model call outlasts run_lease_seconds keeps its session: a run waiting for
    it is refused as busy, it is not taken over as abandoned."""
    monkeypatch.setattr(run_state.keeper, "WATCH_SECONDS", 0.2)
    slow_started = threading.Event()

    def model(body):
        last = body["messages"][-1]["content"]
        if last == "slow":
            slow_started.set()
            time.sleep(2.5)
        return echo(body)

    install(monkeypatch, model)
    agent = OmniCoreAgent(
        name=f"lease-{uuid.uuid4().hex[:8]}",
        system_instruction="You are a test.",
        model_config=LOCAL_MODEL,
        memory_router=router,
        agent_config={"run_lease_seconds": 1, "session_wait_seconds": 2},
    )
    first: list[object] = []
    worker = threading.Thread(target=lambda: first.append(agent.run("slow", session_id="s")))
    worker.start()
    assert slow_started.wait(10)
    with pytest.raises(SessionBusyError, match="is running in it"):
        agent.run("second", session_id="s")  # waits 2 s, over the 1 s lease
    worker.join()
    assert first and first[0]["status"] == "completed", first  # type: ignore[index]
    assert [m["content"] for m in agent.get_session_history("s")] == ["slow", "echo: slow"]


def test_a_stream_left_by_break_frees_its_session_without_the_garbage_collector(router, monkeypatch):
    install(monkeypatch, echo)
    agent = OmniCoreAgent(name=f"drop-{uuid.uuid4().hex[:8]}", system_instruction="You are a test.", model_config=LOCAL_MODEL, memory_router=router)
    gc.disable()
    try:
        for _event in agent.stream("first", session_id="s"):
            break
        result = agent.run("second", session_id="s", on_busy="raise")
    finally:
        gc.enable()
    assert result["status"] == "completed"
    statuses = sorted(r["status"] for r in agent.list_runs())
    assert statuses == ["cancelled", "completed"]


def test_a_paused_run_is_refused_at_once_without_saying_it_waited(monkeypatch):
    install(monkeypatch, pay_model)
    agent = approval_agent(None, "busy", [])
    paused = agent.run("pay 5", session_id="s")
    started = time.monotonic()
    with pytest.raises(SessionBusyError) as busy:
        agent.run("again", session_id="s")
    assert time.monotonic() - started < 5
    assert "waited" not in str(busy.value) and f"cancel_run({paused['run_id']!r})" in str(busy.value)


def test_a_busy_session_names_what_helps(monkeypatch):
    release = threading.Event()

    def model(body):
        if body["messages"][-1]["content"] == "hold":
            release.wait(10)
        return echo(body)

    install(monkeypatch, model)
    agent = OmniCoreAgent(
        name="busy-live", system_instruction="You are a test.", model_config=LOCAL_MODEL, agent_config={"session_wait_seconds": 0}
    )
    holder = threading.Thread(target=agent.run, args=("hold",), kwargs={"session_id": "s"})
    holder.start()
    try:
        deadline = time.monotonic() + 10
        while not agent.list_runs(status="running") and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(SessionBusyError) as busy:
            agent.run("other", session_id="s")
    finally:
        release.set()
        holder.join()
    message = str(busy.value)
    assert "cancel_run(" in message and "session_wait_seconds" in message and busy.value.run_id in message


# --- across processes: a slow streaming model on loopback, a worker that drives a run ----------


def shared_store(kind: str, tmp_path: Path) -> tuple[str, str]:
    if kind == "sqlite":
        return "sql", f"sqlite:///{tmp_path / 'shared.db'}"
    if kind == "postgres":
        return "sql", backends.postgres_url()
    if kind == "redis_cluster":
        return "redis", backends.redis_cluster_url()
    if kind == "mongodb":
        return "mongodb", backends.mongodb_uri()
    return "redis", backends.redis_url()


CROSS_PROCESS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.backend("postgres")),
    pytest.param("redis", marks=pytest.mark.backend("redis")),
    pytest.param("redis_cluster", marks=pytest.mark.backend("redis_cluster")),
    pytest.param("mongodb", marks=pytest.mark.backend("mongodb")),
]


def worker(kind: str, url: str, name: str, model_url: str, action: str, lease: int = 300) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.Popen(
        [sys.executable, str(TESTS / "helpers" / "race_worker.py"), kind, url, name, model_url, action, str(lease)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait(10)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def wait_for_running(agent: OmniCoreAgent, seconds: float = 20) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        running = agent.list_runs(status="running")
        if running:
            return running[0]["run_id"]
        time.sleep(0.05)
    raise AssertionError("the worker's run never started")


@pytest.mark.parametrize("kind", CROSS_PROCESS)
def test_cancel_reaches_a_run_streamed_in_another_process(kind, tmp_path):
    store_kind, url = shared_store(kind, tmp_path)
    name = f"cancel-{uuid.uuid4().hex[:8]}"
    model = SlowModel()
    proc = worker(store_kind, url, name, model.url, "stream")
    try:
        with MemoryRouter(store_kind, url=url) as router:
            agent = OmniCoreAgent(name=name, system_instruction="You are a test.", model_config={**LOCAL_MODEL, "base_url": model.url}, memory_router=router)
            run_id = wait_for_running(agent)
            time.sleep(0.5)  # some text streamed
            asked = time.monotonic()
            result = agent.cancel_run(run_id, reason="enough")
            took = time.monotonic() - asked
            out, err = proc.communicate(timeout=30)
            assert result["status"] == "cancelled", (result, err)
            assert took < 5, took
            ended = json.loads(out.strip().splitlines()[-1])
            assert ended["status"] == "cancelled" and ended["response"].startswith("w0 "), ended
            history = agent.get_session_history("s", include_inactive=True)
            assert [m["role"] for m in history] == ["user", "assistant"] and history[1]["partial"]
            assert agent.get_run(run_id)["error"].startswith("cancelled: enough")
    finally:
        stop(proc)
        model.shutdown()
        model.server_close()


@pytest.mark.parametrize("kind", CROSS_PROCESS)
def test_a_run_killed_during_its_first_model_call_resumes_elsewhere(kind, tmp_path):
    store_kind, url = shared_store(kind, tmp_path)
    name = f"killed-{uuid.uuid4().hex[:8]}"
    model = SlowModel(hang=True)
    proc = worker(store_kind, url, name, model.url, "run", lease=1)
    try:
        with MemoryRouter(store_kind, url=url) as router:
            agent = OmniCoreAgent(name=name, system_instruction="You are a test.", model_config={**LOCAL_MODEL, "base_url": model.url}, memory_router=router)
            run_id = wait_for_running(agent)
            deadline = time.monotonic() + 10
            while model.requests == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.kill()
            proc.wait(10)
            time.sleep(1.5)  # its lease runs out
            result = agent.resume(run_id)
            assert result["status"] == "completed" and result["response"] == "answered again"
            assert [m["content"] for m in agent.get_session_history("s")] == ["hello", "answered again"]
    finally:
        stop(proc)
        model.shutdown()
        model.server_close()


# --- a clear is fenced like any other write ---------------------------------------------------


@pytest.mark.parametrize("when", ["during the model call", "during a tool"])
def test_what_a_run_would_write_after_its_session_is_cleared_never_lands(router, monkeypatch, when):
    entered, release = threading.Event(), threading.Event()
    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """The weather in a city."""
        if when == "during a tool":
            entered.set()
            release.wait(10)
        return f"sunny in {city}"

    def model(body):
        last = body["messages"][-1]
        if last["role"] == "tool":
            return completion("it is sunny")
        if when == "during the model call":
            entered.set()
            release.wait(10)
            return completion("a late answer")
        return completion(None, [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Paris"}'}}])

    install(monkeypatch, model)
    agent = OmniCoreAgent(name=f"fence-{uuid.uuid4().hex[:8]}", system_instruction="You are a test.", model_config=LOCAL_MODEL, memory_router=router, local_tools=tools)
    outcome: list[object] = []

    def drive():
        try:
            outcome.append(agent.run("weather?", session_id="s"))
        except RunConflictError as exc:
            outcome.append(exc)

    runner = threading.Thread(target=drive)
    runner.start()
    assert entered.wait(10)
    agent.clear_session_history("s")
    release.set()
    runner.join(20)
    assert len(outcome) == 1 and isinstance(outcome[0], RunConflictError), outcome
    assert "its session was cleared" in str(outcome[0])
    assert agent.get_session_history("s", include_inactive=True) == []
    [record] = agent.list_runs()
    assert (record["status"], record["error"]) == ("cancelled", "cancelled: its session was cleared while it ran")


def test_a_stream_left_between_replies_has_the_cancelled_result(monkeypatch):
    from omnisync.run_events import ToolCall

    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    def model(body):
        if body["messages"][-1]["role"] == "tool":
            return completion("sunny it is")
        return completion(None, [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Paris"}'}}])

    install(monkeypatch, model)
    agent = OmniCoreAgent(name="left", system_instruction="You are a test.", model_config=LOCAL_MODEL, local_tools=tools)
    with agent.stream("weather?", session_id="s") as stream:
        for event in stream:
            if isinstance(event, ToolCall):
                break
    assert stream.result["status"] == "cancelled" and stream.result["run_id"] == stream.run_id
