"""Many workers, one store: separate ``omnisync serve`` processes on one PostgreSQL, Redis or
MongoDB store share every run, its approvals, resumes and events; a worker killed mid-run
leaves a run another resumes after its lease."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import requests
from helpers.backends import forget_agent, fresh_database, mongodb_uri, postgres_url, redis_url
from helpers.serve_servers import scripted_model_server
from test_serve_cli import free_port, stop, wait_until_up
from test_serve_http import story

ROOT = Path(__file__).parents[2]
APPROVE = 'use delete_file({"path": "/tmp/x"}) use slow({"seconds": 1})'


@pytest.fixture(scope="module")
def model_url():
    with scripted_model_server() as url:
        yield url


@contextmanager
def shared_store(backend: str) -> Iterator[dict[str, str]]:
    """The environment that points every worker at one store of this test's own."""
    agent = f"workers-{uuid.uuid4().hex[:8]}"
    if backend == "postgres":
        with fresh_database(postgres_url()) as url:
            yield {"SERVED_KIND": "sql", "SERVED_URL": url, "SERVED_AGENT": agent}
        return
    if backend == "redis":
        try:
            yield {"SERVED_KIND": "redis", "SERVED_URL": redis_url(), "SERVED_AGENT": agent}
        finally:
            forget_agent("redis", redis_url(), agent)
        return
    import pymongo

    name = f"omnisync_test_{uuid.uuid4().hex[:12]}"
    try:
        yield {"SERVED_KIND": "mongodb", "SERVED_URL": mongodb_uri(), "SERVED_AGENT": agent, "MONGODB_DB_NAME": name}
    finally:
        with pymongo.MongoClient(mongodb_uri()) as client:
            client.drop_database(name)


def worker(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}", **env}
    process = subprocess.Popen(
        [sys.executable, "-m", "omnisync.cli", "serve", "helpers.served_worker:agent", "--port", str(port)],
        cwd=ROOT, env=environment, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base, process)
    return process, base


def sse(base: str, method: str, path: str, **options) -> requests.Response:
    headers = {"Accept": "text/event-stream", **options.pop("headers", {})}
    response = requests.request(method, base + path, headers=headers, timeout=60, stream=True, **options)
    assert response.status_code == 200, response.text
    return response


def read_events(response: requests.Response) -> Iterator[tuple[str, str, dict]]:
    """Each (id, event, data) of an SSE response as it arrives."""
    block: list[str] = []
    for line in response.iter_lines(decode_unicode=True):
        if line:
            block.append(line)
            continue
        fields = dict(item.split(": ", 1) for item in block if not item.startswith(":"))
        block = []
        if fields:
            yield fields["id"], fields["event"], json.loads(fields["data"])


def follow(base: str, path: str, into: list, **headers: str) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.extend(read_events(sse(base, "GET", path, headers=headers))), daemon=True)
    thread.start()
    return thread


def assert_complete(replay: list) -> None:
    """Stored ids 1..n, each once, and the run's end last."""
    assert [int(id_) for id_, _, _ in replay] == list(range(1, len(replay) + 1))
    assert replay[-1][1] == "run_finished"


@pytest.mark.parametrize("backend", ["postgres", "redis", "mongodb"])
def test_a_run_paused_on_one_worker_is_approved_resumed_and_followed_across_two(backend, model_url):
    with shared_store(backend) as env, ExitStack() as workers:
        env["SERVED_MODEL_URL"], env["SERVED_SLOW"] = model_url, "1"
        first, one = worker(env)
        workers.callback(stop, first)
        second, two = worker(env)
        workers.callback(stop, second)
        agent = env["SERVED_AGENT"]

        started = list(read_events(sse(one, "POST", f"/agents/{agent}/sessions/s/runs", json={"message": APPROVE})))
        assert started[-1][1] == "run_paused"
        run_id = started[-1][2]["run_id"]
        [pending] = started[-1][2]["result"]["approvals"]

        approved = requests.post(f"{two}/agents/{agent}/runs/{run_id}/approvals", json={"call_id": pending["id"], "approved": True}, timeout=30)
        assert approved.status_code == 200, approved.text
        resumed_response = sse(two, "POST", f"/agents/{agent}/runs/{run_id}/resume", json={})
        resumed_events = read_events(resumed_response)
        resumed = [next(resumed_events)]  # stored before it was sent: a follower from the pause finds it
        followed: list = []
        follower = follow(one, f"/agents/{agent}/runs/{run_id}/events", followed, **{"Last-Event-ID": started[-1][0]})
        resumed += list(resumed_events)
        follower.join(60)
        assert not follower.is_alive() and followed, "the follower on the first worker did not see the run end"
        assert story(followed) == story(resumed) and followed[-1][1] == "run_finished"
        assert [e for e in followed if e[1] != "text_delta"] == [e for e in resumed if e[1] != "text_delta"]

        for base in (one, two):  # either worker replays the whole run, every event once
            replay = list(read_events(sse(base, "GET", f"/agents/{agent}/runs/{run_id}/events")))
            assert_complete(replay)
            assert story(replay) == story(started + resumed)
        done = requests.get(f"{one}/agents/{agent}/runs/{run_id}", timeout=30).json()
        assert done["status"] == "completed"


@pytest.mark.parametrize("backend", ["postgres", "redis", "mongodb"])
def test_a_worker_killed_mid_run_leaves_a_run_another_resumes_after_its_lease(backend, model_url):
    with shared_store(backend) as env, ExitStack() as workers:
        env["SERVED_MODEL_URL"], env["SERVED_LEASE"] = model_url, "2"
        victim, one = worker({**env, "SERVED_SLOW": "1"})
        workers.callback(lambda: victim.poll() is None and stop(victim))
        survivor, two = worker(env)  # its "slow" returns at once
        workers.callback(stop, survivor)
        agent = env["SERVED_AGENT"]

        response = sse(one, "POST", f"/agents/{agent}/sessions/s/runs", json={"message": 'use slow({"seconds": 600})'})
        events = read_events(response)
        first = next(events)
        assert first[:2] == ("1", "run_started") and first[2]["run_id"] == response.headers["Omnisync-Run-Id"]
        run_id = first[2]["run_id"]
        assert next(events)[:2] == ("2", "tool_call")
        os.kill(victim.pid, signal.SIGKILL)  # in the middle of the slow tool
        victim.communicate(timeout=30)
        response.close()  # its server is gone; an open socket left to the collector fails another test

        followed: list = []
        follower = follow(two, f"/agents/{agent}/runs/{run_id}/events", followed)
        time.sleep(0.5)
        assert follower.is_alive()  # the run is running, on no worker: followed until someone resumes it
        deadline = time.monotonic() + 30
        while True:
            resumed = requests.post(f"{two}/agents/{agent}/runs/{run_id}/resume", json={}, timeout=60)
            if resumed.status_code != 409:
                break
            assert "lease" in resumed.json()["error"]["message"] and time.monotonic() < deadline
            time.sleep(0.5)
        assert resumed.status_code == 200 and resumed.json()["status"] == "completed", resumed.text
        follower.join(60)
        assert not follower.is_alive()
        assert_complete(followed)
        assert followed[0] == first
        results = [data for _, name, data in followed if name == "tool_result"]
        assert [r["content"] for r in results] == ["slept 600.0"]  # run once, by the survivor
        assert followed == list(read_events(sse(two, "GET", f"/agents/{agent}/runs/{run_id}/events")))


@pytest.mark.parametrize("backend", ["postgres", "redis", "mongodb"])
def test_a_cancel_sent_to_another_worker_stops_the_run_where_it_is_driven(backend):
    """Issue 30: a cancel sent to a worker other than the one driving the run answered 409 and
    the run completed; now it is a request the driving worker reads, and the run ends cancelled."""
    from helpers.slow_model import SlowModel

    model = SlowModel()  # streams a word every 0.1 s for a minute
    try:
        with shared_store(backend) as env, ExitStack() as workers:
            env["SERVED_MODEL_URL"] = model.url
            driving, one = worker(env)
            workers.callback(stop, driving)
            other, two = worker(env)
            workers.callback(stop, other)
            agent = env["SERVED_AGENT"]
            response = sse(one, "POST", f"/agents/{agent}/sessions/s/runs", json={"message": "hello"})
            workers.callback(response.close)
            events = read_events(response)
            first = next(events)
            run_id = first[2]["run_id"]
            assert next(events)[1] == "text_delta"  # the model is streaming on worker one
            asked = time.monotonic()
            cancelled = requests.post(f"{two}/agents/{agent}/runs/{run_id}/cancel", json={"reason": "enough"}, timeout=30)
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled", cancelled.text
            assert time.monotonic() - asked < 10
            names = [name for _, name, _ in events]
            assert names[-1] == "run_finished"
            record = requests.get(f"{two}/agents/{agent}/runs/{run_id}", timeout=30).json()
            assert record["status"] == "cancelled" and record["error"].startswith("cancelled: enough")
    finally:
        model.shutdown()
        model.server_close()
