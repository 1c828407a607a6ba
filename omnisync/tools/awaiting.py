"""Async tools: a coroutine a tool returned, awaited to completion for the blocking run loop.

Under omnisync.aio (and ``omnisync serve``) the run's worker thread hands the coroutine to the
caller's event loop and waits for it, so the tool shares that loop's clients and locks.
Otherwise it runs on a loop of its own: ``asyncio.run`` in the calling thread, or, when a loop
is already running in that thread (a blocking call made inside a coroutine, as in Jupyter), a
private loop in a thread of its own, since the running loop is blocked by the call itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from .._aio_pool import caller_loop

T = TypeVar("T")
_LOOK_AT_THE_LOOP_EVERY = 1.0  # seconds: how often a wait checks that the caller's loop still runs

_private_lock = threading.Lock()
_private: asyncio.AbstractEventLoop | None = None


def await_to_completion(awaitable: Awaitable[T]) -> T:
    """The result of ``awaitable``, awaited on the caller's loop when omnisync.aio gave one, else on a loop of its own."""
    coroutine = _as_coroutine(awaitable)
    loop = caller_loop()
    if loop is not None and loop.is_running() and not _running_in_this_thread(loop):
        return _wait(asyncio.run_coroutine_threadsafe(coroutine, loop), loop)
    if _running_in_this_thread(None):
        private = _private_loop()
        return _wait(asyncio.run_coroutine_threadsafe(coroutine, private), private)
    return asyncio.run(coroutine)


def _as_coroutine(awaitable: Awaitable[T]) -> Coroutine[Any, Any, T]:
    if asyncio.iscoroutine(awaitable):
        return awaitable

    async def wrapped() -> T:
        return await awaitable

    return wrapped()


def _running_in_this_thread(loop: asyncio.AbstractEventLoop | None) -> bool:
    """Whether ``loop`` (or, given None, any loop) is the one running in this thread."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return loop is None or running is loop


def _wait(future: concurrent.futures.Future[T], loop: asyncio.AbstractEventLoop) -> T:
    while True:
        try:
            return future.result(timeout=_LOOK_AT_THE_LOOP_EVERY)
        except concurrent.futures.TimeoutError:
            if future.done():
                raise  # the tool itself raised TimeoutError
            if not loop.is_running():
                future.cancel()
                raise RuntimeError("the event loop the async tool ran on stopped before the tool returned") from None


def _private_loop() -> asyncio.AbstractEventLoop:
    global _private
    with _private_lock:
        if _private is None:
            _private = asyncio.new_event_loop()
            threading.Thread(target=_private.run_forever, name="omnisync-async-tools", daemon=True).start()
        return _private
