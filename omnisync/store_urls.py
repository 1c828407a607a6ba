"""Checks on a store URL made before anything is opened, so a mistake says how to write it."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from .errors import ConfigurationError
from .redact import redact_url
from .stores.registry import KINDS, kind_named_by

_SQL_FORMS = (
    "sqlite:///relative/path.db, sqlite:////absolute/path.db, sqlite:///:memory: "
    "or postgresql+psycopg://user:password@host:5432/dbname"
)

_SQL_URL_START = re.compile(r"[\w+]+://")


def check_url(kind: str, url: str) -> str:
    """``url`` if it suits a store of ``kind``; a ConfigurationError naming the right form otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(f"MemoryRouter({kind!r}) got an empty URL; use a URL such as {_example(kind)}")
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    dialect = scheme.split("+", 1)[0]
    belongs_to = kind_named_by(url)
    if belongs_to is not None and belongs_to != kind:
        raise ConfigurationError(
            f"{_shown(url)} is a {belongs_to} URL, but MemoryRouter({kind!r}) was asked for: "
            f"use MemoryRouter({belongs_to!r}, url=...), or give a {kind} URL such as {_example(kind)}"
        )
    if kind == "sql":
        _check_sql(url, dialect)
    return url


def _check_sql(url: str, dialect: str) -> None:
    if not dialect:
        raise ConfigurationError(f"{_shown(url)} is not a database URL; use {_SQL_FORMS}")
    if dialect == "postgres":
        raise ConfigurationError(f"{_shown(url)}: SQLAlchemy calls the scheme postgresql; use {_SQL_FORMS}")
    if dialect not in ("sqlite", "postgresql"):
        raise ConfigurationError(
            f"{_shown(url)} is a {dialect} URL; omnisync's SQL store runs on SQLite and PostgreSQL: use {_SQL_FORMS}, "
            "or another kind of store (redis, mongodb)"
        )
    if dialect == "sqlite" and urlsplit(url).netloc:
        path = url.split("://", 1)[1]
        raise ConfigurationError(
            f"{_shown(url)} names a host, which SQLite does not have; for a file use sqlite:///{path} "
            f"(three slashes, relative to the working directory) or sqlite:////absolute/{path}"
        )
    # What SQLAlchemy's make_url refuses (the rest of its pattern is optional), checked without
    # importing SQLAlchemy: a router is made at import time, and that import costs a server's start.
    if not _SQL_URL_START.match(url):
        raise ConfigurationError(f"{_shown(url)} is not a database URL; use {_SQL_FORMS}")


def _example(kind: str) -> str:
    return KINDS[kind].example_url or "none (in_memory takes no URL)"


def _shown(url: str) -> str:
    return repr(redact_url(url))
