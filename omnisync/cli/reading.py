"""Reading never creates: a command that only reads a store, or changes what it holds, first checks that it is there.

Opening a store makes it (a SQLite file, tables, a MongoDB collection and its indexes), which
is right for an agent and an import, and wrong for ``sessions`` with a typo in the path: that
would leave an empty store behind and answer "no sessions". So these commands look before they
open, through the driver alone, and a missing store is an error that names where they looked:

- SQLite: the file exists and holds omnisync's tables (the in-memory database holds nothing).
- Other SQL: the database accepts a connection and holds omnisync's tables.
- Redis: some key carries the store's prefix (``OMNISYNC_REDIS_PREFIX``); Redis reads write nothing.
- MongoDB: the database holds the store's collection; the store is opened without making indexes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import _env
from ..router import MemoryRouter
from ..redact import redact_url as redact
from .connect import choose_kind, open_router, url_of
from .errors import CommandError

_REASON = "reading never creates one"


@contextmanager
def open_existing(kind: str | None, url: str | None, timeout: float) -> Iterator[MemoryRouter]:
    """A router on a store that is already there; :class:`CommandError` naming the place if it is not."""
    kind = choose_kind(kind, url)
    found = url_of(kind, url)
    if found is None:  # the router says which variable is missing
        with open_router(kind, url, timeout) as router:
            yield router
        return
    if kind == "mongodb":
        with _existing_mongodb(found, timeout) as router:
            yield router
        return
    if kind == "sql":
        _check_sql(found, timeout)
    elif kind == "redis":
        _check_redis(found, timeout)
    with open_router(kind, url, timeout) as router:
        yield router


def _check_sql(url: str, timeout: float) -> None:
    import sqlalchemy as sa
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from ..stores.sql_schema import schema_info

    try:
        parsed = sa.engine.make_url(url)
    except ArgumentError:
        return  # not a URL: opening the store says what is wrong with it
    shown = redact(url)
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or parsed.query.get("mode") == "memory":
            raise CommandError(f"no store at {shown}: an in-memory SQLite database holds nothing another process wrote")
        if not database.startswith("file:") and not Path(database).is_file():
            raise CommandError(f"no store at {database}: no such file ({_REASON}; check the path)")
    elif parsed.get_backend_name() == "postgresql":
        connect_args["connect_timeout"] = max(1, round(timeout))
    try:
        engine = sa.create_engine(parsed, connect_args=connect_args)
    except (ArgumentError, ImportError):
        return  # opening the store names the problem (or the driver to install)
    try:
        with engine.connect() as conn:
            holds_store = sa.inspect(conn).has_table(schema_info.name)
    except SQLAlchemyError as exc:
        from ..stores.postgres_pooling import statement_pooling_error

        message = statement_pooling_error(shown, exc) or f"cannot open {shown}: {_first_line(getattr(exc, 'orig', None) or exc)}"
        raise CommandError(message) from None
    finally:
        engine.dispose()
    if not holds_store:
        raise CommandError(f"no store at {shown}: it has no omnisync tables ({_REASON}; check the URL)")


def _check_redis(url: str, timeout: float) -> None:
    import redis

    prefix = _env.redis_prefix()
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout)
    except ValueError:
        return  # opening the store says what is wrong with the URL
    try:
        if client.exists(f"{prefix}:agents") or next(client.scan_iter(match=f"{_glob_escaped(prefix)}:*", count=1000), None):
            return
    except redis.RedisError as exc:
        raise CommandError(f"cannot reach {redact(url)}: {_first_line(exc)}") from None
    finally:
        client.close()
    raise CommandError(
        f"no store at {redact(url)}: no key starts with {prefix + ':'!r} ({_REASON}; check the database number and OMNISYNC_REDIS_PREFIX)"
    )


@contextmanager
def _existing_mongodb(url: str, timeout: float) -> Iterator[MemoryRouter]:
    import pymongo
    from pymongo.errors import PyMongoError

    from ..stores.mongo import MongoStore

    try:
        millis = int(timeout * 1000)
        client: pymongo.MongoClient[Any] = pymongo.MongoClient(
            url, tz_aware=True, appname="omnisync", serverSelectionTimeoutMS=millis, connectTimeoutMS=millis
        )
    except PyMongoError:
        with open_router("mongodb", url, timeout) as router:  # it words the configuration error
            yield router
        return
    try:
        store = MongoStore(client, ensure_indexes=False)
        try:
            collections = store.db.list_collection_names()
        except PyMongoError as exc:
            raise CommandError(f"cannot reach {redact(url)}: {_first_line(exc)}") from None
        if store.messages.name not in collections:
            raise CommandError(
                f"no store at {redact(url)}: database {store.db.name!r} has no collection {store.messages.name!r} "
                f"({_REASON}; check MONGODB_DB_NAME and MONGODB_COLLECTION)"
            )
        with MemoryRouter(store=store) as router:
            yield router
    finally:
        client.close()


def _glob_escaped(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _first_line(exc: object) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__
