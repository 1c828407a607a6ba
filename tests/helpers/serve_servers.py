"""Real servers on loopback for the serve tests: the scripted model, and an app under uvicorn."""

from __future__ import annotations

import importlib.util
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import uvicorn

_spec = importlib.util.spec_from_file_location("scripted_model", Path(__file__).resolve().parents[2] / "cassettes" / "scripted_model.py")
assert _spec is not None and _spec.loader is not None
scripted_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scripted_model)


@contextmanager
def scripted_model_server() -> Iterator[str]:
    """cassettes/scripted_model.py answering on a free port; yields its base URL (…/v1)."""
    with http_server(scripted_model._Handler) as base:
        yield base + "/v1"


@contextmanager
def http_server(handler: Any) -> Iterator[str]:
    """A ThreadingHTTPServer with ``handler`` on a free loopback port, in a thread; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def uvicorn_server(app: Any) -> Iterator[str]:
    """``app`` under uvicorn in a thread, on a free loopback port; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=10))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started or not thread.is_alive():
            break
        threading.Event().wait(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@contextmanager
def local_or_remote(local: Any, how: str) -> Iterator[Any]:
    """``local`` itself (``how`` "local"), or a RemoteAgent of it served by ``omnisync serve``'s app ("remote")."""
    if how == "local":
        yield local
        return
    from omnisync.remote import RemoteAgent
    from omnisync.serve import create_app

    with uvicorn_server(create_app(local)) as base, RemoteAgent(base, agent=local.name) as remote:
        yield remote
