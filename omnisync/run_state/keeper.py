"""While a run is driven here, its lease is kept and its cancel request is read.

One daemon thread per process watches every run its drivers execute. Every
``WATCH_SECONDS`` it reads each watched run's cancel request (one read of the store) and lets
the driver renew the run's lease once half of it is gone, so a run that waits long on the
model or a tool keeps its session, and only a dead driver loses it. A cancel request found,
or one made in this process, is handed to the driver at once (a streamed reply is cut off);
the run loop also looks at it before every step and tool call.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable

from .._logging import logger
from ..redact import redact_text

WATCH_SECONDS = 1.0


class Watch:
    """One run as its driver and the keeper share it: ``cancelled`` is the error a cancel
    request ends the run with (None until one comes)."""

    def __init__(self, run_id: str, read_request: Callable[[], str | None], renew: Callable[[], None]) -> None:
        self.run_id: str = run_id
        self.cancelled: str | None = None
        self.due: float = time.monotonic() + WATCH_SECONDS
        self._read_request: Callable[[], str | None] = read_request
        self._renew: Callable[[], None] = renew
        self._interrupts: list[weakref.WeakMethod[Callable[[], None]]] = []
        self._lock: threading.Lock = threading.Lock()

    def on_cancel(self, interrupt: Callable[[], None]) -> None:
        """Call the bound method ``interrupt`` when a cancel comes (held weakly: a dropped stream is not kept alive)."""
        with self._lock:
            self._interrupts.append(weakref.WeakMethod(interrupt))
            cancelled = self.cancelled
        if cancelled is not None:
            interrupt()

    def cancel(self, error: str) -> None:
        with self._lock:
            if self.cancelled is not None:
                return
            self.cancelled = error
            interrupts = [ref() for ref in self._interrupts]
        for interrupt in interrupts:
            if interrupt is not None:
                interrupt()

    def tick(self) -> None:
        if self.cancelled is None:
            error = self._read_request()
            if error is not None:
                self.cancel(error)
        self._renew()


class Keeper:
    """The watcher thread of this process (started with its first watch, again after a fork)."""

    def __init__(self) -> None:
        self._watches: dict[str, Watch] = {}
        self._changed: threading.Condition = threading.Condition()
        self._pid: int | None = None
        self._wakes_at: float = float("-inf")  # when the thread looks next (it never sleeps past WATCH_SECONDS)

    def add(self, watch: Watch) -> None:
        with self._changed:
            self._watches[watch.run_id] = watch
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._serve, name="omnisync-run-keeper", daemon=True).start()
            elif watch.due < self._wakes_at:
                # Waking the thread costs the run a hand-over of the GIL (about a millisecond on a busy
                # machine): done only when the thread would otherwise look too late.
                self._changed.notify()

    def remove(self, watch: Watch) -> None:
        with self._changed:
            if self._watches.get(watch.run_id) is watch:
                del self._watches[watch.run_id]

    def find(self, run_id: str) -> Watch | None:
        with self._changed:
            return self._watches.get(run_id)

    def _serve(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                due = [w for w in self._watches.values() if w.due <= now]
                if not due:
                    soonest = min((w.due for w in self._watches.values()), default=now + WATCH_SECONDS)
                    self._wakes_at = now + max(soonest - now, 0.01)
                    self._changed.wait(self._wakes_at - now)
                    continue
                self._wakes_at = float("-inf")  # busy with the due ones: a watch added now is seen when it loops
            for watch in due:
                try:
                    watch.tick()
                except Exception as exc:  # a store that blips: the driver's own saves will say so
                    logger.warning("could not look after run %s: %s", watch.run_id, redact_text(str(exc)))
                watch.due = time.monotonic() + WATCH_SECONDS


KEEPER = Keeper()
