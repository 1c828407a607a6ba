"""What the registry asks of the MongoDB store besides its class: which of MongoClient's options
pass through, and a store opened (without making its indexes) only if its database holds its
collection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import StoreError
from ...redact import redact_url
from ..base import MemoryStore
from ..registry import NOT_CREATED, first_line


def client_accepts(name: str, value: Any) -> bool:
    try:
        from pymongo.common import validate
        from pymongo.errors import ConfigurationError as MongoConfigurationError
    except ImportError:
        return True
    try:
        validate(name, value)
    except MongoConfigurationError as exc:
        return not str(exc).startswith("Unknown option")
    except Exception:  # a known option with a bad value: MongoClient says what is wrong with it
        return True
    return True


def open_existing(url: str, options: dict[str, Any], build: Callable[..., MemoryStore]) -> MemoryStore:
    """The database is the one the router would use (``db_name``, else the URL's, else ``MONGODB_DB_NAME``)."""
    from pymongo.errors import PyMongoError

    store: Any = build(ensure_indexes=False)
    try:
        collections = store.db.list_collection_names()
    except PyMongoError as exc:
        problem = f"cannot reach {redact_url(url)}: {first_line(exc)}"
    else:
        if store.messages.name in collections:
            return store  # type: ignore[no-any-return]
        problem = (
            f"no store at {redact_url(url)}: database {store.db.name!r} has no collection {store.messages.name!r} "
            f"({NOT_CREATED}; check the database the URL names, else MONGODB_DB_NAME, and MONGODB_COLLECTION)"
        )
    store.close()
    raise StoreError(problem)
