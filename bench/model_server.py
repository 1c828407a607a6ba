"""An instant OpenAI-compatible model for the benchmark: POST /v1/chat/completions answers at once.

It reads the request body and answers one fixed, valid chat completion, so what a run costs
on top of it is the SDK's cost, not a model's. Threaded, HTTP/1.1 keep-alive, Nagle off (so a
response never waits for a delayed ACK).

    python bench/model_server.py [--port 0]     # prints "http://127.0.0.1:PORT/v1", serves until killed

With ``"stream": true`` it answers that text as server-sent events, one chunk per HTTP
chunk (one write each): as many content chunks as the request's ``max_tokens`` (the answer's
words, repeated as needed), or one per word of the answer without it; then a finish_reason
chunk, a usage chunk if ``stream_options.include_usage`` asks, and ``data: [DONE]``. A whole
(not streamed) answer to a request with ``max_tokens`` holds the same text as that stream.

It binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = (
    "Sure. Here is a short answer to that: the setting you asked about lives in the project's "
    "configuration file, under the section for memory. Change the value, restart the worker, and "
    "the next run will pick it up. If anything else looks off, tell me what you see and we can go "
    "through it step by step."
)

_BODY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench-instant",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 60, "total_tokens": 160},
    },
    separators=(",", ":"),
).encode()


_WORDS = [word + " " for word in ANSWER.split()]


def _event(payload: dict[str, object] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    event = f"data: {data}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(event), event)


def _chunk(delta: dict[str, object], finish_reason: str | None = None) -> dict[str, object]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench-instant",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def stream_events(count: int, include_usage: bool) -> Iterator[bytes]:
    """The HTTP chunks of a streamed answer with ``count`` content chunks, made as they are sent."""
    yield _event(_chunk({"role": "assistant", "content": ""}))
    for i in range(count):
        yield _event(_chunk({"content": _WORDS[i % len(_WORDS)]}))
    yield _event(_chunk({}, "stop"))
    if include_usage:
        usage = {"prompt_tokens": 100, "completion_tokens": count, "total_tokens": 100 + count}
        yield _event({**_chunk({}), "choices": [], "usage": usage})
    yield _event("[DONE]")
    yield b"0\r\n\r\n"


def whole_body(count: int) -> bytes:
    """A whole completion whose text is what ``count`` streamed chunks add up to."""
    answer = json.loads(_BODY)
    answer["choices"][0]["message"]["content"] = "".join(_WORDS[i % len(_WORDS)] for i in range(count))
    answer["usage"] = {"prompt_tokens": 100, "completion_tokens": count, "total_tokens": 100 + count}
    return json.dumps(answer, separators=(",", ":")).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        # only a request that streams or sets max_tokens is parsed: the rest is answered as before
        body = json.loads(raw) if b'"stream"' in raw or b'"max_tokens"' in raw else {}
        if self.path.rstrip("/").endswith("/chat/completions") and body.get("stream"):
            self._stream(body)
        elif self.path.rstrip("/").endswith("/chat/completions"):
            self._send(200, whole_body(int(body["max_tokens"])) if body.get("max_tokens") else _BODY)
        else:
            self._send(404, b'{"error":{"message":"not found"}}')

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, b'{"object":"list","data":[{"id":"bench-instant","object":"model"}]}')
        else:
            self._send(404, b'{"error":{"message":"not found"}}')

    def _send(self, status: int, body: bytes) -> None:
        head = (
            f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: keep-alive\r\n\r\n"
        ).encode()
        self.wfile.write(head + body)  # one write: headers and body in one segment

    def _stream(self, body: dict[str, object]) -> None:
        count = body.get("max_tokens") or len(_WORDS)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))  # type: ignore[union-attr]
        events = stream_events(int(count), include_usage)  # type: ignore[call-overload]
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        self.wfile.write(head + next(events))
        for event in events:
            self.wfile.write(event)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops the SYNs of a burst of new connections (16 client
    # threads starting at once), and each dropped one costs its client a 1 s retransmit.
    request_queue_size = 128


def serve(port: int = 0) -> ThreadingHTTPServer:
    """A running server on 127.0.0.1 (in a daemon thread); ``server.server_address[1]`` is its port."""
    server = _Server(("127.0.0.1", port), _Handler)
    threading.Thread(target=server.serve_forever, name="bench-model-server", daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = _Server(("127.0.0.1", args.port), _Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.exit(0)


if __name__ == "__main__":
    main()
