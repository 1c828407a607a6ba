import json
import threading
import time
from http.server import ThreadingHTTPServer

import pytest
import requests
from urllib3.exceptions import ProtocolError

from omnisync.errors import (
    BadRequestError,
    ModelResponseError,
    ModelStreamError,
    RateLimitError,
    StreamInterruptedError,
    StreamServerError,
)
from omnisync.model.client import ChatClient
from omnisync.model.config import ModelConfig
from omnisync.model.retry import should_retry
from omnisync.model import stream as stream_module
from omnisync.model.stream import CompletionStream, TextFragment, ToolCallFragment
from helpers.fake_http import completion
from helpers.fake_stream import PiecedBody, Streamed, chunk, install, sse, tool_fragment
from helpers.openapi import openapi_or_skip, stream_chunk_errors
from helpers.serve_servers import scripted_model

LOCAL = {"provider": "openai", "model": "test-model", "base_url": "http://127.0.0.1:9/v1"}
HELLO = [{"role": "user", "content": "hello"}]
USAGE = {"prompt_tokens": 3, "completion_tokens": 2}


def client(sleeps=None, **config):
    return ChatClient(ModelConfig.from_dict({**LOCAL, **config}), sleep=(sleeps.append if sleeps is not None else lambda s: None))


def text_stream(*pieces, usage=USAGE):
    events = [chunk("", role="assistant"), *(chunk(p) for p in pieces), chunk(finish_reason="stop")]
    if usage:
        events.append(chunk(choices=False, usage=usage))
    return sse(events)


def drain(stream):
    with stream:
        return list(stream)


def test_text_deltas_and_usage_from_the_last_chunk(monkeypatch):
    http = install(monkeypatch, [Streamed(text_stream("Hel", "lo"))])
    stream = client().stream(HELLO)
    assert drain(stream) == [TextFragment("Hel"), TextFragment("lo")]
    assert stream.completion.content == "Hello" and stream.completion.finish_reason == "stop"
    assert stream.completion.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert http.sent[0]["stream"] is True and http.sent[0]["stream_options"] == {"include_usage": True}


def test_a_streamed_reply_assembles_to_what_complete_returns(monkeypatch):
    install(monkeypatch, [completion("Hello there", prompt_tokens=3, completion_tokens=2), Streamed(text_stream("Hello", " there"))])
    chat = client()
    whole = chat.complete(HELLO)
    stream = chat.stream(HELLO)
    drain(stream)
    assert stream.completion == whole


def test_parallel_tool_calls_interleaved_are_assembled_by_index(monkeypatch):
    fragments = [
        [tool_fragment(0, id="call_a", name="weather", arguments="")],
        [tool_fragment(1, id="call_b", name="time", arguments='{"tz"')],
        [tool_fragment(0, arguments='{"city": ')],
        [tool_fragment(1, arguments=': "UTC"}')],
        [tool_fragment(0, arguments='"Paris"}')],
    ]
    events = [chunk(role="assistant"), *(chunk(tool_calls=f) for f in fragments), chunk(finish_reason="tool_calls")]
    install(monkeypatch, [Streamed(sse(events))])
    stream = client().stream(HELLO, tools=[{"type": "function", "function": {"name": "weather"}}])
    deltas = drain(stream)
    assert deltas[0] == ToolCallFragment(0, "call_a", "weather", "") and deltas[2] == ToolCallFragment(0, None, None, '{"city": ')
    assert stream.completion.content is None and stream.completion.finish_reason == "tool_calls"
    assert stream.completion.tool_calls == [
        {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "time", "arguments": '{"tz": "UTC"}'}},
    ]


def test_a_tool_call_without_a_name_is_refused(monkeypatch):
    events = [chunk(tool_calls=[tool_fragment(0, id="call_a", arguments="{}")]), chunk(finish_reason="tool_calls")]
    install(monkeypatch, [Streamed(sse(events))])
    with pytest.raises(ModelResponseError, match="tool call 0 came without a name"):
        drain(client().stream(HELLO))


@pytest.mark.parametrize("split", [1, 7, 64])
def test_events_split_anywhere_and_keep_alives_between_them(monkeypatch, split):
    body = b": keep-alive\r\n\r\n" + text_stream("a", "b").replace(b"\n", b"\r\n")
    install(monkeypatch, [Streamed(*(body[i : i + split] for i in range(0, len(body), split)))])
    stream = client().stream(HELLO)
    assert "".join(d.text for d in drain(stream)) == "ab" and stream.completion.usage["total_tokens"] == 5


def test_a_server_that_rejects_stream_options_is_asked_again_without_them_once(monkeypatch):
    refusal = (400, {"error": {"message": "Unrecognized request argument supplied: stream_options", "type": "invalid_request_error"}}, {})
    http = install(monkeypatch, [refusal, Streamed(text_stream("a", usage=None)), Streamed(text_stream("b", usage=None))])
    chat = client(max_retries=0)
    first = chat.stream(HELLO)
    drain(first)
    drain(chat.stream(HELLO))
    assert first.completion.content == "a" and first.completion.usage == {}
    assert ["stream_options" in body for body in http.sent] == [True, False, False]


def test_another_bad_request_is_not_retried_without_stream_options(monkeypatch):
    http = install(monkeypatch, [(400, {"error": {"message": "messages is too long"}}, {})])
    with pytest.raises(BadRequestError, match="too long"):
        client().stream(HELLO)
    assert len(http.sent) == 1


def test_a_server_that_ignores_stream_options_streams_without_usage(monkeypatch):
    install(monkeypatch, [Streamed(text_stream("a", usage=None))])
    stream = client().stream(HELLO)
    drain(stream)
    assert stream.completion.content == "a" and stream.completion.usage == {}


def test_a_server_that_ignores_stream_true_answers_with_one_completion(monkeypatch):
    install(monkeypatch, [completion("whole", prompt_tokens=1, completion_tokens=1)])
    stream = client().stream(HELLO)
    assert drain(stream) == [TextFragment("whole")] and stream.completion.usage["total_tokens"] == 2


def test_an_error_object_in_the_stream_is_typed_and_keeps_the_partial_text(monkeypatch):
    error = {"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}
    install(monkeypatch, [Streamed(sse([chunk("Par"), chunk("tial"), error], done=False)), Streamed(text_stream("again"))])
    stream = client().stream(HELLO)
    seen = []
    with pytest.raises(StreamServerError, match="had an error") as raised:
        for delta in stream:
            seen.append(delta.text)
    assert seen == ["Par", "tial"] and raised.value.partial.content == "Partial"
    assert raised.value.body["type"] == "server_error"


def test_an_error_event_is_typed(monkeypatch):
    install(monkeypatch, [Streamed(b'event: error\ndata: {"message": "overloaded"}\n\n')])
    with pytest.raises(StreamServerError, match="overloaded"):
        drain(client().stream(HELLO))


def test_an_event_that_is_not_json_is_typed(monkeypatch):
    install(monkeypatch, [Streamed(b"data: <html>\n\n")])
    with pytest.raises(ModelStreamError, match="not a JSON object"):
        drain(client().stream(HELLO))


def test_a_stream_ending_without_done_or_finish_reason_is_interrupted(monkeypatch):
    install(monkeypatch, [Streamed(sse([chunk("half an ans")], done=False) + b'data: {"id": "chatcmpl-te')])
    with pytest.raises(StreamInterruptedError, match="in the middle of an event") as raised:
        drain(client().stream(HELLO))
    assert raised.value.partial.content == "half an ans" and raised.value.partial.tool_calls == []


def test_a_stream_ending_without_done_after_a_finish_reason_is_complete(monkeypatch):
    install(monkeypatch, [Streamed(sse([chunk("done"), chunk(finish_reason="stop")], done=False))])
    stream = client().stream(HELLO)
    drain(stream)
    assert stream.completion.content == "done" and stream.completion.finish_reason == "stop"


def test_a_stream_that_breaks_after_its_first_byte_is_never_posted_again(monkeypatch):
    broken = Streamed(sse([chunk("Hel")], done=False), ProtocolError("Connection broken: IncompleteRead"))
    http = install(monkeypatch, [broken, Streamed(text_stream("Hello"))])
    with pytest.raises(StreamInterruptedError, match="broke off") as raised:
        drain(client(max_retries=3).stream(HELLO))
    assert len(http.sent) == 1 and raised.value.partial.content == "Hel"
    assert not should_retry(raised.value)  # nor would the retry rules post it again


def test_failures_before_the_first_byte_are_retried_honouring_retry_after(monkeypatch):
    sleeps = []
    answers = [
        requests.ConnectionError("refused"),
        requests.ReadTimeout("no headers"),
        (503, {"error": {"message": "busy"}}, {"retry-after": "2"}),
        Streamed(text_stream("ok")),
    ]
    http = install(monkeypatch, answers)
    stream = client(sleeps, max_retries=3).stream(HELLO)
    drain(stream)
    assert stream.completion.content == "ok" and len(http.sent) == 4 and sleeps[2] == 2.0


def test_retries_before_the_first_byte_stop_at_max_retries(monkeypatch):
    http = install(monkeypatch, [(429, {"error": {"message": "slow down"}}, {})] * 2)
    with pytest.raises(RateLimitError):
        client(max_retries=1).stream(HELLO)
    assert len(http.sent) == 2


def test_closing_early_closes_the_response_and_reads_no_more(monkeypatch):
    streamed = Streamed(*(sse([chunk(word)], done=False) for word in ("one ", "two ", "three")))
    install(monkeypatch, [streamed])
    with client().stream(HELLO) as stream:
        for delta in stream:
            break
    assert delta == TextFragment("one ") and streamed.body.closed and streamed.body.reads == 1


def test_the_deadline_ends_a_trickling_stream():
    response = requests.Response()
    response.raw = PiecedBody([sse([chunk("a")], done=False), sse([chunk("b")], done=False), sse([chunk("c")])])
    response.headers["content-type"] = "text/event-stream"
    response.url = "http://127.0.0.1:9/v1/chat/completions"
    ticks = iter([1.0, 11.0])
    stream = CompletionStream(response, deadline_at=10.0, clock=lambda: next(ticks))
    with pytest.raises(StreamInterruptedError, match="deadline") as raised:
        list(stream)
    assert raised.value.partial.content == "ab" and response.raw.closed


def test_the_completion_is_not_there_before_the_stream_finished(monkeypatch):
    install(monkeypatch, [Streamed(text_stream("a"))])
    with client().stream(HELLO) as stream:
        with pytest.raises(RuntimeError, match="iterate it to the end"):
            stream.completion


def test_hand_written_chunks_validate_and_a_wrong_one_does_not():
    openapi_or_skip()
    assert stream_chunk_errors(chunk("x")) == [] and stream_chunk_errors(chunk(choices=False, usage=USAGE)) == []
    wrong = {**chunk("x"), "object": "chat.completion"}
    assert any("object" in problem for problem in stream_chunk_errors(wrong))


class _CountingModel(scripted_model._Handler):
    """The scripted model, counting the connections it accepts; ``hold`` seconds before a stream's last chunk."""

    connections: list[object] = []
    hold = 0.0

    def setup(self):
        self.connections.append(self.client_address)
        super().setup()

    def _stream(self, body):
        if not self.hold:
            return super()._stream(body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in [*(f"data: {json.dumps(c)}\n\n".encode() for c in scripted_model.stream_chunks(body)), b"data: [DONE]\n\n"]:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        time.sleep(self.hold)  # a server that keeps its body open after [DONE]


@pytest.fixture
def counting_model(monkeypatch):
    monkeypatch.setattr(_CountingModel, "connections", [])
    monkeypatch.setattr(_CountingModel, "hold", 0.0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CountingModel)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _streamed_text(chat):
    with chat.stream(HELLO) as stream:
        text = "".join(delta.text for delta in stream if isinstance(delta, TextFragment))
    assert stream.completion.finish_reason == "stop"
    return text


def test_streamed_calls_read_to_their_end_share_one_connection(counting_model):
    chat = client(base_url=f"http://127.0.0.1:{counting_model.server_address[1]}/v1")
    try:
        assert _streamed_text(chat) and _streamed_text(chat) and _streamed_text(chat)
    finally:
        chat.close()
    assert len(_CountingModel.connections) == 1


def test_a_body_left_open_after_done_ends_the_stream_and_drops_its_connection(counting_model, monkeypatch):
    monkeypatch.setattr(_CountingModel, "hold", 2.0)
    monkeypatch.setattr(stream_module, "END_WAIT_SECONDS", 0.05)
    chat = client(base_url=f"http://127.0.0.1:{counting_model.server_address[1]}/v1")
    try:
        assert _streamed_text(chat) == _streamed_text(chat)
    finally:
        chat.close()
    assert len(_CountingModel.connections) == 2
