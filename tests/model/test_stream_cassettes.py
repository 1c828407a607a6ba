"""Streamed replies in cassettes: recorded from a chunked event stream, replayed as the same chunks."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import yaml

from omnisync.model.client import ChatClient
from omnisync.model.config import ModelConfig
from omnisync.model.stream import TextFragment
from omnisync.testing import cassette
from helpers.fake_stream import chunk, tool_fragment

SCRIPTED_MODEL = {"provider": "openai", "model": "gpt-5.4-mini", "base_url": "http://127.0.0.1:8081/v1", "max_retries": 0}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False},
        },
    }
]
EVENTS = [
    chunk("", role="assistant"),
    chunk("Streamed "),
    chunk("words"),
    chunk(tool_calls=[tool_fragment(0, id="call_x", name="lookup", arguments='{"ci')]),
    chunk(tool_calls=[tool_fragment(0, arguments='ty": "Oslo"}')]),
    chunk(finish_reason="tool_calls"),
    chunk(choices=False, usage={"prompt_tokens": 5, "completion_tokens": 7}),
]


class _ChunkedStream(BaseHTTPRequestHandler):
    """Sends EVENTS with a keep-alive comment, cutting HTTP chunks in the middle of events and of CRLFs."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        body = (": keep-alive\r\n\r\n" + "".join(f"data: {json.dumps(e)}\r\n\r\n" for e in EVENTS) + "data: [DONE]\r\n\r\n").encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for start in range(0, len(body), 37):
            piece = body[start : start + 37]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


def _streamed(chat, text="weather?"):
    stream = chat.stream([{"role": "user", "content": text}], tools=TOOLS)
    with stream:
        return list(stream), stream.completion


def test_a_streamed_reply_records_and_replays_as_the_same_chunks(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChunkedStream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    chat = ChatClient(ModelConfig.from_dict({**SCRIPTED_MODEL, "base_url": f"http://127.0.0.1:{server.server_port}/v1"}))
    try:
        live = _streamed(chat)
        with cassette("streamed", tmp_path, record_mode="once"):
            recorded = _streamed(chat)
    finally:
        chat.close()
        server.shutdown()
        server.server_close()
    with cassette("streamed", tmp_path):
        replayed = _streamed(chat)
    chat.close()
    assert live == recorded == replayed
    deltas, completion = replayed
    assert deltas[:2] == [TextFragment("Streamed "), TextFragment("words")]
    assert completion.tool_calls[0]["function"] == {"name": "lookup", "arguments": '{"city": "Oslo"}'}
    assert completion.usage == {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    response = yaml.safe_load((tmp_path / "streamed.yaml").read_text())["interactions"][0]["response"]
    assert response["headers"]["content-type"] == ["text/event-stream"] and "data: [DONE]" in response["body"]["string"]


def test_the_hand_written_streamed_cassette_replays(omnisync_cassette):
    chat = ChatClient(ModelConfig.from_dict(SCRIPTED_MODEL))
    with omnisync_cassette("handwritten/streamed"):
        deltas, tool_turn = _streamed(chat, 'Weather in two cities? use lookup({"city": "Paris"}) use lookup({"city": "Oslo"})')
        text_deltas, text_turn = _streamed(chat, "Say something long enough to arrive in several chunks.")
    chat.close()
    assert tool_turn.finish_reason == "tool_calls" and not [d for d in deltas if isinstance(d, TextFragment)]
    assert [c["function"]["arguments"] for c in tool_turn.tool_calls] == ['{"city": "Paris"}', '{"city": "Oslo"}']
    assert len(text_deltas) > 2 and text_turn.content == "echo: Say something long enough to arrive in several chunks."
    assert text_turn.usage["total_tokens"] > 0

