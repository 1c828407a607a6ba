"""Spans for the store calls that take a network round trip: ``omnisync.store.{operation}``.

:func:`traced_store` wraps, on one store object, each method of the contract that reaches the
server. The stores whose calls stay in this process have none: the in-process store, and
SQLite (a library reading a file: no server, no round trip; its calls take tens of
microseconds, about what a span costs the SDK, so they stay part of the run's own time). A
span names the operation, the database (``db.system.name``: ``postgresql``, ``redis``,
``mongodb``) and omnisync's store kind, and the session (``gen_ai.conversation.id``) when the
call or its run has one; never a statement or a value.
"""

from __future__ import annotations

import functools
import inspect
from contextvars import ContextVar
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

from . import api, attributes as attr
from .spans import RunScope, current_scope, record_error

ROUND_TRIPS = (
    "append",
    "latest",
    "history",
    "history_page",
    "clear",
    "sessions",
    "sessions_page",
    "fold",
    "save_run",
    "save_runs",
    "load_run",
    "load_lease",
    "list_runs",
    "runs_page",
    "prune_runs",
    "append_events",
    "read_events",
    "load_lease_and_window",
    "append_and_save_run",
    "copy_session",
    "deactivate",
    "search_messages",
    "reindex",
)
_INSIDE: ContextVar[bool] = ContextVar("omnisync_store_call", default=False)


class TraceableStore(Protocol):
    """What :func:`traced_store` reads of a store (a :class:`~omnisync.stores.base.MemoryStore`;
    described, not imported: the stores sit below this package)."""

    kind: ClassVar[str]

    @property
    def database_system(self) -> str | None: ...


_Store = TypeVar("_Store", bound=TraceableStore)


def traced_store(store: _Store) -> _Store:
    """``store`` with its round trips traced (the same object; unchanged without opentelemetry,
    or when its calls stay in this process: ``database_system`` None)."""
    system = store.database_system
    if system is None or not api.enabled() or getattr(store, "_omnisync_traced", False):
        return store
    for name in ROUND_TRIPS:
        method = getattr(store, name, None)
        if method is not None:
            setattr(store, name, _traced(method, name, system, store.kind))
    setattr(store, "_omnisync_traced", True)
    return store


def _traced(method: Callable[..., Any], operation: str, system: str, kind: str) -> Callable[..., Any]:
    from opentelemetry import trace

    parameters = list(inspect.signature(method).parameters)
    session_at = parameters.index("session_id") if "session_id" in parameters else None
    fixed = {attr.DB_SYSTEM: system, attr.DB_OPERATION: operation, attr.STORE_KIND: kind}
    name = f"omnisync.store.{operation}"
    tracer = api.tracer()

    @functools.wraps(method)
    def traced(*args: Any, **kwargs: Any) -> Any:
        if _INSIDE.get() or not api.tracing():  # a composite's inner calls are part of its span
            return method(*args, **kwargs)
        attributes = dict(fixed)
        scope = current_scope()
        session_id = kwargs.get("session_id", args[session_at] if session_at is not None and session_at < len(args) else None)
        if not isinstance(session_id, str) and scope is not None:
            session_id = scope.session_id
        if isinstance(session_id, str):
            attributes[attr.CONVERSATION] = session_id
        span = tracer.start_span(name, kind=trace.SpanKind.CLIENT, attributes=attributes)
        inside = _INSIDE.set(True)
        try:
            result = method(*args, **kwargs)
            if attr.CONVERSATION not in attributes:
                _learn_session(span, scope, result)
            return result
        except BaseException as error:
            record_error(span, error)
            raise
        finally:
            _INSIDE.reset(inside)
            span.end()

    return traced


def _learn_session(span: Any, scope: RunScope | None, result: Any) -> None:
    """A run record read by a resume names its session: this span's, and the rest of the run's."""
    from ..run_record import RUN, RunRecord  # here: the store modules import this one

    record = result if isinstance(result, RunRecord) else None
    if record is None or record.kind != RUN:
        return
    span.set_attribute(attr.CONVERSATION, record.session_id)
    if scope is not None and scope.session_id is None:
        scope.session_id = record.session_id
        scope.describe(attr.CONVERSATION, record.session_id)
