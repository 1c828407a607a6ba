"""What the store base checks before a backend's method runs: every identifier and message it is given.

:class:`~omnisync.stores.base.MemoryStore` wraps each method named in :data:`CHECKS`, wherever
a backend (or the base) defines it, so a backend implements only the work: an id that some
store could not keep (a NUL, a lone surrogate, too long for a column) or a message JSON cannot
hold is refused with a typed error naming the field on every backend alike, before anything is
read or written. A checked method that calls another (``append_and_save_run`` calling
``append``) checks once: the inner call is trusted.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..messages import Message
from ..run_record import RunRecord
from ..storable import MAX_RUN_ID_LENGTH, check_id, check_message, check_optional_id

Check = Callable[[Any, str], None]


def _id(value: Any, field: str) -> None:
    check_id(value, field)


def _optional_id(value: Any, field: str) -> None:
    check_optional_id(value, field)


def _run_id(value: Any, field: str) -> None:
    check_id(value, field, MAX_RUN_ID_LENGTH)


def _messages(messages: Sequence[Message], _field: str) -> None:
    for message in messages:
        check_message(message)


def _message(message: Message, _field: str) -> None:
    check_message(message)


def _record(record: RunRecord, field: str) -> None:
    check_id(record.agent, f"{field}.agent")
    check_id(record.run_id, f"{field}.run_id", MAX_RUN_ID_LENGTH)
    check_id(record.session_id, f"{field}.session_id")
    check_optional_id(record.lease_owner, f"{field}.lease_owner", MAX_RUN_ID_LENGTH)


def _saves(saves: Sequence[tuple[RunRecord, int | None]], field: str) -> None:
    for record, _version in saves:
        _record(record, field)


def _session_cursor(after: tuple[str, str] | None, field: str) -> None:
    if after is not None:
        check_id(after[0], f"{field} agent")
        check_id(after[1], f"{field} session_id")


def _run_cursor(after: tuple[Any, str] | None, field: str) -> None:
    if after is not None:
        check_id(after[1], f"{field} run_id", MAX_RUN_ID_LENGTH)


_SESSION: dict[str, Check] = {"agent": _id, "session_id": _id}
CHECKS: dict[str, dict[str, Check]] = {
    "append": {**_SESSION, "messages": _messages},
    "latest": _SESSION,
    "history": _SESSION,
    "history_page": _SESSION,
    "clear": {"agent": _id, "session_id": _optional_id},
    "delete_message": _SESSION,
    "sessions": {"agent": _optional_id},
    "sessions_page": {"agent": _optional_id, "after": _session_cursor},
    "fold": {**_SESSION, "summary": _message},
    "save_run": {"record": _record},
    "save_runs": {"saves": _saves},
    "load_run": {"agent": _id, "run_id": _run_id},
    "load_lease": {"agent": _id, "run_id": _run_id},
    "list_runs": {"agent": _id, "status": _optional_id, "session_id": _optional_id},
    "runs_page": {"agent": _id, "after": _run_cursor, "status": _optional_id, "session_id": _optional_id, "kind": _id},
    "prune_runs": {"agent": _id},
    "append_events": {"agent": _id, "run_id": _run_id},
    "read_events": {"agent": _id, "run_id": _run_id},
    "load_lease_and_window": {"agent": _id, "lease_id": _run_id, "session_id": _id},
    "append_and_save_run": {**_SESSION, "messages": _messages, "record": _record},
    "copy_session": {"agent": _id, "source_session_id": _id, "target_session_id": _id},
    "deactivate": _SESSION,
    "search_messages": {"agent": _id, "session_id": _optional_id},
    "reindex": {"agent": _optional_id},
}
"""Per method of the store contract, the check of each argument it names."""


_MISSING = inspect.Parameter.empty


class _Depth(threading.local):
    inside = False


_depth = _Depth()


def checked(method: Callable[..., Any], checks: dict[str, Check]) -> Callable[..., Any]:
    """``method`` with ``checks`` applied to its arguments first, unless a checked call is already under way."""
    if getattr(method, "__checked__", False):
        return method
    parameters = list(inspect.signature(method).parameters.values())[1:]
    unknown = set(checks) - {parameter.name for parameter in parameters}
    if unknown:
        raise TypeError(f"{method.__qualname__} must name its arguments as the store contract does: it lacks {sorted(unknown)}")
    where = [(index, p.name, p.default, checks[p.name]) for index, p in enumerate(parameters) if p.name in checks]

    @functools.wraps(method)
    def run_checked(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _depth.inside:
            return method(self, *args, **kwargs)
        for index, name, default, check in where:
            value = args[index] if index < len(args) else kwargs.get(name, default)
            if value is not _MISSING:  # a missing argument: the call itself says so
                check(value, name)
        _depth.inside = True
        try:
            return method(self, *args, **kwargs)
        finally:
            _depth.inside = False

    run_checked.__checked__ = True  # type: ignore[attr-defined]
    return run_checked


def check_calls_of(cls: type) -> None:
    """Wrap the checked methods ``cls`` itself defines (abstract ones are left as they are)."""
    for name, checks in CHECKS.items():
        method = cls.__dict__.get(name)
        if method is not None and not getattr(method, "__isabstractmethod__", False):
            setattr(cls, name, checked(method, checks))
