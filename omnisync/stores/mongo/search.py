"""The MongoDB store's search: an array of index terms in each message's own document.

FerretDB v1.24 has no text indexes (as probed: creating one, then ``$text``, answers
"can't find index with key"), so neither server's text search is used. Each message document
holds ``terms``, the distinct terms :func:`omnisync.search.terms.index_terms` gives, written by
the same insert as the message (no second write to keep in step), with a multikey index on
``(agent, terms)``. A search finds the active documents holding every term (``$all``), at most
:data:`CANDIDATES` of them, and ranks them with BM25: the agent's message count and each
term's document count are ``count_documents`` on that index (MongoDB answers them from it;
FerretDB scans), a term's frequency and a message's length are read from the message. A sealed
message's document (encryption at rest) holds its keyed terms with repeats (omnisync.search.keyed),
which give the frequency and length its content, sealed, cannot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...messages import ACTIVE, Message
from ...search.hits import Found
from ...encryption.envelope import is_sealed
from ...search.keyed import KeyedMessage, SealedTerms, terms_to_index
from ...search.scan import B, K1
from ...search.terms import index_terms, searchable_text

if TYPE_CHECKING:
    from pymongo.collection import Collection

TERMS_INDEX = "omnisync_terms"
CANDIDATES = 10_000
"""The most matching documents one search reads (the newest, by write time)."""


def document_terms(message: Message) -> list[str]:
    """The ``terms`` field of a message's document: its distinct terms; a sealed message's keyed
    terms, repeats kept (its content cannot be read to count them: omnisync.search.keyed)."""
    if isinstance(message, KeyedMessage):
        return message.keyed_terms
    return list(dict.fromkeys(index_terms(searchable_text(message.content))))


def search_documents(
    messages: "Collection[Any]",
    to_message: Any,
    agent: str,
    terms: Sequence[str],
    session_id: str | None,
    limit: int,
    before: datetime | None,
    after: datetime | None,
) -> list[Found]:
    """The ``limit`` best active messages of ``agent`` holding every term, best first."""
    scope: dict[str, Any] = {"agent": agent, "status": ACTIVE}
    wanted: dict[str, Any] = {**scope, "terms": {"$all": list(terms)}}
    if session_id is not None:
        wanted["session_id"] = session_id
    if before is not None or after is not None:
        wanted["created_at"] = {**({"$lt": before} if before else {}), **({"$gt": after} if after else {})}
    documents = list(messages.find(wanted).sort("created_at", -1).limit(CANDIDATES))
    if not documents:
        return []
    candidates = [to_message(doc) for doc in documents]
    total = max(messages.count_documents({**scope, "terms": {"$exists": True, "$ne": []}}), 1)
    frequency = {term: messages.count_documents({**scope, "terms": term}) for term in terms}
    owns = [doc.get("terms") or [] if is_sealed(m.content) else index_terms(searchable_text(m.content)) for doc, m in zip(documents, candidates)]
    average = sum(map(len, owns)) / len(owns)
    scored = []
    for message, own in zip(candidates, owns):
        length = len(own)
        score = 0.0
        for term in terms:
            tf = own.count(term)
            idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        scored.append(Found(score, message))
    scored.sort(key=lambda f: (-f.score, f.message.session_id, f.message.seq or 0))
    return scored[:limit]


def reindex_documents(messages: "Collection[Any]", to_message: Any, agent: str | None, sealed_terms: SealedTerms | None = None) -> int:
    """Write every message document's ``terms`` again from its content (a sealed one's keyed
    terms, by ``sealed_terms``); return how many hold terms."""
    from pymongo import UpdateOne

    query: dict[str, Any] = {"role": {"$exists": True}}
    if agent is not None:
        query["agent"] = agent
    indexed = 0
    batch: list[Any] = []
    for doc in messages.find(query):
        message = to_message(doc)
        terms = terms_to_index(message, sealed_terms) if is_sealed(message.content) else document_terms(message)
        indexed += bool(terms)
        if doc.get("terms") != terms:
            batch.append(UpdateOne({"_id": doc["_id"]}, {"$set": {"terms": terms}}))
        if len(batch) >= 500:
            messages.bulk_write(batch, ordered=False)
            batch = []
    if batch:
        messages.bulk_write(batch, ordered=False)
    return indexed
