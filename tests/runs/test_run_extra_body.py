"""extra_body per run: a server's own options for one run's model calls, kept with the run so a resume sends them again."""

from __future__ import annotations

import io
import json

import pytest
from helpers.serve_servers import http_server, scripted_model, uvicorn_server
from helpers.tool_agents import SCRIPTED_MODEL, SYSTEM, counting_tools, tool_agent

from omnisync import ConfigurationError, MemoryRouter, OmniCoreAgent
from omnisync.remote import RemoteAgent
from omnisync.serve import create_app
from helpers.fake_http import install
from helpers.fake_stream import install as install_streaming

CONFIGURED = {"top_k": 40, "min_p": 0.05}
PER_RUN = {"top_k": 5, "grammar": "root ::= [a-z ]+"}


def agent_with(name: str = "opts", **options) -> OmniCoreAgent:
    return OmniCoreAgent(name=name, system_instruction=SYSTEM, local_tools=counting_tools(), **options)


def sent_options(bodies: list[dict]) -> list[dict]:
    return [{name: body.get(name) for name in ("top_k", "min_p", "grammar")} for body in bodies]


def test_a_runs_extra_body_goes_into_each_of_its_model_calls_over_the_configs(monkeypatch):
    http = install(monkeypatch, scripted_model.answer)
    agent = agent_with(model_config={**SCRIPTED_MODEL, "extra_body": CONFIGURED})
    result = agent.run('use lookup({"city": "Oslo"})', session_id="s1", extra_body=PER_RUN)
    assert result["response"] == "Done: sunny in Oslo"
    assert sent_options(http.sent) == [{"top_k": 5, "min_p": 0.05, "grammar": PER_RUN["grammar"]}] * 2
    agent.run("again", session_id="s1")  # the next run has none of its own
    assert sent_options(http.sent[2:]) == [{"top_k": 40, "min_p": 0.05, "grammar": None}]
    agent.cleanup()


def test_a_paused_run_resumed_by_another_agent_sends_its_extra_body_again(monkeypatch, tmp_path):
    http = install(monkeypatch, scripted_model.answer)
    url = f"sqlite:///{tmp_path}/m.db"
    with MemoryRouter("sql", url=url) as router:
        first = tool_agent(router)
        paused = first.run('use delete_file({"path": "/tmp/x"})', session_id="s1", extra_body=PER_RUN)
        assert paused["status"] == "awaiting_approval"
        first.resolve_approval(paused["run_id"], paused["approvals"][0]["id"], approved=True)
        first.cleanup()
    with MemoryRouter("sql", url=url) as router:  # as another process would: nothing shared but the store
        second = tool_agent(router)
        assert second.resume(paused["run_id"])["response"] == "Done: deleted /tmp/x"
        second.cleanup()
    assert sent_options(http.sent) == [{"top_k": 5, "min_p": None, "grammar": PER_RUN["grammar"]}] * 2


def test_a_streamed_run_sends_its_extra_body(monkeypatch):
    http = install_streaming(monkeypatch, scripted_model.answer)
    agent = tool_agent()
    with agent.stream("hello", session_id="s1", extra_body={"top_k": 7}) as stream:
        list(stream)
    assert stream.result["response"] == "echo: hello"
    assert [body.get("top_k") for body in http.sent] == [7] and http.sent[0]["stream"] is True
    agent.cleanup()


@pytest.mark.parametrize(
    "extra_body,message",
    [
        ({"messages": []}, "run extra_body cannot set 'messages': omnisync sets it on every request"),
        ({"temperature": 0}, "run extra_body cannot set 'temperature': it is a model_config option of its own"),
        (["top_k"], "run extra_body must be a dict of a server's own options"),
        ({"top_k": float("nan")}, "run extra_body must hold JSON values"),
    ],
)
def test_a_bad_extra_body_is_refused_before_anything_is_stored_or_sent(monkeypatch, extra_body, message):
    http = install(monkeypatch, scripted_model.answer)
    agent = tool_agent()
    agent.run("kept", session_id="s1")
    with pytest.raises(ConfigurationError, match=message):
        agent.run("refused", session_id="s1", extra_body=extra_body)
    with pytest.raises(ConfigurationError, match=message):
        agent.stream("refused", session_id="s1", extra_body=extra_body)
    assert [m["content"] for m in agent.get_session_history("s1")] == ["kept", "echo: kept"]
    assert len(http.sent) == 1 and len(agent.list_runs(session_id="s1")) == 1
    agent.cleanup()


class _Recording(scripted_model._Handler):
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        _Recording.bodies.append(json.loads(raw))
        self.rfile = io.BytesIO(raw)  # read again by the scripted model's handler
        super().do_POST()


def test_a_remote_run_passes_its_extra_body_to_the_served_agents_model_and_a_bad_one_is_refused():
    _Recording.bodies = []
    with http_server(_Recording) as base:
        served = agent_with(name="served", model_config={**SCRIPTED_MODEL, "base_url": base + "/v1"})
        with uvicorn_server(create_app({"served": served})) as url:
            remote = RemoteAgent(url, agent="served")
            assert remote.run("hi", session_id="r1", extra_body={"top_k": 3})["response"] == "echo: hi"
            with remote.stream("again", session_id="r1", extra_body={"min_p": 0.1}) as stream:
                list(stream)
            with pytest.raises(ConfigurationError, match="run extra_body cannot set 'tools'"):
                remote.run("no", session_id="r1", extra_body={"tools": []})
            assert [m["content"] for m in remote.get_session_history("r1")] == ["hi", "echo: hi", "again", "echo: again"]
            remote.cleanup()
        served.cleanup()
    assert [(body.get("top_k"), body.get("min_p")) for body in _Recording.bodies] == [(3, None), (None, 0.1)]
    assert SCRIPTED_MODEL["model"] == _Recording.bodies[0]["model"]
