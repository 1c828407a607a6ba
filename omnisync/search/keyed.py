"""Index terms under encryption at rest: keyed hashes of a message's terms, never its words.

With encryption on, a store's index (SQLite's FTS5 table, PostgreSQL's ``tsvector``, MongoDB's
``terms`` array) holds, for each term :func:`~omnisync.search.terms.index_terms` gives, the
first :data:`HASH_BYTES` bytes of its HMAC-SHA256 under the agent's search key
(:mod:`omnisync.stores.encrypted_search`), written as 16 letters ``a`` to ``p`` (one a 4 bits:
a token every engine's tokenizer keeps whole), sorted, so the words' order is not kept. A
query's terms are hashed the same way, so a store matches and counts them as it would the words.

:class:`KeyedMessage` carries those hashes from the seal (where the words are still in clear)
to the store's write; :func:`stored_terms` is what every store indexes for a message it writes.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from ..encryption.envelope import is_sealed
from ..messages import Message
from .terms import index_terms, searchable_text

HASH_BYTES = 8
"""How much of each term's HMAC-SHA256 the index keeps (64 bits: a collision among a million
distinct words is about one chance in 36 million)."""
KNOWN_TERMS = 50_000
"""How many terms' hashes a hasher keeps in this process."""
_AS_LETTERS = str.maketrans("0123456789abcdef", "abcdefghijklmnop")

SealedTerms = Callable[[Message], list[str]]
"""The keyed terms of a sealed message as a store holds it (it opens it): what a reindex writes."""


class TermHasher:
    """One agent's term hashing: ``hasher(term)`` is the token its index holds for ``term``."""

    def __init__(self, key: bytes) -> None:
        self._base = hmac.new(key, digestmod=hashlib.sha256)
        self._known: dict[str, str] = {}  # words repeat (a language's frequent ones most): hashed once

    def __call__(self, term: str) -> str:
        known = self._known.get(term)
        if known is None:
            keyed = self._base.copy()
            keyed.update(term.encode())
            known = keyed.digest()[:HASH_BYTES].hex().translate(_AS_LETTERS)
            if len(self._known) >= KNOWN_TERMS:
                self._known.clear()
            self._known[term] = known
        return known

    def terms(self, terms: Iterable[str]) -> list[str]:
        """Each of ``terms`` hashed, repeats kept (they weigh in the score), sorted."""
        return sorted(map(self, terms))


@dataclass(slots=True)
class KeyedMessage(Message):
    """A sealed message as a store writes it, with the keyed hashes of its terms in clear."""

    keyed_terms: list[str] = field(default_factory=list)

    def placed(self, *, agent: str, session_id: str, seq: int, created_at: datetime) -> "KeyedMessage":
        """As :meth:`Message.placed`, the hashes kept (a fold places the summary it is given again)."""
        m = self
        return KeyedMessage(
            m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.metadata, m.tokens, m.run_id,
            agent, session_id, seq, m.status, created_at, m.keyed_terms,
        )


def stored_terms(message: Message) -> list[str]:
    """What a store indexes for ``message`` as it writes it: the hashes a sealed one carries, else its terms."""
    if isinstance(message, KeyedMessage):
        return message.keyed_terms
    return index_terms(searchable_text(message.content))


def stored_terms_text(message: Message) -> str | None:
    """:func:`stored_terms` as the SQL store's ``terms`` column holds them (None: nothing to index)."""
    terms = stored_terms(message)
    return " ".join(terms) if terms else None


def terms_to_index(message: Message, sealed_terms: SealedTerms | None) -> list[str]:
    """What a reindex writes for a stored message: a sealed one's keyed terms (opened by
    ``sealed_terms``, the encrypting store's; none without it), else its own terms."""
    if is_sealed(message.content):
        return sealed_terms(message) if sealed_terms is not None else []
    return stored_terms(message)
