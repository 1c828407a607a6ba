"""A run record's save that met a dead pooled connection, made once more on a fresh one.

A connection the server dropped while it rested in the pool (a restart, a failover,
``pg_terminate_backend``) is found before use when the server said goodbye (see
``store._ping_when_idle``); one dropped between that check and the statement fails the statement.
Saving the record again is safe because a save is a compare-and-set: if the first attempt
landed before the link died, the second meets the version the first wrote, and the stored
record is then compared with the one saved. Appends are never retried: a second append of
messages the first may have written would write them twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol, TypeVar, cast

from sqlalchemy.exc import DBAPIError

from ..._logging import logger
from ...errors import RunConflictError, StoreError
from ...run_record import RunRecord



class _Saving(Protocol):
    def _describe(self) -> str: ...

    def load_run(self, agent: str, run_id: str) -> RunRecord | None: ...


Save = TypeVar("Save", bound=Callable[..., RunRecord])


def connection_lost(exc: StoreError) -> bool:
    """True if ``exc`` is a statement that failed because its connection was gone."""
    return isinstance(exc.__cause__, DBAPIError) and exc.__cause__.connection_invalidated


def saved_again_on_a_fresh_connection(save: Save) -> Save:
    """``save`` (a store's save_run), made once more if its connection was lost."""

    @functools.wraps(save)
    def save_once_more_if_lost(store: _Saving, record: RunRecord, expected_version: int | None) -> RunRecord:
        try:
            return save(store, record, expected_version)
        except StoreError as exc:
            if isinstance(exc, RunConflictError) or not connection_lost(exc):
                raise
            logger.info("%s: saving run %s again on a fresh connection (%s)", store._describe(), record.run_id, exc.__cause__)
        try:
            return save(store, record, expected_version)
        except RunConflictError:
            landed = record.evolve(version=(expected_version or 0) + 1)
            stored = store.load_run(record.agent, record.run_id)
            if stored is not None and stored.to_json() == landed.to_json():
                return landed  # the first attempt's write, made before its connection was lost
            raise

    return cast(Save, save_once_more_if_lost)
