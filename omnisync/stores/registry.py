"""Every kind of store, declared once: one entry names everything about it.

An entry says which class a URL opens (and the subclass a scheme picks: SQLite's), the
variable its URL is read from and the others its store reads, its URL schemes and options,
and the functions that check its URL and its client's options, open a store that must
already be there (what the command line's reading commands use), and run its doctor's checks.
The router, the URL and option checks, the command line and the doctor ask the entry; none of
them branches on a kind. Adding a backend is its module (with its opener and doctor checks)
and one entry here.

Functions are named ``"module:attribute"`` and imported when first called, so reading this
table imports no driver.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _env
from .base import MemoryStore

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_TIMEOUT = 30.0
WAITS = ("connect_timeout", "timeout")
"""The two waits every network store takes, in seconds: to open a connection, and for any one read or write."""

OpenExisting = Callable[[str, dict[str, Any], Callable[..., MemoryStore]], MemoryStore]
"""``(url, options, build)``: the store at ``url``, opened by ``build(**more_options)`` (the
router's way) once it is known to be there; a StoreError naming the place otherwise."""

NOT_CREATED = "reading never creates one"
"""What an ``open_existing`` that finds no store says: it looked, and made nothing."""


def first_line(exc: object) -> str:
    """The first line of an error's message (a driver's can run to many)."""
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


@dataclass(frozen=True)
class StoreKind:
    """One kind of store, as ``MemoryRouter(name, ...)`` names it."""

    name: str
    store: str  # "module:Class" a URL of this kind opens
    store_for_url: str | None = None  # "module:function(url)": the "module:Class" of the subclass a URL opens, or None
    environment: str | None = None  # the variable a URL is read from when none is given
    settings: tuple[str, ...] = ()  # the other variables its store reads
    example_url: str | None = None
    schemes: tuple[str, ...] = ()  # URL schemes (before any ``+driver``) that name this kind
    takes_options: bool = True  # WAITS and own_options (and its client's, with client_accepts)
    own_options: tuple[str, ...] = ()  # options of ours, besides WAITS
    client: str | None = None  # whose options pass through, e.g. "redis.Redis"
    client_accepts: str | None = None  # "module:function(name, value) -> bool"
    check_url: str | None = None  # "module:function(url)": a ConfigurationError naming the right form
    open_existing: str | None = None  # "module:function", an OpenExisting
    doctor: str | None = None  # "module:function(report, url, timeout)"
    extra: str = ""

    @property
    def networked(self) -> bool:
        """Reached through a URL another process can reach too (all but the in-process store)."""
        return self.environment is not None

    def url_from_environment(self) -> str | None:
        return _env.variable(self.environment) if self.environment else None

    def store_class(self, url: str | None = None) -> type[MemoryStore]:
        """The class ``url`` opens: the subclass the entry's ``store_for_url`` names for it, if any."""
        subclass = load(self.store_for_url)(url) if url and self.store_for_url else None
        store_class: type[MemoryStore] = load(subclass or self.store)
        return store_class

    def build(self, url: str | None, options: dict[str, Any]) -> MemoryStore:
        store_class = self.store_class(url)
        if url is None:
            return store_class()
        return store_class.from_url(url, **options)  # type: ignore[attr-defined, no-any-return]

    def open_existing_store(self, url: str, options: dict[str, Any]) -> MemoryStore:
        """The store at ``url`` if it is there, opened as :meth:`build` opens it, creating nothing."""
        if self.open_existing is None:
            raise TypeError(f"a {self.name} store cannot be opened from another process")
        opener: OpenExisting = load(self.open_existing)
        return opener(url, options, lambda **more: self.build(url, {**options, **more}))


def load(reference: str) -> Any:
    """The attribute ``"module:attribute"`` names, its module imported now."""
    module, attribute = reference.split(":")
    return getattr(importlib.import_module(module), attribute)


def _scheme(url: str) -> str:
    return url.split(":", 1)[0].lower() if ":" in url else ""


KINDS: dict[str, StoreKind] = {
    kind.name: kind
    for kind in (
        StoreKind("in_memory", "omnisync.stores.in_memory:InMemoryStore", schemes=("memory", "in_memory", "in-memory"), takes_options=False),
        StoreKind(
            "sql",
            "omnisync.stores.sql.store:SQLStore",
            store_for_url="omnisync.stores.sql.open:store_for_url",
            environment="DATABASE_URL",
            example_url="sqlite:///./memory.db",
            schemes=("sqlite", "postgresql", "postgres"),
            check_url="omnisync.stores.sql.open:check_url",
            open_existing="omnisync.stores.sql.open:open_existing",
            doctor="omnisync.doctor.on_sql:check_sql",
            extra="postgres",
        ),
        StoreKind(
            "redis",
            "omnisync.stores.redis.store:RedisStore",
            environment="REDIS_URL",
            settings=("OMNISYNC_REDIS_PREFIX",),
            example_url="redis://localhost:6379/0",
            schemes=("redis", "rediss", "unix"),
            own_options=("prefix",),
            client="redis.Redis",
            client_accepts="omnisync.stores.redis.open:client_accepts",
            open_existing="omnisync.stores.redis.open:open_existing",
            doctor="omnisync.doctor.on_redis:check_redis",
            extra="redis",
        ),
        StoreKind(
            "mongodb",
            "omnisync.stores.mongo.store:MongoStore",
            environment="MONGODB_URI",
            settings=("MONGODB_DB_NAME", "MONGODB_COLLECTION"),
            example_url="mongodb://localhost:27017/omnisync",
            schemes=("mongodb", "mongodb+srv"),
            own_options=("db_name", "collection", "ensure_indexes"),
            client="MongoClient",
            client_accepts="omnisync.stores.mongo.open:client_accepts",
            open_existing="omnisync.stores.mongo.open:open_existing",
            doctor="omnisync.doctor.on_mongodb:check_mongodb",
            extra="mongodb",
        ),
    )
}

NETWORKED = tuple(name for name, kind in KINDS.items() if kind.networked)
"""The kinds other processes can open too (the command line reaches only these)."""


def kind_named_by(url: str) -> str | None:
    """The kind a URL's scheme names (``postgresql+psycopg://`` is ``sql``), or None."""
    scheme = _scheme(url)
    for candidate in (scheme, scheme.split("+", 1)[0]):
        for kind in KINDS.values():
            if candidate in kind.schemes:
                return kind.name
    return None
