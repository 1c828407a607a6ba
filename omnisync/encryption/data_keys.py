"""A data key per (agent, session), kept wrapped by a master key in a record of kind ``data_key``.

The record lives beside the session's runs (:data:`~omnisync.run_record.DATA_KEY`), so every
store keeps it, an export carries it and a rotation re-wraps it with a compare-and-set save.
Its ``decisions["data_key"]`` holds the data key's id, the master key id and the wrapped key.
This module builds and reads such records; :mod:`omnisync.run_state.data_keys` saves them, and
:mod:`omnisync.stores.encrypted_keys` keeps a store's keys unwrapped.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from ..errors import DecryptionError
from ..messages import utcnow
from ..run_record import DATA_KEY, RunRecord
from . import envelope
from .keys import KEY_BYTES, Encryption

FIELD = "data_key"

OpenedTexts = dict[str, tuple[str, str, int, str]]
"""Message contents a store has opened, by envelope: the (agent, session, seq) it was opened at, and its text."""

OPENED_TEXTS = 4096
"""How many contents an :data:`OpenedTexts` keeps: a run reads the same window again and again."""


@dataclass(frozen=True)
class DataKey:
    """A session's data key, unwrapped: its id (carried by every value it seals) and its bytes."""

    id: str
    key: bytes


def record_id(session_id: str) -> str:
    """The run_id of a session's data key record (a digest: session ids may be longer than run ids)."""
    return "data-key-" + hashlib.sha256(session_id.encode()).hexdigest()[:40]


def master_key_id(record: RunRecord) -> str:
    return str(record.decisions[FIELD]["key_id"])


def wrapped(encryption: Encryption, agent: str, session_id: str, data_key: DataKey) -> dict[str, str]:
    """The data key wrapped by the current master key, as a data key record holds it."""
    kid = encryption.current
    sealed = envelope.seal(encryption.keys[kid], data_key.id, data_key.key, _wrap_place(agent, session_id, data_key.id, kid))
    return {"id": data_key.id, "key_id": kid, "wrapped": sealed}


def unwrap(encryption: Encryption, record: RunRecord) -> DataKey:
    """The data key a record holds; DecryptionError naming the master key id it needs."""
    held = record.decisions[FIELD]
    kid, data_key_id = str(held["key_id"]), str(held["id"])
    key = encryption.keys.get(kid)
    where = f"the data key of session {record.session_id!r} of agent {record.agent!r}"
    if key is None:
        raise DecryptionError(
            f"{where} is wrapped by master key {kid!r}, which is not among the keys given ({', '.join(sorted(encryption.keys))}): "
            f"add {kid!r} to OMNISYNC_ENCRYPTION_KEYS (or Encryption(keys=...)). Nothing was changed."
        )
    opened = envelope.open_sealed(key, str(held["wrapped"]), _wrap_place(record.agent, record.session_id, data_key_id, kid), where)
    return DataKey(data_key_id, opened)


def rewrapped(encryption: Encryption, record: RunRecord) -> RunRecord:
    """The record with its data key wrapped by ``encryption.current`` (the key itself unchanged)."""
    data_key = unwrap(encryption, record)
    return record.evolve(decisions={FIELD: wrapped(encryption, record.agent, record.session_id, data_key)}, updated_at=utcnow())


def _wrap_place(agent: str, session_id: str, data_key_id: str, kid: str) -> bytes:
    return envelope.place(agent, session_id, "data_key", data_key_id, kid)


def new_record(encryption: Encryption, agent: str, session_id: str) -> RunRecord:
    """A new random data key for the session, wrapped by the current master key, as a record (not saved)."""
    data_key = DataKey(os.urandom(6).hex(), os.urandom(KEY_BYTES))
    now = utcnow()
    return RunRecord(
        run_id=record_id(session_id),
        agent=agent,
        session_id=session_id,
        kind=DATA_KEY,
        decisions={FIELD: wrapped(encryption, agent, session_id, data_key)},
        created_at=now,
        updated_at=now,
    )
