"""The server's edge under attack: what a server without tokens accepts, scopes per served entry,
what unauthenticated routes say, client strings the store cannot take, connections that never
finish, and the links and results a client is given."""

from __future__ import annotations

import base64
import json
import logging
import socket
import threading
import time
from pathlib import Path

import pytest
import requests
from helpers.backend_routers import BACKENDS, open_router
from helpers.serve_servers import scripted_model_server, uvicorn_server
from test_serve_cli import free_port, omnisync, stop, wait_until_up
from test_serve_http import GATE, make_agent

from omnisync import MemoryRouter, OmniCoreAgent
from omnisync.errors import ConfigurationError, StoreError
from omnisync.remote import RemoteAgent
from omnisync.run_events import ToolCall
from omnisync.serve import create_app

ROOT = Path(__file__).parents[2]
TOKEN = "token-of-the-edge-tests-0123456789"
ALLOWED = "https://app.example"
LEAKS = ("SELECT", "INSERT", "sqlalchemy", "psycopg", "[parameters", "password", "127.0.0.1", "/tmp", "memory.db")


@pytest.fixture(scope="module")
def model_url():
    with scripted_model_server() as url:
        yield url


@pytest.fixture(scope="module")
def open_server(model_url):
    """A server started without tokens (loopback only), one browser origin allowed."""
    agent = make_agent("a", model_url, None)
    with uvicorn_server(create_app(agent, cors_origins=[ALLOWED])) as base:
        yield base, agent
    agent.cleanup()


@pytest.fixture
def gate():
    GATE.clear()
    yield GATE
    GATE.set()


def port_of(base: str) -> str:
    return base.rsplit(":", 1)[1]


def nothing_kept(agent: OmniCoreAgent, session: str) -> bool:
    return agent.get_session_history(session) == [] and agent.list_runs(session_id=session) == []


# --- 1. a server without tokens answers loopback pages only --------------------------------


def test_a_cross_site_text_plain_post_is_refused_and_plants_nothing(open_server):
    base, agent = open_server
    for headers in ({"Content-Type": "text/plain", "Origin": "https://evil.example"}, {"Content-Type": "text/plain"}, {}):
        response = requests.post(base + "/agents/a/sessions/planted/runs", data='{"message": "planted"}', headers=headers, timeout=30)
        assert 400 <= response.status_code < 500, (headers, response.text)
        assert "Content-Type" in response.json()["error"]["message"]
    cancel = requests.post(base + "/agents/a/runs/run_x/cancel", headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=30)
    assert cancel.status_code == 415
    assert nothing_kept(agent, "planted")


def test_a_foreign_host_is_refused_on_every_route_and_changes_nothing(open_server):
    base, agent = open_server
    agent.run("mine", session_id="private")
    rebound = {"Host": f"evil.example:{port_of(base)}"}
    read = requests.get(base + "/agents/a/sessions/private/messages", headers=rebound, timeout=30)
    assert read.status_code == 421 and "mine" not in read.text
    write = requests.post(base + "/agents/a/sessions/rebound/runs", json={"message": "planted"}, headers=rebound, timeout=30)
    assert write.status_code == 421 and nothing_kept(agent, "rebound")
    assert requests.get(base + "/agents", headers={"Host": "127.0.0.1.evil.example"}, timeout=30).status_code == 421


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "LOCALHOST"])
def test_loopback_hosts_with_any_port_and_json_bodies_are_served(open_server, host):
    base, agent = open_server
    for with_port in (f"{host}:{port_of(base)}", host, f"{host}:1"):
        response = requests.post(base + "/agents/a/sessions/loop/runs", json={"message": "hi"}, headers={"Host": with_port}, timeout=30)
        assert response.status_code == 200, (with_port, response.text)


def test_an_allowed_origin_may_post_text_plain(open_server):
    base, _ = open_server
    response = requests.post(
        base + "/agents/a/sessions/allowed/runs", data='{"message": "hi"}', headers={"Content-Type": "text/plain", "Origin": ALLOWED}, timeout=30
    )
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == ALLOWED


# --- 2. scopes per served entry ------------------------------------------------------------


def test_two_entries_whose_agents_share_a_name_and_a_store_are_refused_at_start(model_url):
    router = MemoryRouter("in_memory")
    one, two = make_agent("shared", model_url, router), make_agent("shared", model_url, router)
    with pytest.raises(ConfigurationError, match="'one' and 'two'.*name.*shared") as refused:
        create_app({"one": one, "two": two}, tokens={TOKEN: ["one"]})
    assert "different name" in str(refused.value)
    apart = make_agent("shared", model_url, None)  # a store of its own: nothing to cross
    create_app({"one": one, "two": apart}, tokens={TOKEN: ["one"]})
    for agent in (one, two, apart):
        agent.cleanup()
    router.close()


def test_a_token_of_one_entry_never_reads_another_entrys_sessions(model_url):
    router = MemoryRouter("in_memory")
    one, two = make_agent("one", model_url, router), make_agent("two", model_url, router)
    two.run("secret of two", session_id="s")
    with uvicorn_server(create_app({"one": one, "two": two}, tokens={TOKEN: ["one"]})) as base:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert requests.get(base + "/agents/one/sessions/s/messages", headers=auth, timeout=30).json()["messages"] == []
        assert requests.get(base + "/agents/one/sessions", headers=auth, timeout=30).json()["sessions"] == []
        assert requests.get(base + "/agents/two/sessions/s/messages", headers=auth, timeout=30).status_code == 404
    one.cleanup(), two.cleanup(), router.close()


# --- 3. unauthenticated routes say up or down ----------------------------------------------


def test_readiness_says_down_and_nothing_about_the_database(model_url):
    router = MemoryRouter("sql", url="postgresql://secretuser:hunter2@127.0.0.1:1/secretdb?connect_timeout=2")
    agent = make_agent("a", model_url, router)
    with uvicorn_server(create_app(agent)) as base:
        response = requests.get(base + "/readyz", timeout=30)
        assert response.status_code == 503 and response.json() == {"status": "unavailable"}
        for secret in ("secretuser", "secretdb", "127.0.0.1", ":1", "hunter2", "postgres"):
            assert secret not in response.text
        assert requests.get(base + "/healthz", timeout=30).json() == {"status": "ok"}
    agent.cleanup(), router.close()


# --- 4. the edge refuses what a store cannot take -----------------------------------------


def cursor(*position: str) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


BAD_STRINGS = [
    ("GET", "/agents/a/sessions/x%00y/messages", {}, "session"),
    ("POST", "/agents/a/sessions/x%00y/runs", {"json": {"message": "hi"}}, "session"),
    ("DELETE", "/agents/a/sessions/x%00y", {}, "session"),
    ("GET", "/agents/a/sessions/x%00y/usage", {}, "session"),
    ("GET", "/agents/a/runs/run%00x", {}, "run_id"),
    ("POST", "/agents/a/runs/run%00x/resume", {"json": {}}, "run_id"),
    ("POST", "/agents/a/runs/run%00x/cancel", {"json": {}}, "run_id"),
    ("GET", "/agents/a/runs/run%00x/events", {}, "run_id"),
    ("GET", "/agents/a/runs?session=x%00y", {}, "session"),
    ("GET", "/agents/a/runs?session=" + "s" * 256, {}, "session"),
    ("GET", "/agents/a/runs/" + "r" * 256, {}, "run_id"),
    ("GET", "/agents/a/sessions?cursor=" + cursor("x\x00y"), {}, "cursor"),
    ("GET", "/agents/a/sessions?cursor=" + cursor("\ud800"), {}, "cursor"),
    ("GET", "/agents/a/sessions?cursor=" + cursor("s" * 300), {}, "cursor"),
    ("GET", "/agents/a/sessions/s/messages?cursor=" + cursor("1" * 40), {}, "cursor"),
    ("GET", "/agents/a/sessions/s/messages?cursor=" + cursor("1\x00"), {}, "cursor"),
    ("GET", "/agents/a/runs?cursor=" + cursor("2026-01-01T00:00:00+00:00/run\x00"), {}, "cursor"),
    ("GET", "/agents/a/runs?cursor=" + cursor("9" * 40), {}, "cursor"),
    ("POST", "/agents/a/runs/run_x/approvals", {"json": {"call_id": "c\x00", "approved": True}}, "call_id"),
    ("POST", "/agents/a/runs/run_x/approvals", {"json": {"call_id": "c\ud800", "approved": True}}, "call_id"),
    ("POST", "/agents/a/sessions/s/runs", {"json": {"message": "hi"}, "headers": {"Idempotency-Key": "k\x7f"}}, "Idempotency-Key"),
    ("POST", "/agents/a/sessions/s/runs", {"data": '{"message": ' + "[" * 1000 + "]" * 1000 + "}"}, "nested"),
    ("POST", "/agents/a/sessions/s/runs", {"data": '{"message": ' + "[" * 100_000 + "]" * 100_000 + "}"}, "nested"),
]


@pytest.fixture(params=BACKENDS)
def backend_server(request, model_url, tmp_path, monkeypatch):
    for router in open_router(request.param, tmp_path, monkeypatch):
        agent = make_agent("a", model_url, router)
        with uvicorn_server(create_app(agent, tokens={TOKEN: ["a"]})) as base:
            yield base, agent
        agent.cleanup()


def test_strings_the_store_cannot_take_are_a_4xx_naming_the_field_before_any_store_call(backend_server):
    base, agent = backend_server
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for method, path, options, field in BAD_STRINGS:
        options = dict(options)
        headers = {**auth, **options.pop("headers", {})}
        if "data" in options:
            headers["Content-Type"] = "application/json"
        response = requests.request(method, base + path, headers=headers, timeout=30, **options)
        assert 400 <= response.status_code < 500, (method, path[:80], response.text[:300])
        assert field in response.json()["error"]["message"], (path[:80], response.text[:300])
        for leak in LEAKS:
            assert leak not in response.text, (path[:80], leak)
    assert agent.list_runs() == [] and agent.get_session_history("s") == []


def test_served_agent_names_the_store_cannot_take_are_refused_at_start(model_url):
    agent = make_agent("a", model_url, None)
    for bad in ("a\x00", "a\ud800"):
        with pytest.raises(ConfigurationError, match="name"):
            create_app({bad: agent})
    agent.cleanup()


def test_a_store_failure_is_a_generic_5xx_with_a_request_id_and_its_cause_is_logged(model_url, monkeypatch, caplog):
    agent = make_agent("a", model_url, None)
    secret = "(psycopg.errors.Bad) SELECT * FROM runs WHERE id = %(id)s [parameters: {'id': 'x'}] (postgresql://omni:hunter2@127.0.0.1/db)"

    def failing(*args, **kwargs):
        raise StoreError(secret)

    monkeypatch.setattr(agent, "get_session_usage", failing)
    with uvicorn_server(create_app(agent)) as base, caplog.at_level(logging.ERROR, logger="omnisync"):
        response = requests.get(base + "/agents/a/sessions/s/usage", timeout=30)
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["type"] == "StoreError" and error["request_id"] in error["message"]
    for leak in LEAKS + ("omni", "hunter2"):
        assert leak not in response.text
    logged = [r.getMessage() for r in caplog.records if error["request_id"] in r.getMessage()]
    assert len(logged) == 1 and "StoreError: (psycopg.errors.Bad) SELECT" in logged[0] and "Traceback" in logged[0]
    assert "hunter2" not in caplog.text
    agent.cleanup()


# --- 5. idle and slow connections are closed -----------------------------------------------


@pytest.fixture(scope="module")
def served_process(model_url, tmp_path_factory):
    port = free_port()
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", "SERVED_KIND": "in_memory", "SERVED_AGENT": "a", "SERVED_MODEL_URL": model_url}
    process = omnisync("helpers.served_worker:agent", "--port", str(port), "--request-timeout", "1", cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    wait_until_up(base, process)
    yield port
    stop(process)


def closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before it closed the connection; fails if it is still open after ``seconds``."""
    sock.settimeout(seconds)
    received = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            return received
        received += chunk
    raise AssertionError(f"the connection was still open after {seconds} s; received {received[:200]!r}")


@pytest.mark.parametrize(
    "sent",
    [
        b"",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        b"POST /agents/a/sessions/s/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mess",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nab",
    ],
    ids=["nothing", "partial-headers", "short-body", "idle-after-an-answer", "answered-but-its-body-never-comes"],
)
def test_a_connection_that_sends_nothing_partial_headers_or_a_short_body_is_closed(served_process, sent):
    with socket.create_connection(("127.0.0.1", served_process), timeout=5) as sock:
        sock.sendall(sent)
        received = closed_within(sock, 15)
    if sent.startswith(b"POST"):
        assert received.startswith(b"HTTP/1.1 408"), received[:200]
    if sent.startswith(b"GET") and b"\r\n\r\n" in sent:
        assert received.startswith(b"HTTP/1.1 200") and received.count(b"HTTP/1.1") == 1, received[:200]


def test_headers_sent_a_byte_at_a_time_do_not_keep_a_connection_open(served_process):
    with socket.create_connection(("127.0.0.1", served_process), timeout=5) as sock:
        started = time.monotonic()
        for byte in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100:
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # closed by the server: what this test wants
                break
            time.sleep(0.2)
            if time.monotonic() - started > 15:
                raise AssertionError("still open after 15 s of trickled headers")
        closed_within(sock, 15)


# --- 6. CORS exposes the run id ------------------------------------------------------------


def test_cors_exposes_the_run_id_header_to_the_allowed_origin(open_server):
    base, _ = open_server
    response = requests.post(base + "/agents/a/sessions/cors/runs", json={"message": "hi"}, headers={"Origin": ALLOWED}, timeout=30)
    assert response.status_code == 200
    exposed = {name.strip().lower() for name in response.headers["access-control-expose-headers"].split(",")}
    assert {"omnisync-run-id", "location", "preference-applied"} <= exposed


# --- 7. a resume's 202 links follow the run to its end --------------------------------------


def test_the_events_link_of_an_async_resume_follows_the_run_to_its_end(open_server, monkeypatch):
    base, agent = open_server
    started = requests.post(base + "/agents/a/sessions/resume-202/runs", json={"message": 'use delete_file({"path": "/x"})'}, timeout=30)
    paused = started.json()
    assert paused["status"] == "awaiting_approval", started.text
    agent.resolve_approval(paused["run_id"], paused["approvals"][0]["id"], True)
    store = agent.memory_router.store
    append = store.append_events

    def slowly(agent_name, run_id, events):  # the resumed run's first events reach the store after the 202 is read
        if any(name == "run_started" and data.get("resumed") for name, data in events):
            time.sleep(1)
        return append(agent_name, run_id, events)

    monkeypatch.setattr(store, "append_events", slowly)
    accepted = requests.post(base + f"/agents/a/runs/{paused['run_id']}/resume", json={}, headers={"Prefer": "respond-async"}, timeout=30)
    assert accepted.status_code == 202, accepted.text
    events = requests.get(base + accepted.json()["events"], timeout=60).text
    last = [line for line in events.splitlines() if line.startswith("event: ")][-1]
    assert last == "event: run_finished", events[-500:]
    assert agent.get_run(paused["run_id"])["status"] == "completed"


# --- 8. a remote stream left by break has the cancelled result ------------------------------


def test_a_remote_stream_left_by_break_has_the_cancelled_result(open_server, gate):
    base, agent = open_server
    remote = RemoteAgent(base, agent="a")
    threading.Timer(0.5, gate.set).start()  # the tool under way when the stream is left finishes
    with remote.stream("use wait({})", session_id="break") as stream:
        for event in stream:
            if isinstance(event, ToolCall):
                break
    assert stream.result["status"] == "cancelled"
    assert agent.get_run(stream.result["run_id"])["status"] == "cancelled"
    remote.cleanup()


# --- the cancel of a run driven elsewhere --------------------------------------------------


def test_a_cancel_its_driver_has_yet_to_see_is_202_with_the_run_as_it_stands(open_server, monkeypatch):
    base, agent = open_server
    done = agent.run("hi", session_id="cancel-202")
    asked = {**done, "status": "running"}  # what cancel_run returns of a run another process drives
    monkeypatch.setattr(agent, "cancel_run", lambda run_id, reason=None: asked)
    response = requests.post(base + f"/agents/a/runs/{done['run_id']}/cancel", json={"reason": "stop"}, timeout=30)
    assert response.status_code == 202 and response.json() == asked


# --- 9. serve through the agent's front door -----------------------------------------------


def test_serve_reaches_no_store_and_the_client_imports_no_server():
    import omnisync.serve

    sources = sorted(Path(omnisync.serve.__file__).parent.glob("*.py"))  # the installed package's, under nox too
    assert len(sources) > 5
    served = "\n".join(path.read_text() for path in sources)
    for reach in (".store.", ".store)", "memory_router.store", "save_run(", "load_run(", "read_events(", "append_events("):
        assert reach not in served, reach
    import subprocess
    import sys

    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, omnisync.remote, omnisync.agent; print(sorted(m for m in sys.modules if m.startswith('omnisync.serve')))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    assert loaded.stdout.strip() == "[]"


def test_a_local_and_a_remote_agent_are_one_protocol_and_page_sessions_alike(open_server):
    from omnisync.agent_protocol import Agent

    base, agent = open_server
    for session in ("page-1", "page-2", "page-3"):
        agent.run("hi", session_id=session)
    remote = RemoteAgent(base, agent="a")
    drivers: list[Agent] = [agent, remote]  # checked by mypy too
    pages = []
    for driver in drivers:
        assert isinstance(driver, Agent)
        seen, cursor = [], None
        while True:
            page = driver.list_sessions_page(cursor=cursor, limit=2)
            seen += [s["session_id"] for s in page["sessions"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        pages.append(seen)
    assert pages[0] == pages[1] and {"page-1", "page-2", "page-3"} <= set(pages[0]) and len(set(pages[0])) == len(pages[0])
    remote.cleanup()
