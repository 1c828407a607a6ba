"""Idempotency keys: a retried request with the same ``Idempotency-Key`` (a served ``POST .../runs``) never starts a second run.

The key is kept in the agent's own store as a lease beside its runs (kind ``idempotency``, id
from the session and the key: :mod:`omnisync.run_state.leases`, which writes it), so every
server process sharing that store sees it: its fingerprint is the SHA-256 of the request's
message and options, its holder the run it started (None while that run is starting).
Creating it is the store's compare-and-set, so of two requests racing with one key, one
starts the run and the other gets that run. Retention removes it with the runs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from . import run_state
from .errors import ConfigurationError
from .stores.base import MemoryStore

MAX_KEY_LENGTH = 255


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise ConfigurationError(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters (a UUID is usual)")
    return key


def fingerprint(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def reserve(store: MemoryStore, agent: str, session_id: str, key: str, request_hash: str, start_seconds: int) -> str | None:
    """None when this request holds the key and starts the run; the run's id when an earlier request started it."""
    return run_state.reserve_key(store, agent, session_id, key, request_hash, start_seconds)


def bind(store: MemoryStore, agent: str, session_id: str, key: str, run_id: str, retention_days: int | None) -> None:
    """The key's run has started: later requests with the key get ``run_id``."""
    run_state.bind_key(store, agent, session_id, key, run_id, retention_days)


def release(store: MemoryStore, agent: str, session_id: str, key: str, error: str, retention_days: int | None) -> None:
    """The key's run did not start (a busy session...): a retry may try again."""
    run_state.release_key(store, agent, session_id, key, error, retention_days)
