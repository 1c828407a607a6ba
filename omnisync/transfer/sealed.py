"""Moving sealed values between stores.

An export that holds sealed values, imported into an encrypting store: each value opened with
the export's own data key records (which the target's master keys unwrap) at the place it was
sealed for, then sealed again by the target at its new place (its seq may change). The
export's data key records are not imported: the target makes its own. A copy between two
stores is refused, before anything is written, unless both are opened with keys or the source
holds nothing sealed (:func:`check_copy`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import fields

from ..errors import DecryptionError, TransferError
from ..messages import Message
from ..run_record import DATA_KEY, RunRecord
from ..stores.base import MemoryStore
from ..stores.encrypted import EncryptedStore
from .records import EventBatch, Export
from ..encryption import sealing
from ..encryption.data_keys import DataKey, unwrap
from ..encryption.keys import Encryption


def for_target(export: Export, target: MemoryStore) -> Export:
    """``export`` as ``target`` can take it: as it is when it holds no data key records; opened
    (see the module docstring) when it does; TransferError when it does and the target has no keys."""
    held = {(r.agent, r.session_id): r for r in export.runs if r.kind == DATA_KEY}
    if not held:
        return export
    if not isinstance(target, EncryptedStore):
        raise TransferError(
            f"{export.source} holds encrypted values, and the destination has no encryption keys: nothing was written. "
            "Set OMNISYNC_ENCRYPTION_KEYS (or give the router encryption=) so they are opened and sealed again at their "
            "new place, or export with --decrypt."
        )
    return _Opened(export, held, target.encryption)


class _Opened(Export):
    """The export's messages, records and events, opened as they are read."""

    def __init__(self, export: Export, held: dict[tuple[str, str], RunRecord], encryption: Encryption) -> None:
        super().__init__(**{f.name: getattr(export, f.name) for f in fields(export)})
        self.held: dict[tuple[str, str], RunRecord] = held
        self.encryption: Encryption = encryption
        self.known: dict[tuple[str, str], DataKey] = {}
        self.runs = [self._open_record(r) for r in export.runs if r.kind != DATA_KEY]
        self._sessions_of_runs = {(r.agent, r.run_id): r.session_id for r in export.runs}

    def _opener(self, agent: str, session_id: str) -> sealing.Opener:
        def data_key(data_key_id: str, describe: str) -> DataKey:
            key = self.known.get((agent, session_id))
            if key is None:
                record = self.held.get((agent, session_id))
                if record is None:
                    raise DecryptionError(f"{describe} is sealed, and {self.source} holds no data key for session {session_id!r} of {agent!r}")
                key = self.known[(agent, session_id)] = unwrap(self.encryption, record)
            if key.id != data_key_id:
                raise DecryptionError(f"{describe} is sealed by another data key than its session's: it was moved there")
            return key

        return data_key

    def _open_record(self, record: RunRecord) -> RunRecord:
        return sealing.open_record(record, self._opener(record.agent, record.session_id), True)

    def messages(self) -> Iterator[Message]:
        for message in super().messages():
            yield sealing.open_message(message, self._opener(message.agent, message.session_id), True)

    def events(self) -> Iterator[EventBatch]:
        for agent, run_id, first, events in super().events():
            opener = self._opener(agent, self._sessions_of_runs.get((agent, run_id), f"run:{run_id}"))
            opened = [(name, sealing.open_event(agent, run_id, event_id, name, data, opener, True)) for event_id, (name, data) in enumerate(events, first)]
            yield agent, run_id, first, opened


def check_copy(source: MemoryStore, target: MemoryStore, agents: Sequence[str]) -> None:
    """Refuse (TransferError, nothing written) a copy that would lose what encryption protects or
    keeps: from a store opened with keys into one opened without (its values would land in
    clear), or from a store holding sealed values opened without keys (they would be copied
    unreadable, or sealed a second time)."""
    if isinstance(source, EncryptedStore):
        if not isinstance(target, EncryptedStore):
            raise TransferError(
                "the source is opened with encryption keys and the destination without: its values would be written there in clear. "
                "Nothing was written. Give both the same encryption (encryption= on both routers; on the command line "
                "OMNISYNC_ENCRYPTION_KEYS opens both), or, for a copy in clear, `omnisync export --decrypt` and import that file."
            )
        return
    sealed = [agent for agent in agents if source.runs_page(agent, None, 1, kind=DATA_KEY)]
    if sealed:
        where = "the destination opened with keys would seal them again" if isinstance(target, EncryptedStore) else "they would not open there"
        raise TransferError(
            f"the source holds encrypted values (agent {sealed[0]!r}) and is opened without encryption keys: {where}. "
            "Nothing was written. Give both the same encryption (encryption= on both routers; on the command line set "
            "OMNISYNC_ENCRYPTION_KEYS), or `omnisync export --decrypt` with the keys and import that file."
        )
