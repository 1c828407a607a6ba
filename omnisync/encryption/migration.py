"""``omnisync encrypt``: a store written in clear sealed in place, a page at a time, resumably.

Each session's messages are read a page at a time (inactive ones too); those with a value in
clear are sealed where they stand (``MemoryStore.replace_values``: same seq, status and time).
Run records with a value in clear are saved again sealed (compare-and-set, by
:func:`omnisync.run_state.data_keys.reseal`). What is sealed
already is left alone, so a migration stopped half-way is finished by running it again. At the
end every message and record is read again: any value left in clear fails the migration.
Stored run events written in clear are not rewritten (an event is never changed): prune them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigurationError, StoreError
from ..run_record import DATA_KEY, RunRecord
from ..run_state.data_keys import reseal
from ..stores.encrypted import EncryptedStore
from . import sealing


@dataclass
class Migration:
    """What a migration found and sealed."""

    sessions: int = 0
    messages_sealed: int = 0
    messages_already: int = 0
    records_sealed: int = 0

    def describe(self) -> str:
        return (
            f"{self.sessions} sessions: {self.messages_sealed} messages sealed ({self.messages_already} already were), "
            f"{self.records_sealed} run records sealed"
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
    left = count_clear(store, page_size)
    if left:
        raise StoreError(f"{left} values are still in clear after the migration (written meanwhile?): run it again")
    return done


def count_clear(store: EncryptedStore, page_size: int = 500) -> int:
    """How many messages and run records of the store hold a value in clear."""
    inner = store.inner
    clear = 0
    for info in inner.iter_sessions(page_size=page_size):
        clear += sum(1 for m in inner.iter_history(info.agent, info.session_id, include_inactive=True, page_size=page_size) if sealing.is_clear_message(m))
    for agent in inner.run_agents():
        clear += sum(1 for record in inner.iter_records(agent, page_size=page_size) if _is_clear_record(record))
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
