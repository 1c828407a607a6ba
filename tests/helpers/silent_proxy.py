"""A loopback TCP proxy to a real server that can go silent: a hung server whose end still acknowledges.

Until :meth:`SilentProxy.go_silent` it forwards both ways. After it, it keeps every
connection open and keeps reading what the client sends (the client's kernel sees its packets
acknowledged, its window open), discards it, and never answers; new connections are accepted
and treated alike. Neither keepalives nor ``tcp_user_timeout`` can tell it from a slow server.
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit


class SilentProxy:
    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.silent = threading.Event()
        self._stop = threading.Event()
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = [self.listener]
        self._selector.register(self.listener, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url_for(self, url: str) -> str:
        """``url`` with its host and port replaced by the proxy's."""
        parts = urlsplit(url)
        credentials = parts.netloc.rpartition("@")[0]
        netloc = f"{credentials}@127.0.0.1:{self.port}" if credentials else f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    def go_silent(self) -> None:
        self.silent.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock in self._sockets:
            sock.close()
        self._selector.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(0.05):
                if key.data is None:
                    self._accept()
                else:
                    self._forward(key.fileobj, key.data)  # type: ignore[arg-type]

    def _accept(self) -> None:
        client, _ = self.listener.accept()
        self._sockets.append(client)
        if self.silent.is_set():
            self._selector.register(client, selectors.EVENT_READ, False)  # read and discarded, no upstream
            return
        server = socket.create_connection(self.upstream)
        self._sockets.append(server)
        self._selector.register(client, selectors.EVENT_READ, server)
        self._selector.register(server, selectors.EVENT_READ, client)

    def _forward(self, source: socket.socket, target: socket.socket | bool) -> None:
        try:
            data = source.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._selector.unregister(source)
            return
        if self.silent.is_set() or target is False:
            return  # the server's end acknowledged it; nothing goes further, nothing comes back
        assert isinstance(target, socket.socket)
        target.sendall(data)


@contextmanager
def silent_proxy_to(url: str, default_port: int) -> Iterator[tuple[SilentProxy, str]]:
    """A proxy to the server of ``url`` and ``url`` rewritten to go through it."""
    parts = urlsplit(url.split(",")[0])
    proxy = SilentProxy(parts.hostname or "127.0.0.1", parts.port or default_port)
    try:
        yield proxy, proxy.url_for(url)
    finally:
        proxy.close()
