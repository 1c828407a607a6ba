"""Rotation without rewriting content: each session's data key re-wrapped by a new master key.

Only the data key records change (a compare-and-set save each, by :mod:`omnisync.run_state.data_keys`); every sealed value keeps its
data key, so nothing else is read or written. Resumable: a record already wrapped by the new
key is left alone, so a rotation stopped half-way is finished by running it again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..errors import ConfigurationError, StoreError
from ..run_record import DATA_KEY, RunRecord
from ..run_state import data_keys as saved_data_keys
from ..stores.base import MemoryStore
from ..encryption.data_keys import master_key_id, rewrapped
from ..encryption.keys import Encryption


@dataclass
class Rotation:
    """What a rotation did: data keys re-wrapped now, and those already wrapped by the new key."""

    to: str
    rewrapped: int = 0
    already: int = 0

    def describe(self) -> str:
        return f"{self.rewrapped + self.already} data keys now wrapped by {self.to!r} ({self.rewrapped} re-wrapped, {self.already} already were)"


def data_key_records(store: MemoryStore, page_size: int = 500, agents: Sequence[str] | None = None) -> Iterator[RunRecord]:
    """The data key records of ``agents`` (None: of every agent of the store), agent by agent,
    read a page at a time."""
    from ..stores.encrypted import EncryptedStore

    store = store.inner if isinstance(store, EncryptedStore) else store
    for agent in store.run_agents() if agents is None else agents:
        yield from store.iter_runs(agent, kind=DATA_KEY, page_size=page_size)


def key_ids_in_use(store: MemoryStore, agents: Sequence[str] | None = None) -> Counter[str]:
    """How many sessions' data keys (of ``agents``; None: of the whole store) each master key id wraps."""
    return Counter(master_key_id(record) for record in data_key_records(store, agents=agents))


def rotate(store: MemoryStore, encryption: Encryption, to: str, *, agents: Sequence[str] | None = None) -> Rotation:
    """Re-wrap every data key not wrapped by ``to`` with ``to`` (which ``encryption`` must hold),
    then count again: every data key must be wrapped by ``to``, or StoreError says how many are not.

    ``agents`` limits it to those agents' sessions (a store shared by several applications, or
    one key per tenant); None rotates the whole store."""
    if to not in encryption.keys:
        raise ConfigurationError(f"cannot rotate to {to!r}: it is not among the keys given ({', '.join(sorted(encryption.keys))}); add it to OMNISYNC_ENCRYPTION_KEYS")
    if agents is not None and (isinstance(agents, str) or not all(isinstance(a, str) and a for a in agents)):
        raise ConfigurationError(f"agents must be a list of agent names, not {agents!r}")
    target = encryption.with_current(to)
    done = Rotation(to)
    for record in data_key_records(store, agents=agents):
        if master_key_id(record) == to:
            done.already += 1
            continue
        _rewrap(store, target, record)
        done.rewrapped += 1
    counts = key_ids_in_use(store, agents)
    left = sum(count for kid, count in counts.items() if kid != to)
    if left or counts[to] < done.rewrapped + done.already:
        raise StoreError(f"after the rotation {left} data keys are still wrapped by other keys ({dict(counts)}): run it again to finish")
    return done


def _rewrap(store: MemoryStore, target: Encryption, record: RunRecord) -> None:
    """One record re-wrapped by ``target``'s current key (saved by run_state, compare-and-set)."""
    saved_data_keys.rewrap(store, record, lambda r: rewrapped(target, r), lambda fresh: master_key_id(fresh) == target.current)


def key_ids_doctor_line(store: MemoryStore, encryption: Encryption | None) -> tuple[str, str, str] | None:
    """``omnisync doctor``'s encryption check: (ok or warn, which key ids wrap how many data keys,
    what to do); None for a store without data keys read without keys (nothing to say)."""
    counts = key_ids_in_use(store)
    if not counts:
        return None if encryption is None else ("ok", "no data keys yet: nothing in this store is encrypted", "")
    detail = "key ids in use: " + ", ".join(f"{kid} ({count} sessions)" for kid, count in sorted(counts.items()))
    absent = sorted(set(counts) - set(encryption.keys if encryption is not None else ()))
    if absent:
        return "warn", detail, f"OMNISYNC_ENCRYPTION_KEYS lacks {', '.join(absent)}: what those wrap cannot be read here"
    return "ok", detail, ""
