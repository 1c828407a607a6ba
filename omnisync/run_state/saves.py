"""The one place a record reaches a store: every save of a run record, a lease, a cancel request
or a data key record goes through these three calls, each a compare-and-set on the record's
version (``expected_version=None`` creates it, and fails if it is there). :mod:`.runs`,
:mod:`.leases` and :mod:`.data_keys` decide what to save; this module alone saves it."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message
from ..run_record import RunRecord
from ..stores.base import MemoryStore


def save(store: MemoryStore, record: RunRecord, expected_version: int | None) -> RunRecord:
    """``record`` saved over the version ``expected_version`` (None: created); RunConflictError if another got there first."""
    return store.save_run(record, expected_version=expected_version)


def save_together(store: MemoryStore, saves: Sequence[tuple[RunRecord, int | None]]) -> list[RunRecord]:
    """Several records saved at once, each a compare-and-set; all or none where the store can."""
    return store.save_runs(saves)


def append_and_save(
    store: MemoryStore, agent: str, session_id: str, messages: Sequence[Message], record: RunRecord, expected_version: int | None
) -> tuple[list[Message], RunRecord]:
    """``messages`` appended to the session and ``record`` saved with them, in one write where the store can."""
    return store.append_and_save_run(agent, session_id, messages, record, expected_version)
