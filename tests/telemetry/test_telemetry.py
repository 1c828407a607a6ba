"""OpenTelemetry spans and metrics of runs (omnisync.telemetry), read back from the SDK's in-memory exporters."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the telemetry tests need opentelemetry-sdk (the test extra)")

from opentelemetry import trace  # noqa: E402

from helpers.backend_routers import BACKENDS, open_router  # noqa: E402
from omnisync import MemoryRouter, OmniCoreAgent  # noqa: E402
from omnisync.remote import RemoteAgent  # noqa: E402
from helpers.otel_helpers import every_value, metric_points, providers, span_tree  # noqa: E402
from helpers.serve_servers import http_server, scripted_model_server, uvicorn_server  # noqa: E402
from helpers.tool_agents import SCRIPTED_MODEL, SYSTEM, counting_tools  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
TOOL_MESSAGE = 'Weather please: use lookup({"city": "Paris"})'
SECRET = "sk-" + "telemetry0secret0key0value0123456789"


@pytest.fixture
def exporter():
    spans, reader = providers()
    spans.clear()
    reader.get_metrics_data()  # metrics are cumulative: tests compare before and after
    return spans


@pytest.fixture(scope="module")
def model_url():
    with scripted_model_server() as url:
        yield url


def agent_on(model_url: str, router: MemoryRouter | None = None, name: str | None = None, **config) -> OmniCoreAgent:
    return OmniCoreAgent(
        name=name or f"weather-{uuid.uuid4().hex[:8]}",
        system_instruction=SYSTEM,
        model_config={**SCRIPTED_MODEL, "base_url": model_url},
        memory_router=router,
        agent_config=config or None,
        local_tools=counting_tools(),
    )


def on_sqlite(router: MemoryRouter) -> bool:
    return router.kind == "sql" and router.store.engine.dialect.name == "sqlite"


def spans_named(spans, prefix):
    return [s for s in spans if s.name.startswith(prefix)]


def test_a_run_with_tools_is_one_tree_of_spans_named_and_attributed_as_the_conventions_say(exporter, model_url, tmp_path):
    with MemoryRouter("sql", url=f"sqlite:///{tmp_path / 'm.db'}") as router:
        agent = agent_on(model_url, router)
        result = agent.run(TOOL_MESSAGE, session_id="s-tools")
        agent.cleanup()
    spans = [s for s in exporter.get_finished_spans() if s.name != "omnisync.store.prune_runs"]
    (run,) = spans_named(spans, "invoke_agent")
    assert run.name == f"invoke_agent {agent.name}" and run.parent is None
    assert {s.context.trace_id for s in spans} == {run.context.trace_id}
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in spans if s is not run)
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == agent.name
    assert run.attributes["omnisync.run.id"] == result["run_id"]
    assert run.attributes["omnisync.run.status"] == "completed"
    assert run.attributes["gen_ai.provider.name"] == "openai" and run.attributes["gen_ai.request.model"] == "gpt-5.4-mini"
    assert run.attributes["gen_ai.usage.input_tokens"] == result["usage"]["prompt_tokens"]
    assert run.attributes["gen_ai.usage.output_tokens"] == result["usage"]["completion_tokens"]

    chats = spans_named(spans, "chat ")
    assert [c.name for c in chats] == ["chat gpt-5.4-mini"] * 2
    for chat in chats:
        assert chat.kind == trace.SpanKind.CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == "gpt-5.4-mini"
        assert chat.attributes["gen_ai.response.model"]
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0 and chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert chat.attributes["omnisync.chat.purpose"] == "step"
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)

    (tool,) = spans_named(spans, "execute_tool")
    assert tool.name == "execute_tool lookup"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "lookup"
    assert tool.attributes["gen_ai.tool.call.id"].startswith("call_")
    assert chats[0].end_time <= tool.start_time <= tool.end_time <= chats[1].start_time

    assert spans_named(spans, "omnisync.store.") == []  # SQLite's calls make no round trip: no span (store spans: below)
    assert len(spans) == 4
    assert all(s.attributes["gen_ai.conversation.id"] == "s-tools" for s in spans)
    assert all(s.attributes["gen_ai.agent.name"] == agent.name for s in spans)


def test_token_usage_and_duration_metrics_follow_the_conventions(exporter, model_url):
    _, reader = providers()
    agent = agent_on(model_url)
    result = agent.run(TOOL_MESSAGE)
    agent.cleanup()
    points = metric_points(reader)
    tokens = [p for p in points["gen_ai.client.token.usage"] if p.attributes.get("gen_ai.agent.name", agent.name) == agent.name]
    by_type = {t: sum(p.sum for p in tokens if p.attributes["gen_ai.token.type"] == t and p.attributes["gen_ai.request.model"] == "gpt-5.4-mini") for t in ("input", "output")}
    assert by_type["input"] >= result["usage"]["prompt_tokens"] and by_type["output"] >= result["usage"]["completion_tokens"]
    assert tokens[0].explicit_bounds[:3] == (1, 4, 16) and tokens[0].explicit_bounds[-1] == 67108864
    durations = points["gen_ai.client.operation.duration"]
    chat = [p for p in durations if p.attributes["gen_ai.operation.name"] == "chat"]
    assert chat and chat[0].explicit_bounds[:2] == (0.01, 0.02) and chat[0].explicit_bounds[-1] == 81.92
    assert any(p.attributes.get("gen_ai.agent.name") == agent.name for p in durations if p.attributes["gen_ai.operation.name"] == "invoke_agent")
    runs = [p for p in points["omnisync.agent.runs"] if p.attributes["gen_ai.agent.name"] == agent.name]
    assert [(p.attributes["omnisync.run.status"], p.value) for p in runs] == [("completed", 1)]


def test_a_streamed_run_has_the_same_tree_with_a_streamed_chat_span(exporter, model_url):
    agent = agent_on(model_url)
    events = list(agent.stream(TOOL_MESSAGE, session_id="s-stream"))
    agent.cleanup()
    spans = exporter.get_finished_spans()
    print(span_tree(spans))
    (run,) = spans_named(spans, "invoke_agent")
    chats = spans_named(spans, "chat ")
    assert len(chats) == 2 and all(c.attributes["omnisync.chat.streamed"] for c in chats)
    assert all(c.parent.span_id == run.context.span_id for c in chats + spans_named(spans, "execute_tool"))
    assert chats[1].attributes["gen_ai.usage.output_tokens"] > 0
    assert run.attributes["omnisync.run.status"] == events[-1].result["status"] == "completed"
    assert all(s.attributes["gen_ai.conversation.id"] == "s-stream" for s in spans)


@pytest.fixture(params=[b for b in BACKENDS if getattr(b, "values", (b,))[0] in ("sqlite", "postgres")])
def sqlite_or_postgres(request, tmp_path, monkeypatch):
    yield from open_router(getattr(request.param, "values", (request.param,))[0], tmp_path, monkeypatch)


def test_a_summary_is_a_chat_span_marked_summary_with_its_own_usage(exporter, model_url, sqlite_or_postgres):
    memory = {"mode": "sliding_window", "value": 2, "summary": {"enabled": True}}
    router = sqlite_or_postgres
    agent = agent_on(model_url, router, memory_config=memory)
    agent.run("first", session_id="s-sum")
    result = agent.run("second", session_id="s-sum")
    agent.cleanup()
    spans = exporter.get_finished_spans()
    (summary,) = [s for s in spans_named(spans, "summarize") if s.attributes["omnisync.run.id"] == result["run_id"]]
    assert summary.name == f"summarize {agent.name}" and summary.parent is None
    assert summary.attributes["gen_ai.conversation.id"] == "s-sum"
    (chat,) = [s for s in spans if s.name.startswith("chat ") and s.parent and s.parent.span_id == summary.context.span_id]
    assert chat.attributes["omnisync.chat.purpose"] == "summary"
    assert chat.parent.span_id == summary.context.span_id
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0 and chat.attributes["gen_ai.conversation.id"] == "s-sum"
    folds = [s for s in spans_named(spans, "omnisync.store.fold") if s.parent.span_id == summary.context.span_id]
    assert len(folds) == (0 if on_sqlite(router) else 1)  # a span where the fold is a round trip
    assert all(f.attributes["gen_ai.conversation.id"] == "s-sum" for f in folds)
    (run_span,) = [s for s in spans_named(spans, "invoke_agent") if s.attributes.get("omnisync.run.id") == result["run_id"]]
    (link,) = summary.links  # its own trace, joined to the run that asked for it
    assert link.context.span_id == run_span.context.span_id and link.context.trace_id == run_span.context.trace_id
    assert link.attributes["omnisync.link"] == "summarizes"


class _FailingModel(BaseHTTPRequestHandler):
    """A model server that answers 400, quoting the request's messages (as some servers do)."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = json.dumps({"error": {"message": f"cannot take {body.decode()} with key {SECRET}"}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize("capture", ["false", "true"])
def test_a_failed_run_says_its_error_type_and_never_the_errors_text(exporter, monkeypatch, capture):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture)
    with http_server(_FailingModel) as base:
        agent = agent_on(base + "/v1")
        with pytest.raises(Exception) as raised:
            agent.run("my private plan is Atlas-7")
        agent.cleanup()
    assert "Atlas-7" in str(raised.value)  # the error itself quotes the prompt...
    spans = exporter.get_finished_spans()
    (run,) = spans_named(spans, "invoke_agent")
    (chat,) = spans_named(spans, "chat ")
    assert chat.attributes["error.type"] == "omnisync.errors.BadRequestError" == run.attributes["error.type"]
    assert chat.status.status_code == trace.StatusCode.ERROR and run.attributes["omnisync.run.status"] == "failed"
    assert [e.attributes["exception.type"] for e in run.events if e.name == "exception"] == ["omnisync.errors.BadRequestError"]
    values = [v for s in spans for v in every_value(s.events and [s] or [s])]
    exception_values = [str(v) for s in spans for e in s.events for v in (e.attributes or {}).values()]
    assert not any("Atlas-7" in v or SECRET in v for v in exception_values)  # ...its span never does
    assert not any(SECRET in v for v in values)
    if capture == "false":
        assert not any("Atlas-7" in v for v in values)


def test_no_content_leaves_without_the_opt_in_and_with_it_content_is_redacted(exporter, model_url, monkeypatch):
    message = f'{TOOL_MESSAGE} (my key is {SECRET})'
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    agent = agent_on(model_url)
    agent.run(message)
    values = every_value(exporter.get_finished_spans())
    assert not any("Paris" in v or SECRET in v or "sunny" in v for v in values)
    assert not any(name.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg", "gen_ai.tool.call.res")) for s in exporter.get_finished_spans() for name in s.attributes)

    exporter.clear()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    agent.run(message)
    agent.cleanup()
    spans = exporter.get_finished_spans()
    chat = spans_named(spans, "chat ")[0]
    sent = json.loads(chat.attributes["gen_ai.input.messages"])
    assert sent[0] == {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]}
    assert "Paris" in sent[-1]["parts"][0]["content"] and SECRET not in chat.attributes["gen_ai.input.messages"]
    assert json.loads(chat.attributes["gen_ai.output.messages"])[0]["parts"][0]["type"] == "tool_call"
    (tool,) = spans_named(spans, "execute_tool")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert tool.attributes["gen_ai.tool.call.result"] == "sunny in Paris"
    assert not any(SECRET in v for v in every_value(spans))


def test_the_agent_option_captures_content_for_that_agent_only(exporter, model_url, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    telling = agent_on(model_url, capture_message_content=True)
    quiet = agent_on(model_url)
    telling.run("the code word is heliotrope")
    quiet.run("the code word is marigold")
    telling.cleanup()
    quiet.cleanup()
    values = every_value(exporter.get_finished_spans())
    assert any("heliotrope" in v for v in values) and not any("marigold" in v for v in values)
    with pytest.raises(ValueError, match="capture_message_content must be True or False"):
        agent_on(model_url, capture_message_content="yes")


def test_an_approval_wait_is_an_event_and_the_resume_links_to_the_paused_run(exporter, model_url, tmp_path):
    with MemoryRouter("sql", url=f"sqlite:///{tmp_path / 'm.db'}") as router:
        agent = agent_on(model_url, router)
        paused = agent.run('use delete_file({"path": "notes.txt"})', session_id="s-approve")
        (approval,) = paused["approvals"]
        agent.resolve_approval(paused["run_id"], approval["id"], True)
        agent.resume(paused["run_id"])
        record = agent.get_run(paused["run_id"])
        agent.cleanup()
    first, second = spans_named(exporter.get_finished_spans(), "invoke_agent")
    assert first.attributes["omnisync.run.status"] == "awaiting_approval" and first.attributes["omnisync.run.resumed"] is False
    (waiting,) = [e for e in first.events if e.name == "omnisync.run.awaiting_approval"]
    assert waiting.attributes["gen_ai.tool.name"] == "delete_file" and waiting.attributes["gen_ai.tool.call.id"] == approval["id"]
    assert second.attributes["omnisync.run.resumed"] is True and second.attributes["gen_ai.conversation.id"] == "s-approve"
    assert [link.context.span_id for link in second.links] == [first.context.span_id]
    assert record["trace_parent"].startswith(f"00-{second.context.trace_id:032x}-{second.context.span_id:016x}-")


def _worker(action, store_url, agent_name, model_url, out, argument, env=None):
    command = [sys.executable, str(TESTS / "helpers" / "telemetry_worker.py"), action, store_url, agent_name, model_url, str(out), argument]
    subprocess.run(command, check=True, timeout=60, env={**os.environ, **(env or {})})
    return json.loads(Path(out).read_text())


def test_a_run_paused_in_one_process_and_resumed_in_another_joins_its_trace_by_a_link(exporter, model_url, tmp_path):
    store_url = f"sqlite:///{tmp_path / 'm.db'}"
    name = f"linked-{uuid.uuid4().hex[:8]}"
    first = _worker("run", store_url, name, model_url, tmp_path / "first.json", 'use delete_file({"path": "a.txt"})')
    run_id = first["result"]["run_id"]
    with MemoryRouter("sql", url=store_url) as router:
        agent = agent_on(model_url, router, name=name)
        agent.resolve_approval(run_id, first["result"]["approvals"][0]["id"], True)
    second = _worker("resume", store_url, name, model_url, tmp_path / "second.json", run_id)
    (paused,) = [s for s in first["spans"] if s["name"] == f"invoke_agent {name}"]
    (resumed,) = [s for s in second["spans"] if s["name"] == f"invoke_agent {name}"]
    assert second["result"]["status"] == "completed" and paused["attributes"]["omnisync.run.status"] == "awaiting_approval"
    assert resumed["trace_id"] != paused["trace_id"]  # another process, another trace...
    assert resumed["links"] == [[paused["trace_id"], paused["span_id"]]]  # ...linked to the one that paused
    assert {s["attributes"]["gen_ai.conversation.id"] for s in first["spans"] + second["spans"] if s["name"] != "omnisync.store.prune_runs"} == {"s-linked"}
    assert any(s["name"] == "execute_tool delete_file" and s["parent"] == resumed["span_id"] for s in second["spans"])


def test_a_served_run_continues_the_callers_trace(exporter, model_url):
    from omnisync.serve.app import create_app

    local = agent_on(model_url, name="served")
    tracer = trace.get_tracer("the-caller")
    with uvicorn_server(create_app(local)) as base, RemoteAgent(base, agent="served") as remote:
        with tracer.start_as_current_span("caller") as caller:
            result = remote.run(TOOL_MESSAGE, session_id="s-served")
            streamed = list(remote.stream("again", session_id="s-served"))
    local.cleanup()
    assert result["status"] == "completed" and streamed[-1].result["status"] == "completed"
    spans = exporter.get_finished_spans()
    runs = spans_named(spans, "invoke_agent served")
    assert len(runs) == 2
    for run in runs:
        assert run.context.trace_id == caller.get_span_context().trace_id
        assert run.parent.span_id == caller.get_span_context().span_id
    assert {s.context.trace_id for s in spans if s.attributes.get("gen_ai.conversation.id") == "s-served"} == {caller.get_span_context().trace_id}


def test_spans_reach_an_otlp_http_collector_process(model_url, tmp_path):
    received = tmp_path / "received.jsonl"
    collector = subprocess.Popen([sys.executable, str(TESTS / "helpers" / "otlp_collector.py"), str(received)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(collector.stdout.readline())
        name = f"otlp-{uuid.uuid4().hex[:8]}"
        endpoint = {"OTLP_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces"}
        sent = _worker("run", f"sqlite:///{tmp_path / 'm.db'}", name, model_url, tmp_path / "out.json", TOOL_MESSAGE, env=endpoint)
    finally:
        collector.terminate()
        collector.wait(10)
        collector.stdout.close()
    lines = [json.loads(line) for line in received.read_text().splitlines()]
    assert sorted(line["name"] for line in lines) == sorted(s["name"] for s in sent["spans"])
    (run,) = [line for line in lines if line["name"] == f"invoke_agent {name}"]
    assert run["scope"] == "omnisync" and run["attributes"]["gen_ai.agent.name"] == name
    assert run["span_id"] == f"{next(s['span_id'] for s in sent['spans'] if s['name'] == run['name']):016x}"
    (tool,) = [line for line in lines if line["name"] == "execute_tool lookup"]
    assert tool["parent"] == run["span_id"] and tool["attributes"]["gen_ai.tool.name"] == "lookup"


BLOCKED = """
import sys
class NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError("opentelemetry is not installed here")
sys.meta_path.insert(0, NoOpenTelemetry())
sys.path.insert(0, sys.argv[1])
from helpers.tool_agents import SCRIPTED_MODEL, tool_agent
SCRIPTED_MODEL["base_url"] = sys.argv[2]
agent = tool_agent(name="no-otel")
result = agent.run('use lookup({"city": "Paris"})')
agent.cleanup()
import omnisync.telemetry.api as api
print(result["status"], api.enabled(), sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def test_without_opentelemetry_a_run_imports_nothing_of_it_and_runs_the_same(model_url):
    shown = subprocess.run([sys.executable, "-c", BLOCKED, str(TESTS), model_url], capture_output=True, text=True, timeout=60, check=True)
    assert shown.stdout.split() == ["completed", "False", "[]"]


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


def test_every_store_names_its_database_on_its_spans_and_keeps_the_runs_trace_parent(exporter, model_url, router):
    agent = agent_on(model_url, router)
    result = agent.run(TOOL_MESSAGE, session_id="s-store")
    record = agent.get_run(result["run_id"])
    agent.cleanup()
    spans = exporter.get_finished_spans()
    (run,) = spans_named(spans, "invoke_agent")
    assert record["trace_parent"].startswith(f"00-{run.context.trace_id:032x}-{run.context.span_id:016x}-")
    stores = [s for s in spans_named(spans, "omnisync.store.") if s.context.trace_id == run.context.trace_id]
    if router.kind == "in_memory" or on_sqlite(router):
        assert stores == []  # calls in this process make no round trip: no span
        return
    expected = {"redis": "redis", "mongodb": "mongodb"}.get(router.kind) or router.store.engine.dialect.name
    assert {"omnisync.store.load_lease_and_window", "omnisync.store.save_runs", "omnisync.store.append_and_save_run"} <= {s.name for s in stores}
    for store in stores:
        assert store.kind == trace.SpanKind.CLIENT and store.parent.span_id == run.context.span_id
        assert store.attributes["db.system.name"] == expected and store.attributes["omnisync.store.kind"] == router.kind
        assert store.attributes["db.operation.name"] == store.name.removeprefix("omnisync.store.")
        assert store.attributes["gen_ai.conversation.id"] == "s-store" and "gen_ai.agent.name" not in store.attributes
        assert not any(name.startswith("db.query") for name in store.attributes)  # no statement text


def test_an_async_run_is_a_child_of_the_awaiting_callers_span(exporter, model_url):
    import asyncio

    from omnisync import aio

    async def main():
        agent = aio.OmniCoreAgent(
            name="async-weather", system_instruction=SYSTEM, model_config={**SCRIPTED_MODEL, "base_url": model_url}, local_tools=counting_tools()
        )
        with trace.get_tracer("the-caller").start_as_current_span("caller") as caller:
            await agent.run(TOOL_MESSAGE, session_id="s-async")
        await agent.cleanup()
        return caller.get_span_context()

    caller = asyncio.run(main())
    (run,) = spans_named(exporter.get_finished_spans(), "invoke_agent async-weather")
    assert run.parent.span_id == caller.span_id and run.context.trace_id == caller.trace_id
    assert [s.parent.span_id for s in spans_named(exporter.get_finished_spans(), "execute_tool")] == [run.context.span_id]


UNCONFIGURED = """
import sys
sys.path.insert(0, sys.argv[1])
from helpers.tool_agents import SCRIPTED_MODEL, tool_agent
import omnisync.telemetry.run as run
made = []
run.TracedSteps.__init__ = lambda *a, **k: made.append(a)  # any run span omnisync would make
SCRIPTED_MODEL["base_url"] = sys.argv[2]
agent = tool_agent(name="unconfigured")
result = agent.run('use lookup({"city": "Paris"})')
print(result["status"], len(made), agent.get_run(result["run_id"])["trace_parent"])
agent.cleanup()
"""


def test_with_the_api_but_no_sdk_configured_no_span_is_made(model_url):
    shown = subprocess.run([sys.executable, "-c", UNCONFIGURED, str(TESTS), model_url], capture_output=True, text=True, timeout=60, check=True)
    assert shown.stdout.split() == ["completed", "0", "None"]
