"""An instant OpenAI-compatible model for the benchmark: POST /v1/chat/completions answers at once.

It reads the request body and answers one fixed, valid chat completion, so what a run costs
on top of it is the SDK's cost, not a model's. Threaded, HTTP/1.1 keep-alive, Nagle off (so a
response never waits for a delayed ACK).

    python bench/model_server.py [--port 0]     # prints "http://127.0.0.1:PORT/v1", serves until killed

It binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path.rstrip("/").endswith("/chat/completions"):
            self._send(200, _BODY)
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

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def serve(port: int = 0) -> ThreadingHTTPServer:
    """A running server on 127.0.0.1 (in a daemon thread); ``server.server_address[1]`` is its port."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="bench-model-server", daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    server.daemon_threads = True
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
