"""Idempotency keys: a retried request with the same ``Idempotency-Key`` (a served ``POST .../runs``) never starts a second run.

The key is kept in the agent's own store, as a record beside its runs (kind ``idempotency``,
id from the session and the key), so every server process sharing that store sees it. A
record's fields mean here: ``response`` the SHA-256 of the request's message and options,
``lease_owner`` the run it started (None while that run is starting), ``lease_until`` how long
a start may take before another request may take the key over. Creating the record is the
store's compare-and-set, so of two requests racing with one key, one starts the run and the
other gets that run. Retention removes the record with the runs (it counts as finished once
its run started, or its start failed).
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from .errors import ConfigurationError, RunConflictError
from .messages import utcnow
from .run_record import COMPLETED, FAILED, IDEMPOTENCY, RUNNING, RunRecord
from .stores.base import MemoryStore

KIND = IDEMPOTENCY
MAX_KEY_LENGTH = 255


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise ConfigurationError(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters (a UUID is usual)")
    return key


def fingerprint(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def record_id(session_id: str, key: str) -> str:
    digest = hashlib.sha256(f"{session_id}\0{key}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KIND}-{digest[:40]}"


def reserve(store: MemoryStore, agent: str, session_id: str, key: str, request_hash: str, start_seconds: int) -> str | None:
    """None when this request holds the key and starts the run; the run's id when an earlier request started it.

    Raises ConfigurationError when the key was used with another request, RunConflictError while
    another request is starting its run.
    """
    now = utcnow()
    until = now + timedelta(seconds=start_seconds)
    wanted = RunRecord(
        run_id=record_id(session_id, key),
        agent=agent,
        session_id=session_id,
        kind=KIND,
        status=RUNNING,
        response=request_hash,
        lease_until=until,
        created_at=now,
        updated_at=now,
    )
    try:
        store.save_run(wanted, expected_version=None)
        return None
    except RunConflictError:
        held = store.load_run(agent, wanted.run_id)
    if held is None:  # expired between the two calls
        raise RunConflictError("the Idempotency-Key's record changed while it was read; retry the request")
    if held.response != request_hash:
        raise ConfigurationError("this Idempotency-Key was used for a different request in this session: use a new key for a new request")
    if held.lease_owner is not None:
        return held.lease_owner
    if held.status == RUNNING and held.lease_until is not None and held.lease_until > now:
        raise RunConflictError("a request with this Idempotency-Key is starting its run now: retry in a moment")
    # the earlier request never started a run (it was refused, or its process died): this one tries
    store.save_run(held.evolve(status=RUNNING, error=None, finished_at=None, expires_at=None, lease_until=until, updated_at=now), held.version)
    return None


def bind(store: MemoryStore, agent: str, session_id: str, key: str, run_id: str, retention_days: int | None) -> None:
    """The key's run has started: later requests with the key get ``run_id``."""
    _end(store, agent, record_id(session_id, key), retention_days, status=COMPLETED, lease_owner=run_id)


def release(store: MemoryStore, agent: str, session_id: str, key: str, error: str, retention_days: int | None) -> None:
    """The key's run did not start (a busy session...): a retry may try again."""
    _end(store, agent, record_id(session_id, key), retention_days, status=FAILED, error=error)


def _end(store: MemoryStore, agent: str, rid: str, retention_days: int | None, **changes: Any) -> None:
    held = store.load_run(agent, rid)
    if held is None:
        return
    now = utcnow()
    expires = now + timedelta(days=retention_days) if retention_days else None
    store.save_run(held.evolve(finished_at=now, expires_at=expires, lease_until=None, updated_at=now, **changes), held.version)
