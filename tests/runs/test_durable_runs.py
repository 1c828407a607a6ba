"""Durable runs across OS processes: pause in one, resume in another; a crash mid-run; a resume race."""

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from omnisync import MemoryRouter
from omnisync.run_record import RunRecord
from helpers.backends import forget_agent, mongodb_uri, pgbouncer_url, postgres_url, redis_cluster_url, redis_url
from helpers.tool_agents import tool_agent

ROOT = Path(__file__).resolve().parents[2]
APPROVAL = 'Clean up: use delete_file({"path": "/tmp/old.log"})'
CRASH = 'Weather, then wait: use lookup({"city": "Paris"}) use hang({"seconds": 1})'


NETWORKED = {
    "postgres": ("sql", postgres_url),
    "pgbouncer": ("sql", pgbouncer_url),
    "redis": ("redis", redis_url),
    "redis_cluster": ("redis", redis_cluster_url),
}


@pytest.fixture(params=["sqlite", "postgres", "pgbouncer", "redis", "redis_cluster", "mongodb"])
def store(request, tmp_path, monkeypatch):
    """(kind, url) of a store several processes reach."""
    if request.param == "sqlite":
        yield "sql", f"sqlite:///{tmp_path / 'memory.db'}"
        return
    if request.param in NETWORKED:
        kind, find_url = NETWORKED[request.param]
        yield kind, find_url()
        return
    uri = mongodb_uri()
    database = f"omnisync_durable_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("MONGODB_DB_NAME", database)  # the worker processes inherit it
    yield "mongodb", uri
    import pymongo

    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000) as client:
        client.drop_database(database)


@pytest.fixture
def agent_name(request):
    name = f"durable-{uuid.uuid4().hex[:8]}"
    yield name
    if "store" in request.fixturenames:
        forget_agent(*request.getfixturevalue("store"), name)


def worker(store, agent_name, ledger, action, argument, cassette, env=None, wait=True):
    command = [
        sys.executable, "-m", "omnisync.testing", "--cassette", str(ROOT / "cassettes" / cassette),
        str(ROOT / "tests" / "helpers" / "durable_worker.py"), store[0], store[1], agent_name, str(ledger), action, argument,
    ]
    environment = {**os.environ, **(env or {})}
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return process
    return finish(process)


def finish(process):
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_pause_in_one_process_resume_in_another(store, agent_name, tmp_path):
    ledger = tmp_path / "ledger"
    paused = worker(store, agent_name, ledger, "start", APPROVAL, "handwritten/approval.yaml")["result"]
    assert paused["status"] == "awaiting_approval" and lines(ledger) == []
    done = worker(store, agent_name, ledger, "approve_resume", paused["run_id"], "handwritten/approval.yaml")["result"]
    assert done["status"] == "completed" and done["response"] == "Done: deleted /tmp/old.log"
    assert lines(ledger) == ["delete_file /tmp/old.log"]
    with MemoryRouter(store[0], url=store[1]) as router:
        agent = tool_agent(router, name=agent_name)
        assert [m["role"] for m in agent.get_session_history("durable")] == ["user", "assistant", "tool", "assistant"]
        assert agent.get_run(paused["run_id"])["status"] == "completed"
        agent.clear_session_history()


def test_two_processes_resuming_one_run_one_proceeds(store, agent_name, tmp_path):
    ledger = tmp_path / "ledger"
    paused = worker(store, agent_name, ledger, "start", APPROVAL, "handwritten/approval.yaml")["result"]
    with MemoryRouter(store[0], url=store[1]) as router:
        agent = tool_agent(router, name=agent_name)
        agent.resolve_approval(paused["run_id"], paused["approvals"][0]["id"], approved=True)
    racers = [worker(store, agent_name, ledger, "resume", paused["run_id"], "handwritten/approval.yaml", wait=False) for _ in range(2)]
    outcomes = [finish(process) for process in racers]
    winners = [o for o in outcomes if "result" in o]
    losers = [o for o in outcomes if "error" in o]
    assert len(winners) == 1 and winners[0]["result"]["status"] == "completed", outcomes
    assert len(losers) == 1 and losers[0]["error"] in ("RunConflictError", "RunStateError"), losers
    assert lines(ledger) == ["delete_file /tmp/old.log"]


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_killed_run_is_resumed_after_its_lease_without_repeating_a_call(backend, agent_name, tmp_path):
    store = ("sql", f"sqlite:///{tmp_path / 'memory.db'}")
    _crash_and_resume(store, agent_name, tmp_path)


@pytest.mark.parametrize("backend", ["postgres", "pgbouncer", "redis_cluster"])
def test_a_killed_run_is_resumed_on_a_shared_server(backend, agent_name, tmp_path):
    kind, find_url = NETWORKED[backend]
    try:
        _crash_and_resume((kind, find_url()), agent_name, tmp_path)
    finally:
        forget_agent(kind, find_url(), agent_name)


def _victim_inside_its_second_tool(store, agent_name, ledger, env):
    """A worker process running CRASH, returned once its first tool's result is stored and it
    hangs inside the second (``env`` has HANG=1)."""
    victim = worker(store, agent_name, ledger, "start", CRASH, "handwritten/crash_resume.yaml", env=env, wait=False)
    deadline = time.monotonic() + 60
    while lines(ledger) != ["lookup Paris"]:
        assert time.monotonic() < deadline and victim.poll() is None, victim.stderr.read() if victim.poll() is not None else "timeout"
        time.sleep(0.1)
    with MemoryRouter(store[0], url=store[1]) as router:
        agent = tool_agent(router, name=agent_name)
        deadline = time.monotonic() + 30
        while not any(m["role"] == "tool" for m in agent.get_session_history("durable")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    return victim


def _crash_and_resume(store, agent_name, tmp_path):
    ledger = tmp_path / "ledger"
    victim = _victim_inside_its_second_tool(store, agent_name, ledger, {"HANG": "1", "LEASE": "2"})
    with MemoryRouter(store[0], url=store[1]) as router:
        agent = tool_agent(router, name=agent_name)
        os.kill(victim.pid, signal.SIGKILL)
        victim.communicate(timeout=30)
        [running] = agent.list_runs(status="running")
        run_id = running["run_id"]
    early = worker(store, agent_name, ledger, "resume", run_id, "handwritten/crash_resume.yaml", env={"LEASE": "2"})
    if "error" in early:  # the lease may still be held
        assert early["error"] == "RunConflictError" and "lease" in early["message"]
        time.sleep(2.5)
        late = worker(store, agent_name, ledger, "resume", run_id, "handwritten/crash_resume.yaml", env={"LEASE": "2"})
    else:
        late = early
    assert late["result"]["status"] == "completed"
    assert lines(ledger) == ["lookup Paris", "hang"]  # lookup ran once, before the kill


def test_a_busy_session_is_refused_across_processes_and_a_killed_run_is_closed_by_the_next_run(
    store, agent_name, tmp_path, monkeypatch
):
    from datetime import timedelta

    from omnisync import run_state
    from omnisync.messages import utcnow
    from omnisync.runner import ABANDONED_CALL
    from helpers.fake_http import completion, install

    ledger = tmp_path / "ledger"
    victim = _victim_inside_its_second_tool(store, agent_name, ledger, {"HANG": "1"})
    with MemoryRouter(store[0], url=store[1]) as router:
        agent = tool_agent(router, name=agent_name)
        refused = worker(store, agent_name, ledger, "start", "hello", "handwritten/crash_resume.yaml", env={"ON_BUSY": "raise"})
        assert refused["error"] == "SessionBusyError" and "is running in it" in refused["message"]
        os.kill(victim.pid, signal.SIGKILL)
        victim.communicate(timeout=30)
        [running] = agent.list_runs(status="running")
        record = run_state.load(router.store, agent_name, running["run_id"])  # its lease runs out
        router.store.save_run(record.evolve(lease_until=utcnow() - timedelta(minutes=1)), expected_version=record.version)
        adapter = install(monkeypatch, [completion("hello again")])
        assert agent.run("hello", session_id="durable")["response"] == "hello again"
        sent = adapter.sent[0]["messages"]
        assert adapter.refused == [] and sent[-2]["role"] == "tool" and sent[-2]["content"] == ABANDONED_CALL
        assert agent.get_run(running["run_id"])["status"] == "failed" and agent.list_runs(status="running") == []
        assert lines(ledger) == ["lookup Paris"]  # hang never finished, and nothing ran it again
        agent.clear_session_history()


def test_two_processes_running_one_session_with_tools_never_interleave(store, agent_name):
    from helpers.fake_http import tool_sequence_problem

    command = [sys.executable, str(ROOT / "tests" / "helpers" / "session_worker.py"), store[0], store[1], agent_name, "shared", "4"]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [finish(process) for process in processes]
    assert [o["errors"] for o in outcomes] == [[], []] and [o["refused"] for o in outcomes] == [[], []]
    assert [o["completed"] for o in outcomes] == [4, 4]
    with MemoryRouter(store[0], url=store[1]) as router:
        history = [m.to_chat() for m in router.store.history(agent_name, "shared")]
    assert len(history) == 2 * 4 * 4 and tool_sequence_problem(history) is None


def test_crash_scenario_in_one_process(omnisync_cassette, tmp_path):
    """The same run uninterrupted: the cassette the crash test replays."""
    ledger = tmp_path / "ledger"
    agent = tool_agent(ledger=ledger, name="crash")
    with omnisync_cassette("handwritten/crash_resume"):
        result = agent.run(CRASH, session_id="durable")
    assert result["response"] == 'Done: sunny in Paris | {"waited": 1}'
    assert lines(ledger) == ["lookup Paris", "hang"]


def test_run_record_size_does_not_grow_with_the_session(monkeypatch):
    from helpers.agent_helpers import echo, make_agent
    from helpers.fake_http import install

    install(monkeypatch, echo)
    agent = make_agent()
    sizes = []
    for count in (5, 60):
        session = f"s{count}"
        for i in range(count):
            last = agent.run(f"message number {i:04d}", session_id=session)
        record = RunRecord.from_record(agent.get_run(last["run_id"]))
        sizes.append(len(record.to_json()))
    assert abs(sizes[1] - sizes[0]) <= 16, sizes


def test_a_run_that_died_before_writing_anything_cannot_be_resumed_and_is_marked_failed(monkeypatch):
    from datetime import timedelta

    from omnisync.errors import RunStateError
    from omnisync.messages import utcnow
    from helpers.agent_helpers import make_agent

    agent = make_agent()
    store = agent.memory_router.store
    past = utcnow() - timedelta(minutes=10)
    store.save_run(RunRecord(run_id="run_dead", agent=agent.name, session_id="s", lease_until=past, created_at=past), None)
    with pytest.raises(RunStateError, match="run the message again"):
        agent.resume("run_dead")
    assert agent.get_run("run_dead")["status"] == "failed"
