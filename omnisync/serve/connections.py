"""Connections that never finish a request are closed: uvicorn's HTTP protocol with a deadline for headers.

uvicorn closes a connection idle after a response (``timeout_keep_alive``) but waits forever
for the first request's headers, and any byte of a partial request resets its idle timer. Here
a connection's request headers must be complete within ``header_seconds`` of its opening, or
of the previous response; a request body's deadline is the app's (``create_app(body_seconds=)``).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_SECONDS = 30.0
KEEP_ALIVE_SECONDS = 5


class HeaderDeadlineProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request headers are not complete in time."""

    def __init__(self, *args: Any, header_seconds: float = HEADER_SECONDS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_seconds = header_seconds
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_deadline = self.loop.call_later(self._header_seconds, self._headers_overdue)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_overdue(self) -> None:
        """No request is being answered, and none came whole in time (or a finished one's body still trickles in)."""
        self._header_deadline = None
        if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
            self.transport.close()


def uvicorn_options(header_seconds: float = HEADER_SECONDS) -> dict[str, Any]:
    """What ``uvicorn.run`` / ``uvicorn.Config`` is given so no connection stays open without a request."""
    return {"http": functools.partial(HeaderDeadlineProtocol, header_seconds=header_seconds), "timeout_keep_alive": KEEP_ALIVE_SECONDS}
