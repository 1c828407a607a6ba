"""Every kind of store, declared once: its class, environment variable, URL schemes and options.

The router, the URL and option checks and the command line read this table; adding a
backend is one entry here and one module beside it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import _env
from .base import MemoryStore


@dataclass(frozen=True)
class StoreKind:
    """One kind of store, as ``MemoryRouter(name, ...)`` names it."""

    name: str
    module: str  # the module that holds ``class_name``
    class_name: str
    environment: str | None = None  # the variable a URL is read from when none is given
    read_environment: Callable[[], str | None] = lambda: None
    example_url: str | None = None
    schemes: tuple[str, ...] = ()  # URL schemes (before any ``+driver``) that name this kind
    own_options: tuple[str, ...] = ()  # options of ours, besides connect_timeout and timeout
    client: str | None = None  # whose options pass through, e.g. "redis.Redis"
    extra: str = ""
    open: Callable[[type[Any], str, dict[str, Any]], MemoryStore] = field(
        default=lambda store_class, url, options: store_class.from_url(url, **options)
    )

    @property
    def networked(self) -> bool:
        """Reached through a URL another process can reach too (all but the in-process store)."""
        return self.environment is not None

    def store_class(self) -> type[MemoryStore]:
        store_class: type[MemoryStore] = getattr(importlib.import_module(self.module), self.class_name)
        return store_class

    def build(self, url: str | None, options: dict[str, Any]) -> MemoryStore:
        store_class = self.store_class()
        if url is None:
            return store_class()
        return self.open(store_class, url, options)


KINDS: dict[str, StoreKind] = {
    kind.name: kind
    for kind in (
        StoreKind("in_memory", "omnisync.stores.in_memory", "InMemoryStore"),
        StoreKind(
            "sql",
            "omnisync.stores.sql",
            "SQLStore",
            environment="DATABASE_URL",
            read_environment=_env.database_url,
            example_url="sqlite:///./memory.db",
            schemes=("sqlite", "postgresql", "postgres"),
            extra="postgres",
        ),
        StoreKind(
            "redis",
            "omnisync.stores.redis_store",
            "RedisStore",
            environment="REDIS_URL",
            read_environment=_env.redis_url,
            example_url="redis://localhost:6379/0",
            schemes=("redis", "rediss", "unix"),
            own_options=("prefix",),
            client="redis.Redis",
            extra="redis",
        ),
        StoreKind(
            "mongodb",
            "omnisync.stores.mongo",
            "MongoStore",
            environment="MONGODB_URI",
            read_environment=_env.mongodb_uri,
            example_url="mongodb://localhost:27017/omnisync",
            schemes=("mongodb", "mongodb+srv"),
            own_options=("db_name", "collection"),
            client="MongoClient",
            extra="mongodb",
        ),
    )
}

NETWORKED = tuple(name for name, kind in KINDS.items() if kind.networked)
"""The kinds other processes can open too (the command line reaches only these)."""


def kind_named_by(url: str) -> str | None:
    """The kind a URL's scheme names (``postgresql+psycopg://`` is ``sql``), or None."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    for candidate in (scheme, scheme.split("+", 1)[0]):
        for kind in KINDS.values():
            if candidate in kind.schemes:
                return kind.name
    return None
