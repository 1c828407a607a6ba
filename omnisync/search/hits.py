"""What a search returns: :class:`SearchHit`, built from a store's :class:`Found` with a snippet."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TypedDict

from ..messages import Message
from .terms import searchable_text

SNIPPET_CHARS = 160
"""The most characters of a hit's snippet (an ellipsis marks text left out at either end)."""


class SearchHit(TypedDict):
    """One message a search found: where it is, what it says around the query's terms, how well it matched.

    ``score`` is the store's engine's (higher is better; comparable within one search, not
    across backends); ``created_at`` ISO 8601 in UTC.
    """

    session_id: str
    seq: int
    role: str
    snippet: str
    score: float
    created_at: str | None


@dataclass(frozen=True)
class Found:
    """A store's answer for one message: its score (higher is better) and the message."""

    score: float
    message: Message


def hit_of(found: Found, terms: list[str]) -> SearchHit:
    """The hit a caller sees: the snippet is cut from the message itself (never from the index)."""
    message = found.message
    return {
        "session_id": message.session_id,
        "seq": message.seq if message.seq is not None else 0,
        "role": message.role,
        "snippet": snippet(searchable_text(message.content), terms),
        "score": round(found.score, 6),
        "created_at": message.created_at.isoformat() if message.created_at else None,
    }


def snippet(text: str, terms: list[str], width: int = SNIPPET_CHARS) -> str:
    """Up to ``width`` characters of ``text`` around the first place one of ``terms`` occurs."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    folded = unicodedata.normalize("NFKC", flat).casefold()
    start = 0
    if len(folded) == len(flat):  # offsets of the folded text are the text's own
        places = [m.start() for term in terms for m in [re.search(re.escape(term), folded)] if m]
        if places:
            start = max(0, min(places) - width // 4)
    start = min(start, len(flat) - width)
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")
