import pytest
import requests

from omnisync.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    InternalServerError,
    ModelConnectionError,
    ModelResponseError,
    ModelTimeoutError,
    NotFoundError,
    RateLimitError,
)
from omnisync.model.client import ChatClient
from omnisync.model.completion import parse_completion
from omnisync.model.config import ModelConfig
from omnisync.model.retry import RETRY_AFTER_CAP, retry_after_seconds
from helpers.fake_http import completion, install
from helpers.openapi import openapi_or_skip

LOCAL = {"provider": "openai", "model": "test-model", "base_url": "http://127.0.0.1:9/v1"}


def client(sleeps=None, **config):
    return ChatClient(ModelConfig.from_dict({**LOCAL, **config}), sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_posts_to_chat_completions_with_model_messages_and_sampling(monkeypatch):
    http = install(monkeypatch, [completion("hi", prompt_tokens=3, completion_tokens=1)])
    answer = client(temperature=0.2, api_key="secret").complete([{"role": "user", "content": "hello"}])
    assert answer.content == "hi" and answer.usage == {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    assert http.sent == [{"model": "test-model", "messages": [{"role": "user", "content": "hello"}], "temperature": 0.2}]
    assert http.headers[0]["Authorization"] == "Bearer secret"


def test_request_bodies_validate_against_openai_description(monkeypatch):
    openapi = openapi_or_skip()
    http = install(monkeypatch, [completion("a"), completion("b")])
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}, "required": []}}}]
    chat = client(temperature=0, max_completion_tokens=50, seed=1)
    chat.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    chat.complete(
        [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "r"},
        ],
        tools=tools,
    )
    for body in http.sent:
        openapi.check_request(body)


def test_hand_written_responses_validate(monkeypatch):
    openapi = openapi_or_skip()
    openapi.check_response(completion("x", prompt_tokens=1, completion_tokens=1))
    openapi.check_response(completion(None, [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]))


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
def test_retries_retryable_statuses_then_succeeds(monkeypatch, status):
    http = install(monkeypatch, [(status, {"error": {"message": "busy"}}, {}), completion("finally")])
    sleeps = []
    assert client(sleeps).complete([{"role": "user", "content": "x"}]).content == "finally"
    assert len(http.sent) == 2 and len(sleeps) == 1


def test_retries_connection_errors_and_connect_timeouts(monkeypatch):
    install(monkeypatch, [requests.ConnectionError("refused"), requests.ConnectTimeout("slow"), completion("up")])
    assert client(max_retries=2).complete([{"role": "user", "content": "x"}]).content == "up"


def test_a_read_timeout_is_not_retried_and_says_so(monkeypatch):
    """The server got the request and may still be generating: posting again would pay twice."""
    http = install(monkeypatch, lambda body: requests.ReadTimeout("slow"))
    with pytest.raises(ModelTimeoutError, match=r"did not answer within 5 s; .* is not retried .* \(1 attempt over \d+\.\d s\)"):
        client(max_retries=2, timeout=5).complete([{"role": "user", "content": "x"}])
    assert len(http.sent) == 1


def test_a_connection_error_says_how_many_attempts_over_how_long(monkeypatch):
    http = install(monkeypatch, lambda body: requests.ConnectTimeout("no route"))
    with pytest.raises(ModelTimeoutError, match=r"did not accept a connection within 5 s \(3 attempts over \d+\.\d s\)$"):
        client(max_retries=2, timeout=5).complete([{"role": "user", "content": "x"}])
    assert len(http.sent) == 3


def test_a_404_from_a_base_url_without_v1_hints_at_it(monkeypatch):
    install(monkeypatch, lambda body: (404, {"detail": "Not Found"}, {}))
    with pytest.raises(NotFoundError, match=r"does not end in /v1.*try base_url='http://127.0.0.1:9/v1'"):
        client(base_url="http://127.0.0.1:9").complete([{"role": "user", "content": "x"}])
    with pytest.raises(NotFoundError) as caught:
        client().complete([{"role": "user", "content": "x"}])
    assert "Hint" not in str(caught.value)


def test_honours_retry_after_up_to_a_cap(monkeypatch):
    install(monkeypatch, [(429, {"error": {"message": "slow down"}}, {"retry-after": "7"}), (429, {}, {"retry-after": "9999"}), completion()])
    sleeps = []
    client(sleeps).complete([{"role": "user", "content": "x"}])
    assert sleeps[0] == 7.0
    assert sleeps[1] < RETRY_AFTER_CAP  # too long a wait is replaced by backoff


def test_retry_after_accepts_http_dates():
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_seconds("2.5") == 2.5 and retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_attempts_are_bounded_and_the_last_error_is_raised(monkeypatch):
    http = install(monkeypatch, lambda body: (503, {"error": {"message": "down"}}, {"x-request-id": "req_42"}))
    with pytest.raises(InternalServerError) as caught:
        client(max_retries=3).complete([{"role": "user", "content": "x"}])
    assert len(http.sent) == 4
    assert caught.value.status_code == 503 and caught.value.request_id == "req_42" and "down" in str(caught.value)


@pytest.mark.parametrize("status,error", [(400, BadRequestError), (401, AuthenticationError)])
def test_other_client_errors_are_not_retried(monkeypatch, status, error):
    http = install(monkeypatch, lambda body: (status, {"error": {"message": "nope", "type": "invalid_request_error"}}, {}))
    with pytest.raises(error) as caught:
        client().complete([{"role": "user", "content": "x"}])
    assert len(http.sent) == 1 and caught.value.body["error"]["message"] == "nope"


def test_rate_limit_error_is_typed(monkeypatch):
    install(monkeypatch, lambda body: (429, "plain text", {}))
    with pytest.raises(RateLimitError, match="plain text"):
        client(max_retries=0).complete([{"role": "user", "content": "x"}])


def test_unreachable_server_raises_connection_error(monkeypatch):
    install(monkeypatch, lambda body: requests.ConnectionError("refused"))
    with pytest.raises(ModelConnectionError, match="could not reach"):
        client(max_retries=1).complete([{"role": "user", "content": "x"}])


def test_timeout_is_its_own_error(monkeypatch):
    install(monkeypatch, lambda body: requests.Timeout())
    with pytest.raises(ModelTimeoutError, match="did not answer within 5 s"):
        client(max_retries=0, timeout=5).complete([{"role": "user", "content": "x"}])


def test_a_body_that_is_not_a_completion_is_an_error(monkeypatch):
    install(monkeypatch, [(200, "<html>", {})])
    with pytest.raises(ModelResponseError):
        client(max_retries=0).complete([{"role": "user", "content": "x"}])
    with pytest.raises(ModelResponseError):
        parse_completion({"object": "chat.completion"})


def test_tool_arguments_sent_as_an_object_are_kept_as_a_json_string():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"city": "Zürich", "days": 2}}}
    answer = parse_completion({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]})
    assert answer.tool_calls[0]["function"]["arguments"] == '{"city": "Zürich", "days": 2}'


@pytest.mark.parametrize(
    "message",
    [
        "just a string",
        {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}]},
    ],
)
def test_a_malformed_message_or_tool_call_is_a_response_error(message):
    with pytest.raises(ModelResponseError, match="not a chat completion"):
        parse_completion({"choices": [{"message": message}]})


def test_accepts_responses_without_optional_fields():
    answer = parse_completion({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})
    assert answer.content == "hi" and answer.usage == {} and answer.finish_reason is None


def test_each_thread_gets_its_own_session(monkeypatch):
    import threading

    install(monkeypatch, lambda body: completion())
    chat = client()
    seen = []

    def work():
        chat.complete([{"role": "user", "content": "x"}])
        seen.append(id(chat._transport._session()))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == 3
    chat.close()


def test_missing_key_for_openai_fails_when_built_naming_both_ways(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match="api_key.*OPENAI_API_KEY"):
        ModelConfig.from_dict({"provider": "openai", "model": "gpt-5.4-mini"})


def test_environment_supplies_base_url_and_key(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    config = ModelConfig.from_dict({"model": "m"})
    assert config.base_url == "http://127.0.0.1:8080/v1" and config.api_key == "from-env"
    assert "from-env" not in repr(config)
    assert ModelConfig.from_dict({"model": "m", "api_key": "arg"}).api_key == "arg"


@pytest.mark.parametrize(
    "config,message",
    [
        ({"provider": "openai"}, "needs a model name"),
        ({"model": ""}, "needs a model name"),
        ({"model": "m", "provider": "anthropic"}, "Unknown provider: 'anthropic'"),
        ({"model": "m", "temprature": 1}, "Unknown model_config key"),
        ({"model": "m", "timeout": 0}, "timeout must be a positive number"),
        ({"model": "m", "max_retries": -1}, "max_retries must be a whole number"),
        ({"model": "m", "base_url": "localhost:8080"}, "base_url must be an http"),
        ("gpt", "model_config must be a dict"),
    ],
)
def test_bad_model_config_says_what_is_allowed(config, message):
    if isinstance(config, dict):
        config = {"base_url": "http://127.0.0.1:9/v1", **config}
    with pytest.raises(ConfigurationError, match=message):
        ModelConfig.from_dict(config)


def test_the_timeout_comes_from_the_config_then_omnisync_model_timeout(monkeypatch):
    monkeypatch.setenv("OMNISYNC_MODEL_TIMEOUT", "300")
    assert ModelConfig.from_dict(LOCAL).timeout == 300.0
    assert ModelConfig.from_dict({**LOCAL, "timeout": 7}).timeout == 7.0
    monkeypatch.setenv("OMNISYNC_MODEL_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="OMNISYNC_MODEL_TIMEOUT must be a positive number of seconds, not 'soon'"):
        ModelConfig.from_dict(LOCAL)
    monkeypatch.delenv("OMNISYNC_MODEL_TIMEOUT")
    assert ModelConfig.from_dict(LOCAL).timeout == 60.0


def test_an_assistant_message_of_tool_calls_alone_is_sent_with_empty_content_not_null():
    from omnisync.model.client import ChatClient
    from omnisync.model.config import ModelConfig

    client = ChatClient(ModelConfig.from_dict({"model": "m", "base_url": "http://127.0.0.1:9/v1"}))
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    stored = [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "assistant", "content": None}]
    body = client.request_body(stored)
    assert body["messages"][0] == {"role": "assistant", "content": "", "tool_calls": [call]}
    assert body["messages"][1] == {"role": "assistant", "content": None}  # no calls: left as it is
    assert stored[0]["content"] is None  # what the caller passed is not changed


def test_threads_retrying_at_once_each_keep_their_own_attempts(monkeypatch):
    """One client's retry rules serve every thread: each thread's attempts are its own."""
    import threading

    tried: dict[int, int] = {}
    barrier = threading.Barrier(4)

    def answer(body):
        thread = threading.get_ident()
        tried[thread] = tried.get(thread, 0) + 1
        if tried[thread] == 1:
            barrier.wait(5)  # every thread is between its first and second attempt at once
            return (503, {"error": {"message": "busy"}}, {})
        return completion(f"thread {thread}")

    http = install(monkeypatch, answer)
    chat = client(max_retries=1)
    answers: list[str | None] = []
    threads = [threading.Thread(target=lambda: answers.append(chat.complete([{"role": "user", "content": "x"}]).content)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == sorted(f"thread {ident}" for ident in tried) and len(http.sent) == 8
    assert set(tried.values()) == {2}


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("limit,shown", [({"max_tokens": 256}, "now max_tokens=256"), ({}, "now none set")])
def test_a_read_timeout_names_every_setting_that_helps(monkeypatch, streamed, limit, shown):
    """A longer timeout (model_config or OMNISYNC_MODEL_TIMEOUT) or a shorter answer (an output limit)."""
    install(monkeypatch, lambda body: requests.ReadTimeout("slow"))
    chat = client(max_retries=0, timeout=5, **limit)
    with pytest.raises(ModelTimeoutError) as error:
        chat.stream([{"role": "user", "content": "x"}]) if streamed else chat.complete([{"role": "user", "content": "x"}])
    message = str(error.value)
    for knob in ("within 5 s", "model_config 'timeout'", "OMNISYNC_MODEL_TIMEOUT", "model_config 'max_tokens'", "OMNISYNC_MAX_TOKENS", shown):
        assert knob in message, knob


def test_the_deadline_bounds_a_body_that_trickles_in_a_byte_at_a_time():
    """Each byte comes well within the read timeout, the whole body never does: the call's
    deadline ends it, however the body arrives (issue 30)."""
    import http.server
    import threading
    import time as clock

    from omnisync.errors import ModelTimeoutError
    from omnisync.model.client import ChatClient
    from omnisync.model.config import ModelConfig

    class Trickle(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(200):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    clock.sleep(0.1)
            except OSError:
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = ModelConfig.from_dict(
            {"provider": "openai", "model": "m", "base_url": f"http://127.0.0.1:{server.server_address[1]}/v1", "max_retries": 0, "timeout": 5, "deadline": 1}
        )
        started = clock.monotonic()
        with pytest.raises(ModelTimeoutError, match="deadline"):
            ChatClient(config).complete([{"role": "user", "content": "hi"}])
        assert clock.monotonic() - started < 3
    finally:
        server.shutdown()
        server.server_close()


def test_a_body_of_known_length_is_read_in_one_read_and_its_connection_kept(monkeypatch):
    """No read waits for the end of a body whose Content-Length came whole; the connection goes back
    to the pool for the next call. A compressed body (its length is not what is read) is read to its end."""
    import gzip
    import http.server
    import json as jsonlib
    import threading

    from omnisync.model import body as body_module

    class Answer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            answer = jsonlib.dumps(completion("whole")).encode()
            zipped = self.path.endswith("/gzip/chat/completions")
            sent = gzip.compress(answer) if zipped else answer
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if zipped:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(sent)))
            self.end_headers()
            self.wfile.write(sent)

        def log_message(self, *args: object) -> None:
            pass

    reads = []
    plain_reader = body_module.reader

    def counting_reader(*args):
        read = plain_reader(*args)
        return lambda: reads.append(read()) or reads[-1]

    monkeypatch.setattr("omnisync.model.client.body_reader", counting_reader)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        chat = client(base_url=base)
        for _ in range(3):
            assert chat.complete([{"role": "user", "content": "hi"}]).content == "whole"
        assert len(reads) == 3 and all(reads)  # one read a call, none for the body's end
        pool = next(iter(chat._transport._session().adapters["http://"].poolmanager.pools._container.values()))
        assert pool.num_connections == 1 and pool.num_requests == 3
        chat.close()
        reads.clear()
        zipped = client(base_url=f"{base}/gzip")
        assert zipped.complete([{"role": "user", "content": "hi"}]).content == "whole"
        assert reads[-1] == b""  # read to its end
        zipped.close()
    finally:
        server.shutdown()
        server.server_close()
