"""A client-side deadline for every call on a PostgreSQL connection, whatever the server or the link does.

libpq's own bounds leave one case open: a server (or a middlebox) that stops answering while
its end of the connection still acknowledges packets. ``statement_timeout`` never fires
(nothing reaches the server), ``tcp_user_timeout`` and keepalives see a healthy link, and the
call blocks for as long as the link lasts. So while a connection is checked out of the pool,
one thread per process keeps its deadline: a call still out when it passes has its socket shut
down, which wakes the blocked driver with a connection error, and the pool replaces the
connection. Arming and disarming are a dict write each: no round trip, no thread per call.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError


@dataclass(frozen=True)
class _Watch:
    deadline: float
    seconds: float
    fileno: Callable[[], int]  # the connection's socket as the driver has it now
    fd: int  # ... and when the call began: a socket closed and its number reused is never touched
    thread: int


class Watchdog:
    """Shuts down the socket of each connection whose call outlives its deadline."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._armed: dict[int, _Watch] = {}
        self._cut: dict[int, float] = {}  # thread -> the seconds after which its call was cut
        self._wakes_at = float("inf")
        self._thread: threading.Thread | None = None

    def arm(self, key: int, fileno: Callable[[], int], fd: int, seconds: float) -> None:
        """Start (or restart) the deadline of the connection ``key`` (its socket ``fd``), ``seconds`` from now."""
        watch = _Watch(time.monotonic() + seconds, seconds, fileno, fd, threading.get_ident())
        with self._lock:
            self._cut.pop(watch.thread, None)
            self._armed.pop(key, None)
            self._armed[key] = watch
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="omnisync-call-deadline", daemon=True)
                self._thread.start()
            elif watch.deadline < self._wakes_at:
                self._changed.notify()

    def disarm(self, key: int) -> None:
        """The call on ``key`` is over (its deadline is dropped; the watching thread is not woken)."""
        with self._lock:
            self._armed.pop(key, None)

    def cut_here(self) -> float | None:
        """The deadline (seconds) that cut this thread's last call short, else None; asked once."""
        with self._lock:
            return self._cut.pop(threading.get_ident(), None)

    def _watch(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for key, watch in list(self._armed.items()):
                    if watch.deadline <= now:
                        del self._armed[key]
                        if _shut_down(watch):
                            self._cut[watch.thread] = watch.seconds
                self._wakes_at = min((w.deadline for w in self._armed.values()), default=float("inf"))
                self._changed.wait(None if self._wakes_at == float("inf") else self._wakes_at - now)


def _shut_down(watch: _Watch) -> bool:
    """Shut down the socket of ``watch`` if the driver still has it open; True if it did."""
    try:
        if watch.fileno() != watch.fd:
            return False
        with socket.fromfd(watch.fd, socket.AF_INET, socket.SOCK_STREAM) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except Exception:  # noqa: BLE001 - the driver's "connection closed" is an error of its own
        return False
    return True


WATCHDOG = Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHDOG._reset)  # the watching thread does not survive a fork


def bound_every_call(engine: Engine, seconds: float) -> None:
    """Give each checkout of ``engine`` (the liveness check included) ``seconds`` to be returned."""

    @event.listens_for(engine, "checkout", insert=True)
    def _arm(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        try:
            fd = dbapi_connection.fileno()
        except Exception as exc:  # noqa: BLE001 - the driver's "connection closed": the pool takes another
            raise DisconnectionError(f"the pooled connection has no socket: {exc}") from exc
        WATCHDOG.arm(id(record), dbapi_connection.fileno, fd, seconds)

    @event.listens_for(engine, "checkin")
    def _disarm(_dbapi_connection: Any, record: Any) -> None:
        WATCHDOG.disarm(id(record))

    @event.listens_for(engine, "invalidate")
    def _disarm_invalid(_dbapi_connection: Any, record: Any, _exception: Any) -> None:
        WATCHDOG.disarm(id(record))
