"""The HTTP surface of omnisync.serve: tokens, validation, pages, idempotency, runs that outlive requests, events."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests
from helpers.serve_servers import scripted_model_server, uvicorn_server
from helpers.tool_agents import SYSTEM, gated_agent

from omnisync import MemoryRouter, OmniCoreAgent
from omnisync.errors import ConfigurationError, StoreError
from omnisync.serve import create_app, runs
from omnisync.serve.auth import parse_tokens

TOKEN_A = "token-for-agent-a-0123456789"
TOKEN_B = "token-for-agent-b-0123456789"
TOKEN_ALL = "token-for-every-agent-012345"
GATE = threading.Event()  # the "wait" tool returns once it is set


@pytest.fixture(scope="module")
def model_url():
    with scripted_model_server() as url:
        yield url


def make_agent(name: str, model_url: str, router: MemoryRouter | None) -> OmniCoreAgent:
    return gated_agent(name, model_url, router, GATE)


@pytest.fixture(scope="module")
def server(model_url):
    router = MemoryRouter("in_memory")  # both agents in one store: only the agent name keeps them apart
    agents = {"a": make_agent("a", model_url, router), "b": make_agent("b", model_url, router)}
    app = create_app(agents, tokens={TOKEN_A: ["a"], TOKEN_B: ["b"], TOKEN_ALL: ["*"]}, cors_origins=["https://app.example"])
    with uvicorn_server(app) as base:
        yield base, agents
    for agent in agents.values():
        agent.cleanup()
    router.close()


@pytest.fixture
def base(server):
    GATE.clear()
    yield server[0]
    GATE.set()


def call(base, method, path, token=TOKEN_A, **options):
    headers = options.pop("headers", {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return requests.request(method, base + path, headers=headers, timeout=30, **options)


def run_in(base, agent, session, message, token):
    response = call(base, "POST", f"/agents/{agent}/sessions/{session}/runs", token, json={"message": message})
    assert response.status_code == 200, response.text
    return response.json()


def events_of(response):
    """(id, event, data) of each event of an SSE response."""
    found = []
    for block in response.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if fields:
            found.append((fields["id"], fields["event"], json.loads(fields["data"])))
    return found


# --- who may do what ---------------------------------------------------------------------


def every_route(agent, session, run_id, call_id):
    return [
        ("POST", f"/agents/{agent}/sessions/{session}/runs", {"message": "hi"}),
        ("GET", f"/agents/{agent}/sessions", None),
        ("GET", f"/agents/{agent}/sessions/{session}/messages", None),
        ("GET", f"/agents/{agent}/sessions/{session}/usage", None),
        ("DELETE", f"/agents/{agent}/sessions/{session}", None),
        ("GET", f"/agents/{agent}/runs", None),
        ("GET", f"/agents/{agent}/runs/{run_id}", None),
        ("GET", f"/agents/{agent}/runs/{run_id}/events", None),
        ("POST", f"/agents/{agent}/runs/{run_id}/approvals", {"call_id": call_id, "approved": True}),
        ("POST", f"/agents/{agent}/runs/{run_id}/budget", {"extra_tool_calls": 1}),
        ("POST", f"/agents/{agent}/runs/{run_id}/resume", {}),
        ("POST", f"/agents/{agent}/runs/{run_id}/cancel", {}),
    ]


def test_a_token_for_one_agent_finds_nothing_of_another(base):
    paused = run_in(base, "b", "secret", 'use delete_file({"path": "/b"})', TOKEN_B)
    routes = every_route("b", "secret", paused["run_id"], paused["approvals"][0]["id"])
    for method, path, body in routes:
        response = call(base, method, path, TOKEN_A, json=body)
        assert (response.status_code, response.json()["error"]["type"]) == (404, "AgentNotFound"), (method, path)
    for method, path, body in routes:  # nor through its own agent's routes
        response = call(base, method, path.replace("/agents/b/", "/agents/a/"), TOKEN_A, json=body)
        if "/runs/" in path:
            assert (response.status_code, response.json()["error"]["type"]) == (404, "RunNotFoundError"), (method, path)
        else:
            assert response.status_code == 200 and "delete_file" not in response.text and paused["run_id"] not in response.text
    assert call(base, "GET", f"/agents/b/runs/{paused['run_id']}", TOKEN_B).json()["status"] == "awaiting_approval"
    assert call(base, "GET", "/agents/b/sessions/secret/messages", TOKEN_B).json()["messages"][0]["content"].startswith("use delete_file")
    assert call(base, "GET", "/agents", TOKEN_A).json() == {"agents": ["a"]}
    assert call(base, "GET", "/agents", TOKEN_ALL).json() == {"agents": ["a", "b"]}


@pytest.mark.parametrize("token", [None, "wrong-token-0123456789abc"])
def test_no_or_a_wrong_token_is_401_on_every_route(base, token):
    for method, path, body in every_route("a", "s", "run_x", "call_x") + [("GET", "/agents", None)]:
        response = call(base, method, path, token, json=body)
        assert response.status_code == 401, (method, path)
        assert response.headers["www-authenticate"] == "Bearer"
    assert call(base, "GET", "/agents", None, headers={"Authorization": f"Basic {TOKEN_A}"}).status_code == 401


def test_health_and_readiness_need_no_token(base, server, monkeypatch):
    assert call(base, "GET", "/healthz", None).json() == {"status": "ok"}
    assert call(base, "GET", "/readyz", None).json() == {"status": "ready"}
    store = server[1]["a"].memory_router.store

    def broken(*args):
        raise StoreError("the store is down")

    monkeypatch.setattr(store, "load_run", broken)
    response = call(base, "GET", "/readyz", None)
    assert response.status_code == 503 and response.json() == {"status": "unavailable"}  # why is in the log only


def test_tokens_are_checked_when_the_app_is_made():
    agent = OmniCoreAgent("a", SYSTEM, {"model": "m", "api_key": "k"})
    with pytest.raises(ConfigurationError, match="at least 16"):
        create_app(agent, tokens={"short": ["a"]})
    with pytest.raises(ConfigurationError, match="nobody"):
        create_app(agent, tokens={TOKEN_A: ["nobody"]})
    assert parse_tokens(f"# comment\n{TOKEN_A} a, b\n\n{TOKEN_B} *", "f") == {TOKEN_A: ["a", "b"], TOKEN_B: ["*"]}
    assert parse_tokens(f"{TOKEN_A} a;{TOKEN_B} b", "env") == {TOKEN_A: ["a"], TOKEN_B: ["b"]}
    with pytest.raises(ConfigurationError, match="entry 1"):
        parse_tokens(TOKEN_A, "f")
    agent.cleanup()


def test_cors_answers_only_the_origins_given(base, model_url):
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
    allowed = call(base, "OPTIONS", "/agents/a/runs", None, headers=preflight)
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    other = call(base, "OPTIONS", "/agents/a/runs", None, headers={**preflight, "Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    traced = call(base, "OPTIONS", "/agents/a/runs", None, headers={**preflight, "Access-Control-Request-Headers": "traceparent,tracestate"})
    assert traced.status_code == 200 and {"traceparent", "tracestate"} <= set(traced.headers["access-control-allow-headers"].lower().split(", "))
    agent = OmniCoreAgent("c", SYSTEM, {"model": "m", "api_key": "k", "base_url": model_url})
    with uvicorn_server(create_app(agent)) as closed:
        response = requests.options(closed + "/agents/c/runs", headers=preflight, timeout=10)
        assert "access-control-allow-origin" not in response.headers
        assert requests.get(closed + "/agents", headers={"Origin": "https://app.example"}, timeout=10).headers.get("access-control-allow-origin") is None
    agent.cleanup()


# --- bad requests ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "options", "status", "kind"),
    [
        ("POST", "/agents/a/sessions/s/runs", {"data": "{not json"}, 400, "InvalidJSON"),
        ("POST", "/agents/a/sessions/s/runs", {"json": ["hi"]}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": "hi", "extra": 1}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": True}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": []}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": [{"type": "text"}]}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": "hi", "output_type": {}}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": "hi", "output_type": "City"}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/runs/run_x/resume", {"json": {"output_type": []}}, 422, "ConfigurationError"),
        ("GET", "/agents/a/sessions/s/usage?detail=1", {}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": "x" * 1_000_001}}, 413, "PayloadTooLarge"),
        ("POST", "/agents/a/sessions/" + "s" * 256 + "/runs", {"json": {"message": "hi"}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/sessions/s/runs", {"json": {"message": "hi"}, "headers": {"Idempotency-Key": "x" * 256}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/runs/run_x/approvals", {"json": {"call_id": "c", "approved": "yes"}}, 422, "ConfigurationError"),
        ("POST", "/agents/a/runs/run_x/budget", {"json": {"extra_tool_calls": 1.5}}, 422, "ConfigurationError"),
        ("GET", "/agents/a/runs?limit=0", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/runs?limit=many", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/runs?cursor=garbage", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/runs?status=sleeping", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/runs?colour=red", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/sessions/s/messages?include_inactive=maybe", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/sessions/s/messages?include_inactive=true&include_inactive=false", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/runs?limit=5&limit=500", {}, 422, "ConfigurationError"),
        ("GET", "/agents/a/runs/run_missing", {}, 404, "RunNotFoundError"),
        ("POST", "/agents/a/runs/run_missing/resume", {}, 404, "RunNotFoundError"),
        ("POST", "/agents/a/runs/run_missing/cancel", {}, 404, "RunNotFoundError"),
        ("GET", "/agents/a/nothing", {}, 404, "NotFound"),
        ("PUT", "/agents/a/runs", {}, 405, "MethodNotAllowed"),
    ],
)
def test_bad_requests_get_a_clear_4xx(base, method, path, options, status, kind):
    response = call(base, method, path, **options)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == kind and error["message"]


def test_a_bad_content_part_is_refused_before_anything_is_kept(base, server):
    bad = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}]
    response = call(base, "POST", "/agents/a/sessions/badpart/runs", json={"message": bad}, headers={"Idempotency-Key": "bad-part-1"})
    assert response.status_code == 422 and "message[1]" in response.json()["error"]["message"]
    assert server[1]["a"].list_runs(session_id="badpart") == [] and server[1]["a"].get_session_history("badpart") == []
    good = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]
    again = call(base, "POST", "/agents/a/sessions/badpart/runs", json={"message": good}, headers={"Idempotency-Key": "bad-part-1"})
    assert again.status_code == 200 and again.json()["response"] == "echo: look [image_url]"  # the key was not used up


def test_a_bad_last_event_id_is_400(base):
    done = run_in(base, "a", "lei", "hi", TOKEN_A)
    response = call(base, "GET", f"/agents/a/runs/{done['run_id']}/events", headers={"Last-Event-ID": "soon"})
    assert response.status_code == 400 and response.json()["error"]["type"] == "BadLastEventId"


def test_a_busy_session_is_409(base):
    paused = run_in(base, "a", "busy", 'use delete_file({"path": "/x"})', TOKEN_A)
    response = call(base, "POST", "/agents/a/sessions/busy/runs", json={"message": "hi", "on_busy": "raise"})
    assert response.status_code == 409
    assert response.json()["error"] | {"message": ""} == {"type": "SessionBusyError", "message": "", "run_id": paused["run_id"], "paused": True}


# --- pages -------------------------------------------------------------------------------


def test_runs_and_sessions_come_a_page_at_a_time(base):
    made = [run_in(base, "a", f"page{n % 3}", f"m{n}", TOKEN_A)["run_id"] for n in range(5)]

    def walk(path, key, field):
        seen, cursor = [], None
        while True:
            page = call(base, "GET", path, params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
            assert len(page[key]) <= 2
            seen += [item[field] for item in page[key]]
            cursor = page["next_cursor"]
            if cursor is None:
                return seen

    runs = walk("/agents/a/runs", "runs", "run_id")
    assert [r for r in runs if r in made] == made and len(runs) == len(set(runs))
    sessions = walk("/agents/a/sessions", "sessions", "session_id")
    assert sessions == sorted(sessions) and {"page0", "page1", "page2"} <= set(sessions)
    filtered = call(base, "GET", "/agents/a/runs", params={"session": "page1"}).json()["runs"]
    assert [r["run_id"] for r in filtered] == [made[1], made[4]]


def test_a_page_of_sessions_is_one_bounded_read_of_the_store(base, server, monkeypatch):
    for n in range(3):
        run_in(base, "a", f"listed{n}", f"m{n}", TOKEN_A)
    store = server[1]["a"].memory_router.store
    original, reads = store.sessions_page, []

    def whole(*args, **options):
        raise AssertionError("the whole listing was read")

    def page(*args):
        reads.append(args)
        return original(*args)

    monkeypatch.setattr(store, "sessions", whole)
    monkeypatch.setattr(store, "sessions_page", page)
    first = call(base, "GET", "/agents/a/sessions", params={"limit": 1}).json()
    [shown] = first["sessions"]
    second = call(base, "GET", "/agents/a/sessions", params={"limit": 1, "cursor": first["next_cursor"]}).json()
    assert reads == [("a", None, 2), ("a", ("a", shown["session_id"]), 2)]  # one more than the page: is there a next one?
    assert second["sessions"][0]["session_id"] > shown["session_id"] and second["next_cursor"] is not None


# --- a start names its run before anything else -------------------------------------------


def test_a_json_answer_names_its_run_in_a_header(base):
    response = call(base, "POST", "/agents/a/sessions/named/runs", json={"message": "hi"})
    assert response.status_code == 200 and response.headers["Omnisync-Run-Id"] == response.json()["run_id"]


def test_prefer_respond_async_answers_202_once_the_run_started_and_it_goes_on(base, server):
    response = call(base, "POST", "/agents/a/sessions/async/runs", json={"message": "use wait({})"}, headers={"Prefer": "respond-async, wait=5"})
    assert response.status_code == 202, response.text
    run_id = response.headers["Omnisync-Run-Id"]
    body = response.json()
    assert body == {"run_id": run_id, "run": f"/agents/a/runs/{run_id}", "events": f"/agents/a/runs/{run_id}/events"}
    assert response.headers["Location"] == body["run"] and response.headers["Preference-Applied"] == "respond-async"
    assert call(base, "GET", body["run"]).json()["status"] == "running"  # answered while its tool waits
    GATE.set()
    replay = events_of(call(base, "GET", body["events"]))
    assert replay[0][1] == "run_started" and replay[-1][2]["result"]["response"] == "Done: waited"
    again = call(base, "POST", f"/agents/a/runs/{run_id}/resume", headers={"Prefer": "respond-async"})
    assert again.status_code == 409  # a finished run: the 202 is only for a run that starts


def test_a_retried_async_post_names_the_run_its_key_started(base, server):
    key = {"Idempotency-Key": "async-retry", "Prefer": "respond-async"}
    first = call(base, "POST", "/agents/a/sessions/async-retry/runs", json={"message": "once"}, headers=dict(key))
    again = call(base, "POST", "/agents/a/sessions/async-retry/runs", json={"message": "once"}, headers=dict(key))
    assert first.status_code == again.status_code == 202 and again.json() == first.json()
    assert [r["run_id"] for r in server[1]["a"].list_runs(session_id="async-retry")] == [first.json()["run_id"]]


# --- idempotency -------------------------------------------------------------------------


def test_a_retried_post_with_its_key_starts_no_second_run(base, server):
    key = {"Idempotency-Key": "retry-me-1"}
    first = call(base, "POST", "/agents/a/sessions/idem/runs", json={"message": "once"}, headers=dict(key)).json()
    again = call(base, "POST", "/agents/a/sessions/idem/runs", json={"message": "once"}, headers=dict(key)).json()
    assert again == first
    streamed = call(base, "POST", "/agents/a/sessions/idem/runs", json={"message": "once"}, headers={**key, "Accept": "text/event-stream"})
    assert events_of(streamed)[-1][2]["result"] == first
    assert [r["run_id"] for r in server[1]["a"].list_runs(session_id="idem")] == [first["run_id"]]
    other = call(base, "POST", "/agents/a/sessions/idem/runs", json={"message": "twice"}, headers=dict(key))
    assert other.status_code == 422 and "different request" in other.json()["error"]["message"]


def test_concurrent_posts_with_one_key_share_one_run(base, server):
    GATE.set()
    answers: list[dict] = []

    def post():
        answers.append(call(base, "POST", "/agents/a/sessions/race/runs", json={"message": "use wait({})"}, headers={"Idempotency-Key": "race"}).json())

    threads = [threading.Thread(target=post) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(server[1]["a"].list_runs(session_id="race")) == 1
    started = [a for a in answers if "run_id" in a]
    assert started and {a["run_id"] for a in started} == {server[1]["a"].list_runs(session_id="race")[0]["run_id"]}
    assert all(a.get("error", {}).get("type") == "RunConflictError" for a in answers if "run_id" not in a)


def test_a_key_whose_run_never_started_can_be_used_again(base):
    paused = run_in(base, "a", "freeagain", 'use delete_file({"path": "/y"})', TOKEN_A)
    key = {"Idempotency-Key": "after-busy"}
    refused = call(base, "POST", "/agents/a/sessions/freeagain/runs", json={"message": "hi", "on_busy": "raise"}, headers=dict(key))
    assert refused.status_code == 409
    call(base, "POST", f"/agents/a/runs/{paused['run_id']}/cancel", json={"reason": "make room"})
    retried = call(base, "POST", "/agents/a/sessions/freeagain/runs", json={"message": "hi", "on_busy": "raise"}, headers=dict(key))
    assert retried.status_code == 200 and retried.json()["response"] == "echo: hi"


# --- runs outlive their request; events ---------------------------------------------------


def wait_for_status(agent, run_id, status, seconds=20.0):
    deadline = time.monotonic() + seconds
    while agent.get_run(run_id)["status"] != status:
        assert time.monotonic() < deadline, agent.get_run(run_id)
        time.sleep(0.05)


def test_a_client_that_leaves_a_stream_does_not_stop_the_run(base, server):
    response = call(base, "POST", "/agents/a/sessions/leave/runs", json={"message": "use wait({})"}, headers={"Accept": "text/event-stream"}, stream=True)
    lines = response.iter_lines()
    first = [next(lines) for _ in range(7)]
    assert (first[1], first[5]) == (b"event: run_started", b"event: tool_call")
    run_id = json.loads(first[2][len(b"data: "):])["run_id"]
    assert response.headers["Omnisync-Run-Id"] == run_id
    response.close()  # the client goes away while the tool runs
    GATE.set()
    wait_for_status(server[1]["a"], run_id, "completed")
    assert server[1]["a"].get_session_history("leave")[-1]["content"] == "Done: waited"

    replay = events_of(call(base, "GET", f"/agents/a/runs/{run_id}/events"))
    assert [name for _, name, _ in replay][:3] == ["run_started", "tool_call", "tool_result"] and replay[-1][1] == "run_finished"
    assert [int(i) for i, _, _ in replay] == list(range(1, len(replay) + 1))
    later = events_of(call(base, "GET", f"/agents/a/runs/{run_id}/events", headers={"Last-Event-ID": "2"}))
    assert later == replay[2:]


def test_a_follower_gets_every_event_live_exactly_once(base, server):
    started = call(base, "POST", "/agents/a/sessions/follow/runs", json={"message": "use wait({})"}, headers={"Accept": "text/event-stream"}, stream=True)
    lines = started.iter_lines()
    run_id = json.loads([next(lines) for _ in range(3)][2][len(b"data: "):])["run_id"]
    followed: list = []
    follower = threading.Thread(target=lambda: followed.extend(events_of(call(base, "GET", f"/agents/a/runs/{run_id}/events", headers={"Last-Event-ID": "1"}))))
    follower.start()
    time.sleep(0.3)
    assert follower.is_alive()  # it waits for the run, which waits for the gate
    GATE.set()
    follower.join(20)
    rest = events_of(type("R", (), {"text": b"\n".join(lines).decode()})())
    assert story(followed) == story(rest) and followed[0][0] == "2" and followed[-1][1] == "run_finished"
    assert [e for e in followed if e[1] != "text_delta"] == [e for e in rest if e[1] != "text_delta"]  # the same stored ids
    started.close()


def story(events):
    """(name, data) of each event, the text of consecutive text deltas joined: what a client makes of them."""
    told: list = []
    for _, name, data in events:
        if name == "text_delta" and told and told[-1][0] == "text_delta":
            told[-1] = (name, {**data, "text": told[-1][1]["text"] + data["text"]})
        else:
            told.append((name, data))
    return told


def test_text_deltas_are_stored_coalesced_and_replayed_from_inside_one(base, server):
    words = " ".join(f"word{i}" for i in range(300))
    response = call(base, "POST", "/agents/a/sessions/long/runs", json={"message": words}, headers={"Accept": "text/event-stream"})
    live = events_of(response)
    deltas = [e for e in live if e[1] == "text_delta"]
    assert len(deltas) > 50 and all(":" in id_ for id_, _, _ in deltas)  # each delta as it came, ids inside stored events
    run_id = live[-1][2]["run_id"]
    stored = server[1]["a"].memory_router.store.read_events("a", run_id)
    assert [e.name for e in stored] == ["run_started", "text_delta", "run_finished"]  # a long answer is one record here
    assert stored[1].data["text"] == f"echo: {words}" == story(live)[1][1]["text"]
    for id_, _, _ in (deltas[0], deltas[len(deltas) // 2], deltas[-1]):  # a client that lost the rest reconnects
        rest = events_of(call(base, "GET", f"/agents/a/runs/{run_id}/events", headers={"Last-Event-ID": id_}))
        seen = live[: live.index(next(e for e in live if e[0] == id_)) + 1]
        assert story(seen + rest) == story(live) and rest[-1] == live[-1]


def test_a_run_driven_here_is_replayed_from_the_store(base, server):
    response = call(base, "POST", "/agents/a/sessions/replay/runs", json={"message": "use add({\"a\": 1, \"b\": 2})"}, headers={"Accept": "text/event-stream"})
    live = events_of(response)
    replay = events_of(call(base, "GET", f"/agents/a/runs/{live[-1][2]['run_id']}/events"))
    assert story(replay) == story(live) and [e[0] for e in replay] == [str(i) for i in range(1, len(replay) + 1)]
    after_end = call(base, "GET", f"/agents/a/runs/{live[-1][2]['run_id']}/events", headers={"Last-Event-ID": replay[-1][0]})
    assert after_end.text == ""


def test_events_of_a_run_driven_elsewhere_are_its_end(base, server, monkeypatch):
    monkeypatch.setattr(runs, "SETTLED_SECONDS", 0.0)
    done = server[1]["a"].run("driven in-process, not over HTTP", session_id="elsewhere")
    only = events_of(call(base, "GET", f"/agents/a/runs/{done['run_id']}/events"))
    assert only == [("final", "run_finished", {"run_id": done["run_id"], "result": done})]
    assert call(base, "GET", f"/agents/a/runs/{done['run_id']}/events", headers={"Last-Event-ID": "final"}).text == ""


def test_cancel_stops_a_run_under_way(base, server):
    response = call(base, "POST", "/agents/a/sessions/stop/runs", json={"message": "use wait({})"}, headers={"Accept": "text/event-stream"}, stream=True)
    lines = response.iter_lines()
    run_id = json.loads([next(lines) for _ in range(3)][2][len(b"data: "):])["run_id"]
    threading.Timer(0.3, GATE.set).start()  # the tool returns; the run stops before its next model call
    cancelled = call(base, "POST", f"/agents/a/runs/{run_id}/cancel", json={})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert events_of(type("R", (), {"text": b"\n".join(lines).decode()})())[-1][2]["result"]["status"] == "cancelled"
    resume = call(base, "POST", f"/agents/a/runs/{run_id}/resume")
    assert resume.status_code == 409
