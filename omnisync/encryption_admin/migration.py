"""``omnisync encrypt``: a store written in clear sealed in place, a page at a time, resumably.

Each session's messages are read a page at a time (inactive ones too); those with a value in
clear are sealed where they stand (``MemoryStore.replace_values``: same seq, status and time).
Run records with a value in clear are saved again sealed (compare-and-set, by
:func:`omnisync.run_state.data_keys.reseal`). What is sealed
already is left alone, so a migration stopped half-way is finished by running it again. At the
end every message and record is read again: any value left in clear fails the migration.
A run's stored events in clear, or sealed before events were bound to their ids, are sealed
again at their ids (``MemoryStore.replace_events``; the events of a run that has no record are
not found: prune them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import ConfigurationError, StoreError
from ..run_record import DATA_KEY, RUN, RunRecord
from ..run_state.data_keys import reseal
from ..stores.base import MemoryStore, StoredEvent
from ..stores.encrypted import EncryptedStore
from ..encryption import sealing


@dataclass
class Migration:
    """What a migration found and sealed."""

    sessions: int = 0
    messages_sealed: int = 0
    messages_already: int = 0
    records_sealed: int = 0
    events_sealed: int = 0

    def describe(self) -> str:
        return (
            f"{self.sessions} sessions: {self.messages_sealed} messages sealed ({self.messages_already} already were), "
            f"{self.records_sealed} run records sealed, {self.events_sealed} run events sealed"
        )


def encrypt_in_place(store: EncryptedStore, page_size: int = 500) -> Migration:
    """Seal every value ``store`` holds in clear (its router opened with ``accept_plaintext=True``)."""
    if not store.encryption.accept_plaintext:
        raise ConfigurationError("encrypting in place reads values in clear: open the router with Encryption(..., accept_plaintext=True)")
    done = Migration()
    inner = store.inner
    for info in inner.iter_sessions(page_size=page_size):
        done.sessions += 1
        store.data_keys.for_writing(info.agent, info.session_id)
        after: int | None = None
        while True:
            page = inner.history_page(info.agent, info.session_id, after, page_size, include_inactive=True)
            clear = [m for m in page if sealing.is_clear_message(m)]
            done.messages_already += len(page) - len(clear)
            if clear:
                opened = store.open_messages(info.agent, info.session_id, clear)
                done.messages_sealed += inner.replace_values(info.agent, info.session_id, [store.seal_placed(m) for m in opened])
            if len(page) < page_size:
                break
            after = page[-1].seq
    for agent in inner.run_agents():
        for record in inner.iter_records(agent, page_size=page_size):
            if _is_clear_record(record):
                done.records_sealed += _seal_record(store, record)
            if record.kind == RUN:
                done.events_sealed += _seal_events(store, record)
    left = count_clear(store, page_size)
    if left:
        raise StoreError(f"{left} values are still in clear after the migration (written meanwhile?): run it again")
    return done


def count_clear(store: EncryptedStore, page_size: int = 500) -> int:
    """How many messages, run records and their events hold a value in clear (events: or not bound to their ids)."""
    inner = store.inner
    clear = 0
    for info in inner.iter_sessions(page_size=page_size):
        clear += sum(1 for m in inner.iter_history(info.agent, info.session_id, include_inactive=True, page_size=page_size) if sealing.is_clear_message(m))
    for agent in inner.run_agents():
        for record in inner.iter_records(agent, page_size=page_size):
            clear += int(_is_clear_record(record)) + (sum(map(len, _events_to_seal(inner, record))) if record.kind == RUN else 0)
    return clear


def _is_clear_record(record: RunRecord) -> bool:
    if record.kind == DATA_KEY or not sealing.needs_sealing(record):
        return False
    return any(
        value is not None and not (sealing.is_sealed_field(value))
        for value in (getattr(record, name) for name in sealing.RUN_FIELDS)
        if not (isinstance(value, list) and not value)
    )


def _seal_record(store: EncryptedStore, record: RunRecord) -> int:
    opened = store.open_record(record)
    assert opened is not None
    return 1 if reseal(store, opened) else 0  # changed meanwhile (saved sealed by a run): the check at the end counts it


def _events_to_seal(inner: MemoryStore, record: RunRecord) -> Iterator[list[StoredEvent]]:
    """A run's stored events in clear or not bound to their ids, a bounded read at a time."""
    after = 0
    while True:
        page = inner.read_events(record.agent, record.run_id, after=after)
        if not page:
            return
        needing = [e for e in page if not sealing.is_sealed_event(e.data)]
        if needing:
            yield needing
        after = page[-1].id


def _seal_events(store: EncryptedStore, record: RunRecord) -> int:
    return sum(
        store.replace_events(record.agent, record.run_id, store.open_events(record.agent, record.run_id, page))
        for page in _events_to_seal(store.inner, record)
    )
