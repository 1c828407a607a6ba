"""A response body read as it arrives, no read waiting past the call's deadline.

A read of a fixed size waits until that many bytes came: a server that trickles its body a
byte at a time would keep it waiting for as long as it likes, each byte within the read
timeout. So a body is read with ``read1`` (whatever is there), and before each read the
socket's timeout is cut to what is left of the call's deadline: the deadline bounds the whole
call however the body arrives. A body whose length the headers give (and that is not
compressed) is complete once that many bytes came: no read waits for its end.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import requests
import urllib3

READ_SIZE = 65536


def reader(response: requests.Response, deadline_at: float, clock: Callable[[], float]) -> Callable[[], bytes]:
    """Read what of ``response``'s body is there (b"" at its end), waiting no later than ``deadline_at``."""
    raw = response.raw
    if isinstance(raw, urllib3.response.BaseHTTPResponse) and hasattr(raw, "read1"):
        sock = _socket_of(raw)
        if sock is None:
            return lambda: raw.read1(READ_SIZE, decode_content=True)
        each = sock.gettimeout()

        def read() -> bytes:
            left = max(deadline_at - clock(), 0.001)
            sock.settimeout(left if each is None else min(each, left))
            return raw.read1(READ_SIZE, decode_content=True)

        return read
    if hasattr(raw, "read1"):  # a stand-in such as vcrpy's replayed response (stored decoded)
        return lambda: raw.read1(READ_SIZE)
    pieces = response.iter_content(READ_SIZE)  # urllib3 1.x: chunked bodies still come chunk by chunk
    return lambda: next(pieces, b"")


def sent_length(response: requests.Response) -> int | None:
    """The body's length in bytes as it is read: its Content-Length when it is sent uncompressed, else None."""
    length = response.headers.get("Content-Length")
    if length is None or response.headers.get("Content-Encoding", "identity").lower() != "identity":
        return None
    try:
        return int(length)
    except ValueError:
        return None


def _socket_of(raw: Any) -> socket.socket | None:
    sock = getattr(getattr(raw, "connection", None), "sock", None)
    return sock if isinstance(sock, socket.socket) else None
