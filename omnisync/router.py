"""MemoryRouter: picks and owns the memory store that agents keep history and runs in."""

from __future__ import annotations

import threading
from typing import Any

from . import _env
from .errors import ConfigurationError
from .store_options import check_options
from .store_urls import check_url
from .stores.base import MemoryStore

STORE_KINDS = ("in_memory", "sql", "redis", "mongodb")

_URL_HINTS = {
    "sql": ("DATABASE_URL", "sqlite:///./memory.db"),
    "redis": ("REDIS_URL", "redis://localhost:6379/0"),
    "mongodb": ("MONGODB_URI", "mongodb://localhost:27017"),
}


def missing_url_message(kind: str) -> str:
    variable, example = _URL_HINTS[kind]
    return (
        f'MemoryRouter("{kind}") needs {variable} (e.g. {example}). Set it, or use '
        'MemoryRouter("in_memory") for a store that lasts only as long as this process.'
    )


def check_kind(kind: object) -> str:
    if kind not in STORE_KINDS:
        raise ConfigurationError(f"Invalid memory store type: {kind}. Use one of: {', '.join(STORE_KINDS)}")
    return str(kind)


def resolve_url(kind: str, url: str | None = None) -> str | None:
    """The URL a store of ``kind`` opens: ``url`` first, then the environment, checked; never a silent fallback."""
    check_kind(kind)
    if kind == "in_memory":
        return None
    url = url or {"sql": _env.database_url, "redis": _env.redis_url, "mongodb": _env.mongodb_uri}[kind]()
    if not url:
        raise ConfigurationError(missing_url_message(kind))
    return check_url(kind, url)


def build_store(kind: str, url: str | None = None, **options: Any) -> MemoryStore:
    """A new store of ``kind`` on ``url`` (or the kind's environment variable), with ``options`` checked."""
    url = resolve_url(kind, url)
    options = check_options(kind, options)
    if kind == "in_memory":
        from .stores.in_memory import InMemoryStore

        return InMemoryStore()
    assert url is not None
    if kind == "sql":
        from .stores.sql import SQLStore

        return SQLStore(url, **options)
    if kind == "redis":
        from .stores.redis_store import RedisStore

        return RedisStore.from_url(url, **options)
    from .stores.mongo import MongoStore

    return MongoStore.from_url(url, **options)


class MemoryRouter:
    """Where history and run records are kept: ``"in_memory"`` (default), ``"sql"``, ``"redis"``, ``"mongodb"``.

    The URL is checked when the router is made; the store is opened when first used, so a
    program that fails its own configuration first creates nothing (no empty SQLite file).
    Build one router per process and share it across agents; close it when done, or use it
    as a context manager.
    """

    def __init__(self, kind: str = "in_memory", *, url: str | None = None, store: MemoryStore | None = None, **options: Any) -> None:
        if store is not None:
            self._kind = store.kind
            self._store: MemoryStore | None = store
            self._owns_store = False
        else:
            self._kind = check_kind(kind)
            self._url = resolve_url(kind, url)
            self._options = check_options(kind, options)
            self._store = None
            self._owns_store = True
        self._lock = threading.Lock()
        self._closed = False

    @property
    def kind(self) -> str:
        return self._kind

    @property
    def store(self) -> MemoryStore:
        if self._closed:
            raise ConfigurationError("This MemoryRouter is closed; build a new one to keep using memory.")
        if self._store is None:
            with self._lock:
                if self._store is None:
                    self._store = build_store(self._kind, self._url, **self._options)
        return self._store

    def get_memory_store_type(self) -> str:
        return self._kind

    def close(self) -> None:
        """Release the store's connections (only a store this router built)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._owns_store and self._store is not None:
            self._store.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "MemoryRouter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryRouter({self._kind!r})"
