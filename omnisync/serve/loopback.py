"""What a server without tokens accepts: pages of this machine only.

Such a server trusts whoever reaches it, so it must be reached only from this machine: a
request whose ``Host`` is not loopback (a DNS-rebound name) is refused with 421, and a request
that carries a body must say it is JSON (``Content-Type: application/json``), which a page of
another site cannot send without the browser asking first (CORS), unless its ``Origin`` is one
this server allows. So a page the user visits can neither read the API nor drive it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost",)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class LoopbackOnly:
    """ASGI middleware refusing requests a web page of another site could make."""

    def __init__(self, app: ASGIApp, allowed_origins: Collection[str] = ()) -> None:
        self.app = app
        self.allowed_origins: frozenset[str] = frozenset(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope["method"], Headers(scope=scope))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, method: str, headers: Headers) -> JSONResponse | None:
        host = headers.get("host", "")
        if not is_loopback_host(host):
            return _refused(
                421, "MisdirectedRequest", f"this server has no token, so it answers requests to localhost only, not to {host[:80]!r}: configure tokens to serve other names"
            )
        has_body = method not in SAFE_METHODS and (method != "DELETE" or headers.get("content-length", "0") != "0" or "transfer-encoding" in headers)
        if has_body and not _is_json(headers.get("content-type", "")) and headers.get("origin") not in self.allowed_origins:
            return _refused(415, "UnsupportedMediaType", "send the body as JSON, with 'Content-Type: application/json'")
        return None


def is_loopback_host(host: str) -> bool:
    """Whether a ``Host`` header (with or without its port) names this machine: localhost, 127.0.0.0/8, [::1]."""
    name = host.strip().lower()
    if name.startswith("["):
        name, bracket, port = name[1:].partition("]")
        if not bracket or (port and not (port.startswith(":") and port[1:].isdigit())):
            return False
    elif name.count(":") == 1:
        name, _, port = name.partition(":")
        if not port.isdigit():
            return False
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _refused(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)
