"""A slow streaming model on loopback: one word every 0.1 s for up to 60 s (or, with hang, no
answer to the first request), for races between drivers that must overlap a model call."""

from __future__ import annotations

import http.server
import json
import threading
import time

from helpers.fake_http import completion


class SlowModel(http.server.ThreadingHTTPServer):
    """Streams one word every 0.1 s for up to 60 s (or, with hang, never answers)."""

    daemon_threads = True

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.requests = 0
        super().__init__(("127.0.0.1", 0), _SlowHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SlowModel

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests += 1
        if self.server.hang and self.server.requests == 1:
            time.sleep(60)
            return
        if not body.get("stream"):
            payload = json.dumps(completion("answered again")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for n in range(600):
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"content": f"w{n} "}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:
            return

    def log_message(self, *args: object) -> None:
        pass
