"""The one function that turns text into index terms, for writing and for querying alike.

Every store indexes the terms this module gives, never the text itself: SQLite's FTS5 and
PostgreSQL's ``tsvector`` index a column of them, MongoDB an array of them, the scan compares
them. A term is a run of letters and digits, NFKC-normalised and case-folded; each CJK
character is a term of its own (those scripts put no spaces between words). A sealed value
(encryption at rest) gives no terms: with encryption on, a store indexes the keyed hashes of
the terms of the message in clear (:mod:`omnisync.search.keyed`), never a word.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from ..encryption.envelope import PREFIX as SEALED_PREFIX

MAX_TERMS_PER_MESSAGE = 4096
"""A message's terms past this many are not indexed (a pasted file is searchable by its start)."""
MAX_QUERY_TERMS = 32
"""A query's terms past this many are dropped."""

_WORD = re.compile(r"[^\W_]+")
_ASCII_WORD = re.compile(r"[a-z0-9]+")  # _WORD on case-folded ASCII text
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def index_terms(text: str, limit: int = MAX_TERMS_PER_MESSAGE) -> list[str]:
    """The terms of ``text``, in order, repeats kept (they weigh in the score)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():  # the same words as _WORD finds, by a cheaper pattern
        return _ASCII_WORD.findall(folded)[:limit]
    if not _CJK.search(folded):  # the words are the terms: one regex pass, not one a word
        return _WORD.findall(folded)[:limit]
    terms: list[str] = []
    for word in _WORD.findall(folded):
        if _CJK.search(word):
            terms.extend(_split_cjk(word))
        else:
            terms.append(word)
        if len(terms) >= limit:
            return terms[:limit]
    return terms


def query_terms(query: str) -> list[str]:
    """A query's distinct terms, in order: a hit holds every one of them."""
    return list(dict.fromkeys(index_terms(query, MAX_QUERY_TERMS)))


def searchable_text(content: str | list[dict[str, Any]] | None) -> str:
    """The text a message's content holds: itself, or its text parts joined (images and files are
    not searched). Sealed content (encryption at rest) holds none: its terms are hashed before it is sealed."""
    if isinstance(content, str):
        return "" if content.startswith(SEALED_PREFIX) else content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text")
    return ""


def message_terms(content: str | list[dict[str, Any]] | None) -> str | None:
    """The index column a store writes with a message: its terms joined by spaces (None: nothing to index)."""
    terms = index_terms(searchable_text(content))
    return " ".join(terms) if terms else None


def _split_cjk(word: str) -> list[str]:
    """A run mixing CJK characters and others: each CJK character alone, the rest as runs."""
    out: list[str] = []
    rest = ""
    for char in word:
        if _CJK.match(char):
            if rest:
                out.append(rest)
                rest = ""
            out.append(char)
        else:
            rest += char
    if rest:
        out.append(rest)
    return out
