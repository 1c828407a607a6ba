"""A pass-through proxy used only while recording cassettes/recorded/ from a local llama.cpp server.

The small base model there rambles until its context is full when a request sets no limit,
so the proxy adds ``max_tokens`` (default 48) to requests that have none, forwards them to the
real server, and returns the server's response bytes unchanged. The cassette keeps the request
exactly as omnisync sent it.

    python cassettes/capping_proxy.py --port 8090 --upstream http://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import json
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def serve(port: int, upstream: str, max_tokens: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            body.setdefault("max_tokens", max_tokens)
            request = urllib.request.Request(
                upstream + self.path, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=600) as response:
                payload = response.read()
                status = response.status
                headers = [(k, v) for k, v in response.getheaders() if k.lower() not in ("transfer-encoding", "connection")]
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--upstream", default="http://127.0.0.1:8080")
    parser.add_argument("--max-tokens", type=int, default=48)
    options = parser.parse_args()
    serve(options.port, options.upstream, options.max_tokens)
