"""The worker threads omnisync.aio runs blocking calls in.

Its calls wait on the network and the store, not on the CPU, so the pool is sized for
waiting: the default executor's ``min(32, cpu_count + 4)`` threads would queue an async app's
runs behind a handful of calls. ``OMNISYNC_AIO_THREADS`` or ``set_thread_count`` sets its size.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from . import _env
from .errors import ConfigurationError

DEFAULT_THREADS = 64

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_size: int | None = None  # set by set_thread_count; None: from the environment, else the default


def _at_least_one(count: int, source: str) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigurationError(f"{source} must be a whole number of threads of at least 1, not {count!r}")
    return count


def thread_count() -> int:
    """How many worker threads omnisync.aio's pool has (or will have when first used)."""
    if _size is not None:
        return _size
    configured = _env.aio_threads()
    if configured is None:
        return DEFAULT_THREADS
    try:
        return _at_least_one(int(configured), "OMNISYNC_AIO_THREADS")
    except ValueError:
        raise ConfigurationError(f"OMNISYNC_AIO_THREADS must be a whole number of threads of at least 1, not {configured!r}") from None


def set_thread_count(count: int) -> None:
    """Size omnisync.aio's pool; calls already running finish on the old pool's threads."""
    global _pool, _size
    count = _at_least_one(count, "set_thread_count")
    with _lock:
        old, _pool, _size = _pool, None, count
    if old is not None:
        old.shutdown(wait=False)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=thread_count(), thread_name_prefix="omnisync-aio")
        return _pool


_caller_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar("omnisync_caller_loop", default=None)


def caller_loop() -> asyncio.AbstractEventLoop | None:
    """In a call run by :func:`call`, the event loop that awaits it (async tools are awaited there); else None."""
    return _caller_loop.get()


async def call(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``asyncio.to_thread`` on omnisync.aio's pool: ``function`` runs with the caller's context variables."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_caller_loop.set, loop)
    bound = functools.partial(context.run, function, *args, **kwargs)
    return await loop.run_in_executor(_executor(), bound)
