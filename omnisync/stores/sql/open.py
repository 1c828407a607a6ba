"""What the registry asks of the SQL store besides its class: its URL checked without importing
SQLAlchemy (a router is made at import time, and that import costs a server's start), and a
store opened only if it is already there (a file, or a database that holds omnisync's tables)."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...errors import ConfigurationError, StoreError
from ...redact import redact_url
from ..base import MemoryStore
from ..registry import NOT_CREATED, first_line

_FORMS = (
    "sqlite:///relative/path.db, sqlite:////absolute/path.db, sqlite:///:memory: "
    "or postgresql+psycopg://user:password@host:5432/dbname"
)

_URL_START = re.compile(r"[\w+]+://")


SQLITE_STORE = "omnisync.stores.sql.sqlite:SQLiteStore"
POSTGRES_STORE = "omnisync.stores.sql.postgres:PostgresStore"


def store_for_url(url: str) -> str | None:
    """The subclass ``url`` opens: SQLite's own, or PostgreSQL's when the URL's engine runs on
    psycopg 3 (what the postgres extra installs); None leaves the plain SQL store (psycopg2)."""
    dialect, _, driver = url.split("://", 1)[0].lower().partition("+")
    if dialect == "sqlite":
        return SQLITE_STORE
    if dialect == "postgresql" and (driver == "psycopg" or (not driver and importlib.util.find_spec("psycopg") is not None)):
        return POSTGRES_STORE
    return None


def check_url(url: str) -> None:
    """A ConfigurationError naming the right form unless ``url`` is a SQLite or PostgreSQL URL."""
    dialect = url.split("://", 1)[0].lower().split("+", 1)[0] if "://" in url else ""
    shown = repr(redact_url(url))
    if not dialect:
        raise ConfigurationError(f"{shown} is not a database URL; use {_FORMS}")
    if dialect == "postgres":
        raise ConfigurationError(f"{shown}: SQLAlchemy calls the scheme postgresql; use {_FORMS}")
    if dialect not in ("sqlite", "postgresql"):
        raise ConfigurationError(
            f"{shown} is a {dialect} URL; omnisync's SQL store runs on SQLite and PostgreSQL: use {_FORMS}, "
            "or another kind of store (redis, mongodb)"
        )
    if dialect == "sqlite" and urlsplit(url).netloc:
        path = url.split("://", 1)[1]
        raise ConfigurationError(
            f"{shown} names a host, which SQLite does not have; for a file use sqlite:///{path} "
            f"(three slashes, relative to the working directory) or sqlite:////absolute/{path}"
        )
    # What SQLAlchemy's make_url refuses (the rest of its pattern is optional).
    if not _URL_START.match(url):
        raise ConfigurationError(f"{shown} is not a database URL; use {_FORMS}")


def open_existing(url: str, options: dict[str, Any], build: Callable[..., MemoryStore]) -> MemoryStore:
    """Opening makes the file and the tables, so look first, through the driver alone."""
    import sqlalchemy as sa
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from . import pooling as postgres_pooling
    from .schema import schema_info

    try:
        parsed = sa.engine.make_url(url)
    except ArgumentError:
        return build()  # not a URL: opening the store says what is wrong with it
    shown = redact_url(url)
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or parsed.query.get("mode") == "memory":
            raise StoreError(f"no store at {shown}: an in-memory SQLite database holds nothing another process wrote")
        if not database.startswith("file:") and not Path(database).is_file():
            raise StoreError(f"no store at {database}: no such file ({NOT_CREATED}; check the path)")
    else:
        connect_args["connect_timeout"] = max(1, round(options["connect_timeout"]))
    try:
        engine = sa.create_engine(parsed, connect_args=connect_args)
    except (ArgumentError, ImportError):
        return build()  # opening the store names the problem (or the driver to install)
    try:
        with engine.connect() as conn:
            holds_store = sa.inspect(conn).has_table(schema_info.name)
    except SQLAlchemyError as exc:
        message = postgres_pooling.statement_pooling_error(shown, exc) or f"cannot open {shown}: {first_line(getattr(exc, 'orig', None) or exc)}"
        raise StoreError(message) from None
    finally:
        engine.dispose()
    if not holds_store:
        raise StoreError(f"no store at {shown}: it has no omnisync tables ({NOT_CREATED}; check the URL)")
    return build()
