"""The data keys of one store's sessions, unwrapped once and kept in this process (what
:class:`~omnisync.stores.encrypted.EncryptedStore` seals and opens with). A session without a
data key gets one from the ``save_data_key`` it is given: the router gives
:func:`omnisync.run_state.data_keys.create`, the only writer of that record (run state sits
above the stores, so it is handed down, not imported)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..encryption.data_keys import FIELD, DataKey, OpenedTexts, new_record, record_id, unwrap
from ..encryption.keys import Encryption
from ..errors import DecryptionError
from ..run_record import RunRecord
from .base import MemoryStore

SaveDataKey = Callable[[MemoryStore, RunRecord], RunRecord]
"""Saves a session's new data key record and returns the one to use (another process's, when it made one first)."""


class DataKeys:
    """The data keys of one store's sessions, unwrapped once and kept in this process."""

    def __init__(self, store: MemoryStore, encryption: Encryption, save_data_key: SaveDataKey) -> None:
        self.store: MemoryStore = store
        self.encryption: Encryption = encryption
        self._save_data_key = save_data_key
        self._known: dict[tuple[str, str], DataKey] = {}
        self.opened_texts: OpenedTexts = {}
        """Message contents opened by these keys (:func:`~omnisync.encryption.sealing.open_messages`)."""
        self._lock = threading.Lock()

    def for_writing(self, agent: str, session_id: str) -> DataKey:
        """The session's data key, made and stored (wrapped) if it has none yet."""
        known = self._known.get((agent, session_id))
        if known is not None:
            return known
        record = self.store.load_run(agent, record_id(session_id))
        if record is None:
            record = self._create(agent, session_id)
        return self._remember(record)

    def for_reading(self, agent: str, session_id: str, data_key_id: str, describe: str) -> DataKey:
        """The data key ``data_key_id`` of the session; DecryptionError when the store holds no such key."""
        known = self._known.get((agent, session_id))
        if known is not None and known.id == data_key_id:
            return known
        record = self.store.load_run(agent, record_id(session_id))
        if record is None or record.decisions.get(FIELD, {}).get("id") != data_key_id:
            raise DecryptionError(
                f"{describe} is sealed by data key {data_key_id!r}, which session {session_id!r} of agent {agent!r} does not hold: "
                "it was moved from another session or agent. It was left as it is."
            )
        return self._remember(record)

    def check(self, agent: str, session_id: str) -> None:
        """Raise DecryptionError unless the session has no data key or these keys unwrap it."""
        if (agent, session_id) not in self._known:
            record = self.store.load_run(agent, record_id(session_id))
            if record is not None:
                self._remember(record)

    def forget(self) -> None:
        """Drop the unwrapped keys this process holds."""
        self._known.clear()

    def _create(self, agent: str, session_id: str) -> RunRecord:
        return self._save_data_key(self.store, new_record(self.encryption, agent, session_id))

    def _remember(self, record: RunRecord) -> DataKey:
        data_key = unwrap(self.encryption, record)
        with self._lock:
            self._known[(record.agent, record.session_id)] = data_key
        return data_key
