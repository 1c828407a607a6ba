"""omnisync.testing: scrubbed cassettes, body matching, clear mismatch errors, CLI-only record mode."""

import logging
from pathlib import Path

import pytest
import yaml

from omnisync.model.client import ChatClient
from omnisync.model.config import ModelConfig
from omnisync.testing import CassetteMismatchError, cassette, first_difference

CONFIG = {"model": "m", "base_url": "http://127.0.0.1:8081/v1", "api_key": "sk-test-secret-key-1234567890abcdef", "max_retries": 0}


def test_first_difference_names_the_field():
    recorded = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert first_difference(recorded, recorded) is None
    assert first_difference(recorded, {"model": "m", "messages": [{"role": "user", "content": "hello"}]}) == (
        'body.messages[0].content: recorded "hi", sent "hello"'
    )
    assert first_difference(recorded, {**recorded, "seed": 1}) == "body.seed: recorded (absent), sent 1"


def test_a_request_the_cassette_lacks_fails_naming_cassette_and_field(omnisync_cassette):
    chat = ChatClient(ModelConfig.from_dict(CONFIG))
    with pytest.raises(CassetteMismatchError) as caught:
        with omnisync_cassette("handwritten/tool_loop"):
            chat.complete([{"role": "user", "content": "not what was recorded"}])
    message = str(caught.value)
    assert "handwritten/tool_loop.yaml" in message and "first difference" in message
    assert "body.messages[0]" in message
    shown_in_readme = next(line for line in message.splitlines() if line.startswith("first difference"))
    assert f"    {shown_in_readme}\n" in (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()


def test_a_missing_cassette_says_how_to_record(tmp_path):
    chat = ChatClient(ModelConfig.from_dict(CONFIG))
    with pytest.raises(CassetteMismatchError, match="does not exist; record it once with --omnisync-record-mode=once"):
        with cassette("nothing", tmp_path):
            chat.complete([{"role": "user", "content": "x"}])


def test_recording_scrubs_secrets_and_ignores_varying_fields(tmp_path, caplog, monkeypatch):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import json
    import threading

    monkeypatch.setenv("OPENAI_ORG_ID", "org-env-secret")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-env-secret")
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(dict(self.headers))
            self.rfile.read(int(self.headers["content-length"]))
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "hi"}}]}).encode()
            self.send_response(200)
            for name, value in [("content-type", "application/json"), ("set-cookie", "session=abc"), ("openai-organization", "org-secret")]:
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        chat = ChatClient(ModelConfig.from_dict({**CONFIG, "base_url": f"http://127.0.0.1:{server.server_port}/v1"}))
        with caplog.at_level(logging.DEBUG), cassette("scrub", tmp_path, record_mode="once"):
            chat.complete([{"role": "user", "content": "x"}], user="run-1")
    finally:
        chat.close()
        server.shutdown()
        server.server_close()
    logged = "\n".join(f"{record.getMessage()} {record.args}" for record in caplog.records)
    assert "session=abc" not in logged and "org-secret" not in logged and "sk-test-secret" not in logged
    assert received[0]["OpenAI-Organization"] == "org-env-secret" and received[0]["OpenAI-Project"] == "proj-env-secret"
    text = (tmp_path / "scrub.yaml").read_text()
    assert "sk-test-secret" not in text and "session=abc" not in text and "org-secret" not in text
    assert "org-env-secret" not in text and "proj-env-secret" not in text
    recorded = yaml.safe_load(text)["interactions"][0]
    assert "Authorization" not in recorded["request"]["headers"]
    with cassette("scrub", tmp_path):  # replays though "user" differs: it is ignored by default
        assert chat.complete([{"role": "user", "content": "x"}], user="run-2").content == "hi"
    chat.close()


def test_record_mode_comes_from_the_command_line_only(pytestconfig):
    assert pytestconfig.getoption("--omnisync-record-mode") == "none"
    with pytest.raises(ValueError, match="record_mode must be one of"):
        with cassette("x", record_mode="sometimes"):
            pass
