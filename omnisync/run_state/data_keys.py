"""Saving the data key records of encryption at rest (:mod:`omnisync.encryption.data_keys` builds
them): a session's first one, a rotation's re-wrap, and a run record sealed in place by
``omnisync encrypt``. Like every run-state write, each is a compare-and-set save on the version."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import RunConflictError, StoreError
from ..run_record import RunRecord
from ..stores.base import MemoryStore
from . import saves

REWRAP_TRIES = 5


def create(store: MemoryStore, record: RunRecord) -> RunRecord:
    """Save a session's new data key record; when another process made one first, theirs (the one to use)."""
    try:
        return saves.save(store, record, None)
    except RunConflictError:
        made = store.load_run(record.agent, record.run_id)
        if made is None:
            raise
        return made


def rewrap(store: MemoryStore, record: RunRecord, rewrapped: Callable[[RunRecord], RunRecord], done: Callable[[RunRecord], bool]) -> None:
    """Save ``rewrapped(record)`` on the record's version; one changed meanwhile is read again
    (and left alone once ``done``, or gone). StoreError when it keeps changing."""
    for _ in range(REWRAP_TRIES):
        try:
            saves.save(store, rewrapped(record), record.version)
            return
        except RunConflictError:
            fresh = store.load_run(record.agent, record.run_id)
            if fresh is None or done(fresh):
                return
            record = fresh
    raise StoreError(f"the data key of session {record.session_id!r} of {record.agent!r} kept changing while it was re-wrapped: run the rotation again")


def reseal(store: MemoryStore, opened: RunRecord) -> bool:
    """Save a record read in clear again on its own version, through an encrypting store (which
    seals it): what ``omnisync encrypt`` does to a record. False when it changed meanwhile (a
    run saved it, sealed)."""
    try:
        saves.save(store, opened, opened.version)
    except RunConflictError:
        return False
    return True
