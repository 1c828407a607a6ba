"""MemoryRouter: picks and owns the memory store that agents keep history and runs in."""

from __future__ import annotations

import threading
from typing import Any

from . import _env
from .errors import ConfigurationError
from .store_options import check_options
from .store_urls import check_url
from .stores.base import MemoryStore
from .stores.registry import KINDS
from .encryption.keys import Encryption  # the keys only: cryptography is imported when a value is sealed
from .telemetry import traced_store

STORE_KINDS = tuple(KINDS)


def missing_url_message(kind: str) -> str:
    declared = KINDS[kind]
    return (
        f'MemoryRouter("{kind}") needs {declared.environment} (e.g. {declared.example_url}). Set it, or use '
        'MemoryRouter("in_memory") for a store that lasts only as long as this process.'
    )


def check_kind(kind: object) -> str:
    if kind not in KINDS:
        raise ConfigurationError(f"Invalid memory store type: {kind}. Use one of: {', '.join(KINDS)}")
    return str(kind)


def resolve_url(kind: str, url: str | None = None) -> str | None:
    """The URL a store of ``kind`` opens: ``url`` first, then the environment, checked; never a silent fallback."""
    declared = KINDS[check_kind(kind)]
    if not declared.networked:
        return None
    url = url or declared.url_from_environment()
    if not url:
        raise ConfigurationError(missing_url_message(kind))
    return check_url(kind, url)


def build_store(kind: str, url: str | None = None, **options: Any) -> MemoryStore:
    """A new store of ``kind`` on ``url`` (or the kind's environment variable), with ``options`` checked."""
    url = resolve_url(kind, url)
    return KINDS[kind].build(url, check_options(kind, options))


class MemoryRouter:
    """Where history and run records are kept: ``"in_memory"`` (default), ``"sql"``, ``"redis"``, ``"mongodb"``.

    The URL is checked when the router is made; the store is opened when first used, so a
    program that fails its own configuration first creates nothing (no empty SQLite file).
    Build one router per process and share it across agents; close it when done, or use it
    as a context manager.

    ``encryption`` (an :class:`~omnisync.encryption.Encryption`; left out, read from
    ``OMNISYNC_ENCRYPTION_KEYS`` when that is set) encrypts what the store keeps: see
    ``docs/encryption.md``.
    """

    def __init__(
        self,
        kind: str = "in_memory",
        *,
        url: str | None = None,
        store: MemoryStore | None = None,
        encryption: Encryption | None = None,
        **options: Any,
    ) -> None:
        self._encryption = encryption if encryption is not None else _encryption_from_environment()
        if store is not None:
            self._kind = store.kind
            self._store: MemoryStore | None = self._encrypted(traced_store(store))
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
        """The backend's name: ``"in_memory"``, ``"sql"``, ``"redis"`` or ``"mongodb"`` (for a store you passed in, its own ``kind``)."""
        return self._kind

    @property
    def store(self) -> MemoryStore:
        """The store, opened on first use; raises ConfigurationError once the router is closed."""
        if self._closed:
            raise ConfigurationError("This MemoryRouter is closed; build a new one to keep using memory.")
        if self._store is None:
            with self._lock:
                if self._store is None:
                    self._store = self._encrypted(traced_store(build_store(self._kind, self._url, **self._options)))  # traced: round trips, not sealing
        return self._store

    @property
    def encryption(self) -> Encryption | None:
        """The keys this router encrypts with, or None."""
        return self._encryption

    def _encrypted(self, store: MemoryStore) -> MemoryStore:
        if self._encryption is None:
            return store
        from .run_state.data_keys import create
        from .stores.encrypted import EncryptedStore

        return EncryptedStore(store, self._encryption, save_data_key=create)

    def get_memory_store_type(self) -> str:
        """The backend's name, as :attr:`kind`."""
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
        """Whether :meth:`close` was called (a closed router opens nothing again)."""
        return self._closed

    def __enter__(self) -> "MemoryRouter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryRouter({self._kind!r})"


def existing_router(kind: str, *, url: str | None = None, encryption: Encryption | None = None, **options: Any) -> MemoryRouter:
    """A router on a store that is already there, opened now, creating nothing (no file, table,
    index or collection): what the command line reads and clears. The same URL, options and
    environment open the same store as ``MemoryRouter(kind, ...)``, through its registry entry; a
    StoreError names the place when no store is there or it cannot be reached."""
    router = MemoryRouter(kind, url=url, encryption=encryption, **options)
    if router._url is None:
        raise ConfigurationError(f"a {kind} store lives inside one process: there is none to open from another")
    router._store = router._encrypted(KINDS[kind].open_existing_store(router._url, router._options))
    return router


def _encryption_from_environment() -> Encryption | None:
    return Encryption.from_environment() if _env.encryption_keys() is not None else None
