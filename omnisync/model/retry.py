"""When a model request is tried again, and how long to wait: the rules as data."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from datetime import datetime, timezone
from typing import TypeVar

from tenacity import AttemptManager, DoAttempt, DoSleep, RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from ..errors import ModelConnectionError, ModelStatusError, ModelTimeoutError

RETRY_STATUSES = frozenset({408, 409, 429})
RETRY_AFTER_CAP = 30.0
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 8.0

T = TypeVar("T")


def should_retry(error: BaseException) -> bool:
    """Connection errors, connect timeouts, 408, 409, 429 and 5xx; never another 4xx.

    A read timeout is not retried: the request reached the server, which may still be
    generating, and posting it again would pay for (and wait on) a second generation.
    """
    if isinstance(error, ModelTimeoutError) and error.request_sent:
        return False
    if isinstance(error, ModelConnectionError):
        return True
    if isinstance(error, ModelStatusError):
        return error.status_code in RETRY_STATUSES or error.status_code >= 500
    return False


def retry_after_seconds(header: str | None) -> float | None:
    """Seconds asked for by a Retry-After header (a number or an HTTP date), or None."""
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def wait_seconds(state: RetryCallState) -> float:
    """The server's Retry-After when it gives one (up to a cap), else jittered exponential backoff."""
    error = state.outcome.exception() if state.outcome else None
    asked = getattr(error, "retry_after", None)
    if asked is not None and asked <= RETRY_AFTER_CAP:
        return float(asked)
    backoff = min(BACKOFF_MAX, BACKOFF_INITIAL * 2 ** (state.attempt_number - 1))
    return float(backoff * (0.75 + random.random() / 4))


def retrying(max_retries: int, sleep: Callable[[float], None]) -> Retrying:
    return Retrying(
        stop=stop_after_attempt(max_retries + 1),
        wait=wait_seconds,
        retry=retry_if_exception(should_retry),
        sleep=sleep,
        reraise=True,
    )


def attempted(retrying: Retrying, attempt: Callable[[], T]) -> T:
    """``attempt()``, tried again by ``retrying``'s rules: what ``for a in retrying: with a: return attempt()``
    does, with its first try made outside tenacity (whose machinery costs ~20 µs a call that
    almost never fails). Once that try failed, tenacity decides, waits and tries again exactly
    as it would have: the same stop, wait, retry rule, sleep and re-raised error."""
    started = time.monotonic()
    try:
        return attempt()
    except BaseException as exc:  # as tenacity's AttemptManager: its retry rule decides, and re-raises the rest
        failed = exc
    for again in _attempts_after(retrying, failed, started):
        with again:
            return attempt()
    raise AssertionError("unreachable")  # pragma: no cover: the last attempt's error is re-raised


def _attempts_after(retrying: Retrying, failed: BaseException, started: float) -> Iterator[AttemptManager]:
    """tenacity's ``Retrying.__iter__``, resumed after a first attempt that raised ``failed``."""
    retrying.begin()
    state = RetryCallState(retrying, fn=None, args=(), kwargs={})
    state.start_time = started
    state.set_exception((type(failed), failed, failed.__traceback__))
    while True:
        do = retrying.iter(retry_state=state)
        if isinstance(do, DoAttempt):
            yield AttemptManager(retry_state=state)
        elif isinstance(do, DoSleep):
            state.prepare_for_next_attempt()
            retrying.sleep(do)
        else:
            break
