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
from typing import TYPE_CHECKING, Any

from . import api, attributes as attr
from .spans import RunScope, current_scope, record_error

if TYPE_CHECKING:
    from ..stores.base import MemoryStore

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
_IN_PROCESS = "in_memory"
_IN_THIS_PROCESS = ("sqlite",)  # databases whose calls make no round trip: no span
_INSIDE: ContextVar[bool] = ContextVar("omnisync_store_call", default=False)


def traced_store(store: MemoryStore) -> MemoryStore:
    """``store`` with its round trips traced (the same object; unchanged without opentelemetry, in process or on SQLite)."""
    if not api.enabled() or store.kind == _IN_PROCESS or getattr(store, "_omnisync_traced", False):
        return store
    system = database_system(store)
    if system in _IN_THIS_PROCESS:
        return store
    for name in ROUND_TRIPS:
        method = getattr(store, name, None)
        if method is not None:
            setattr(store, name, _traced(method, name, system, store.kind))
    store._omnisync_traced = True  # type: ignore[attr-defined]
    return store


def database_system(store: MemoryStore) -> str:
    """``db.system.name`` of the store's server."""
    engine = getattr(store, "engine", None)
    dialect = getattr(getattr(engine, "dialect", None), "name", None)
    return str(dialect) if dialect else store.kind


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
