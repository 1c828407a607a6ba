"""Search by reading the agent's sessions: the engine of stores that keep no index of their own.

A bounded scan: at most :data:`SCAN_LIMIT` active messages (the agent's sessions in listing
order, each oldest first), scored with BM25 (k1 = 1.2, b = 0.75, the constants SQLite's FTS5
uses) over the messages read, so its order is FTS5's on the same corpus when the scan reads it
all. Its cost follows the agent's messages, not the query's hits: fine for the process store
and small Redis data sets, not for an agent with millions of messages (docs/history.md).
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from ..messages import Message
from .hits import Found
from .terms import index_terms, searchable_text

SCAN_LIMIT = 200_000
"""The most messages one scan reads."""
K1 = 1.2
B = 0.75


def bm25_search(
    messages: Iterable[Message], terms: list[str], limit: int, *, before: datetime | None = None, after: datetime | None = None
) -> list[Found]:
    """The ``limit`` best of ``messages`` that hold every term, best first (ties: session, then seq)."""
    wanted = set(terms)
    total = 0
    total_length = 0
    document_frequency: Counter[str] = Counter()
    matches: list[tuple[Message, Counter[str], int]] = []
    for message in messages:
        if total >= SCAN_LIMIT:
            break
        own = index_terms(searchable_text(message.content))
        if not own:
            continue
        total += 1
        total_length += len(own)
        counts = Counter(term for term in own if term in wanted)
        for term in counts:
            document_frequency[term] += 1
        if len(counts) == len(wanted) and _in_time(message, before, after):
            matches.append((message, counts, len(own)))
    if not matches:
        return []
    average = total_length / total
    scored = []
    for message, counts, length in matches:
        score = 0.0
        for term, frequency in counts.items():
            idf = math.log(1 + (total - document_frequency[term] + 0.5) / (document_frequency[term] + 0.5))
            score += idf * frequency * (K1 + 1) / (frequency + K1 * (1 - B + B * length / average))
        scored.append(Found(score, message))
    return heapq.nsmallest(limit, scored, key=lambda f: (-f.score, f.message.session_id, f.message.seq or 0))


def _in_time(message: Message, before: datetime | None, after: datetime | None) -> bool:
    moment = message.created_at
    if moment is None:
        return before is None and after is None
    return (before is None or moment < before) and (after is None or moment > after)
