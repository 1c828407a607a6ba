"""Secrets kept out of messages, logs, reprs and stored records.

Every text that may carry a URL or a server's error body passes through here before it
reaches a store, a log, an exception or a repr: passwords in URLs, API keys (the ones this
process knows, and anything shaped like one) and bearer tokens become ``***``.

Keys given as strings are remembered for the life of the process. Tokens a callable key
mints are kept in a :class:`RecentSecrets` of their client instead: only its last few, and
only while the client lives, so a provider minting one per request cannot grow the list.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/?#@\s]*):(?P<password>[^@/?#\s]*)@")
_KEY_SHAPED = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}")
_BEARER = re.compile(r"(?i)\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}")

_known: set[str] = set()
_known_lock = threading.Lock()
_recent: "weakref.WeakSet[RecentSecrets]" = weakref.WeakSet()


def remember_secret(secret: str | None) -> None:
    """Treat ``secret`` (an API key this process uses) as text to redact wherever it appears."""
    if secret and len(secret) >= 6:
        with _known_lock:
            _known.add(secret)


class RecentSecrets:
    """The last ``limit`` secrets one owner used (a callable key's tokens), redacted until it is collected."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("RecentSecrets keeps at least one secret")
        self.limit = limit
        self._items: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        with _known_lock:
            _recent.add(self)

    def add(self, secret: str) -> None:
        """Keep ``secret`` (the newest), forgetting the oldest past ``limit``; one used again stays once."""
        if len(secret) < 6:
            return
        with self._lock:
            self._items[secret] = None
            self._items.move_to_end(secret)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)


def _all_known() -> set[str]:
    with _known_lock:
        known = set(_known)
        owners = list(_recent)
    for owner in owners:
        known.update(owner)
    return known


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit(parts._replace(netloc=f"{parts.username}:{MASK}@{host}"))
    except ValueError:
        return url


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with URL passwords, known and key-shaped API keys and bearer tokens replaced by ``***``."""
    for secret in sorted({s for s in (*_all_known(), *secrets) if s and len(s) >= 6}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    text = _KEY_SHAPED.sub(MASK, text)
    return _BEARER.sub(lambda m: f"{m[1]} {MASK}", text)


def redact_value(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A JSON-like value (an error body) with every string in it redacted."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {key: redact_value(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item, secrets) for item in value]
    return value
