"""Search with encryption at rest: the agent's search key, and its index of keyed hashes.

Each agent has one search key: random, kept exactly as a session's data key is, in the data
key record of the reserved pseudo-session :data:`SEARCH_KEY_SESSION` (wrapped by the master
key), so a rotation re-wraps it, ``omnisync keys list`` counts it and an export carries it
with no code of their own. The HMAC key is derived from it (HMAC-SHA256 of a fixed label), so
the data key serves one use only. Terms are hashed by :class:`~omnisync.search.keyed.TermHasher`.

Stores with an index of their own (SQL, MongoDB: ``MemoryStore.keeps_search_index``) index the
hashes and are searched with the query's hashes; the hits are then opened by the encrypted store (``stores/encrypted.py``). The others
(Redis, in process) scan the opened messages, as without encryption.
"""

from __future__ import annotations

import hashlib
import hmac
import threading

from ..messages import Message
from ..search.keyed import KeyedMessage, TermHasher
from ..search.terms import index_terms, searchable_text
from .encrypted_keys import DataKeys


SEARCH_KEY_SESSION = "omnisync:search-key"
"""The pseudo-session whose data key record holds an agent's search key (it holds no messages)."""
_LABEL = b"omnisync search terms v1"


class SearchKeys:
    """The term hashers of one store's agents, their keys unwrapped once per process."""

    def __init__(self, data_keys: DataKeys) -> None:
        self.data_keys: DataKeys = data_keys
        self._hashers: dict[tuple[str, str], TermHasher] = {}
        self._lock = threading.Lock()

    def hasher(self, agent: str) -> TermHasher:
        """The agent's term hasher; its search key is made (and stored, wrapped) if it has none yet."""
        data_key = self.data_keys.for_writing(agent, SEARCH_KEY_SESSION)
        found = self._hashers.get((agent, data_key.id))
        if found is None:
            derived = hmac.new(data_key.key, _LABEL, hashlib.sha256).digest()
            with self._lock:
                found = self._hashers[(agent, data_key.id)] = TermHasher(derived)
        return found

    def keyed(self, sealed: Message, clear: Message) -> KeyedMessage:
        """``sealed`` carrying the keyed hashes of ``clear``'s terms (what the store's index writes)."""
        s = sealed
        hashed = self.hasher(clear.agent).terms(index_terms(searchable_text(clear.content)))
        return KeyedMessage(
            s.role, s.content, s.tool_calls, s.tool_call_id, s.name, s.metadata, s.tokens, s.run_id,
            s.agent, s.session_id, s.seq, s.status, s.created_at, hashed,
        )
