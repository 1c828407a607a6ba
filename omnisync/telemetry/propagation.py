"""A trace carried across processes: in the run record, and over HTTP between RemoteAgent and ``omnisync serve``.

- A run record keeps ``trace_parent``, the W3C ``traceparent`` of the span that last drove the
  run (:func:`current_traceparent`, written by :mod:`omnisync.run_state`). A run resumed in
  another process, even days later, links its span to it (:func:`link_to`), so the traces of
  one conversation join up.
- :class:`RemoteAgent <omnisync.remote.RemoteAgent>` sends the caller's ``traceparent`` with
  each request (:func:`trace_headers`); ``omnisync serve`` continues it
  (:class:`ContinueTrace`), so a served run is a child of the caller's span.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from . import api

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def current_traceparent() -> str | None:
    """The current span's context as a ``traceparent`` value; None outside a span or without opentelemetry."""
    if not api.tracing():
        return None
    from opentelemetry import trace

    span = trace.get_current_span().get_span_context()
    if not span.is_valid:
        return None
    return f"00-{span.trace_id:032x}-{span.span_id:016x}-{span.trace_flags:02x}"  # as TraceContextTextMapPropagator writes it


def link_to(traceparent: str | None, why: str = "resumes") -> None:
    """Link the current span to the span ``traceparent`` names (the run's previous driver, or the run a summary follows)."""
    if not traceparent or not api.tracing():
        return
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    earlier = trace.get_current_span(TraceContextTextMapPropagator().extract({"traceparent": traceparent})).get_span_context()
    if earlier.is_valid:
        trace.get_current_span().add_link(earlier, {"omnisync.link": why})


def trace_headers(headers: dict[str, str] | None) -> dict[str, str] | None:
    """``headers`` with the caller's trace context (``traceparent``, ``tracestate``) added."""
    if not api.enabled():
        return headers
    from opentelemetry.propagate import inject

    carrier = dict(headers or {})
    inject(carrier)
    return carrier


class ContinueTrace:
    """ASGI middleware: each HTTP request is handled in the trace its ``traceparent`` header names."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not api.enabled():
            await self.app(scope, receive, send)
            return
        from opentelemetry import context
        from opentelemetry.propagate import extract

        carrier = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope.get("headers") or ()}
        token = context.attach(extract(carrier))
        try:
            await self.app(scope, receive, send)
        finally:
            context.detach(token)
