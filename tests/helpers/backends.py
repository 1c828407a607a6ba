"""Reaching the real servers the backend tests use.

With CI set, a server that cannot be reached fails the test; elsewhere the test is skipped
with the reason, so a laptop without the servers still runs everything else.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

IN_CI = bool(os.environ.get("CI"))
START_HINT = 'start them with: eval "$(bash scripts/services.sh start)"'


WITHOUT_SERVERS = os.environ.get("OMNISYNC_TEST_SERVERS") == "none"
"""Set by nox's sessions that run only the in-process and SQLite part (CI runs the rest on one Python)."""


def unreachable(name: str, reason: str) -> None:
    if WITHOUT_SERVERS:
        pytest.skip(f"{name}: this run is without servers (OMNISYNC_TEST_SERVERS=none)")
    message = f"{name} is not reachable ({reason}); {START_HINT}"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def postgres_url() -> str:
    url = os.environ.get("DATABASE_URL_POSTGRES")
    if WITHOUT_SERVERS or not url:
        unreachable("PostgreSQL", "DATABASE_URL_POSTGRES is not set")
    return url  # type: ignore[return-value]


def redis_url() -> str:
    url = os.environ.get("REDIS_URL")
    if WITHOUT_SERVERS or not url:
        unreachable("Redis", "REDIS_URL is not set")
    return url  # type: ignore[return-value]


def redis_cluster_url() -> str:
    url = os.environ.get("REDIS_CLUSTER_URL")
    if WITHOUT_SERVERS or not url:
        unreachable("Redis Cluster", "REDIS_CLUSTER_URL is not set")
    return url  # type: ignore[return-value]


def pgbouncer_url() -> str:
    url = os.environ.get("DATABASE_URL_PGBOUNCER")
    if WITHOUT_SERVERS or not url:
        unreachable("PostgreSQL through PgBouncer", "DATABASE_URL_PGBOUNCER is not set")
    return url  # type: ignore[return-value]


def pgbouncer_statement_url() -> str:
    """The same database through the same PgBouncer, under a name it pools in statement mode."""
    url = os.environ.get("DATABASE_URL_PGBOUNCER_STATEMENT")
    if WITHOUT_SERVERS or not url:
        unreachable("PostgreSQL through PgBouncer in statement pooling mode", "DATABASE_URL_PGBOUNCER_STATEMENT is not set")
    return url  # type: ignore[return-value]


def mongodb_uri() -> str:
    url = os.environ.get("MONGODB_URI")
    if WITHOUT_SERVERS or not url:
        unreachable("MongoDB (FerretDB)", "MONGODB_URI is not set")
    return url  # type: ignore[return-value]


@contextlib.contextmanager
def autocommit(url: str) -> Iterator[Any]:
    """A connection to PostgreSQL outside any transaction (CREATE and DROP DATABASE need that)."""
    import sqlalchemy as sa

    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def database(url: str, name: str) -> str:
    """``url`` on database ``name`` of the same server, created if missing (PgBouncer passes any name through)."""
    import sqlalchemy as sa

    with autocommit(url) as conn:
        if conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).scalar() is None:
            try:
                # C collation, whatever the server's default: the store contract expects the
                # sessions in Python's order, which is a C database's (a test of its own covers ICU).
                conn.execute(sa.text(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING \'UTF8\' LC_COLLATE \'C\' LC_CTYPE \'C\''))
            except sa.exc.ProgrammingError as exc:  # another test worker made it first
                if "already exists" not in str(exc):
                    raise
    return sa.engine.make_url(url).set(database=name).render_as_string(hide_password=False)


@contextlib.contextmanager
def fresh_database(url: str) -> Iterator[str]:
    """A database of this test's own on ``url``'s server, dropped afterwards: nothing another
    test (or another session's test run) deletes can reach it."""
    name = f"omnisync_t_{uuid.uuid4().hex[:12]}"
    own = database(url, name)
    try:
        yield own
    finally:
        _drop_database(url, name)


def _drop_database(url: str, name: str, seconds: float = 10.0) -> None:
    """DROP ... WITH (FORCE), tried again while the server refuses: it cannot end a process of
    another role (an autovacuum worker on the new database), which ends by itself soon."""
    import sqlalchemy as sa

    deadline = time.monotonic() + seconds
    while True:
        try:
            with autocommit(url) as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            return
        except sa.exc.ProgrammingError as exc:
            if "must be a member of the role" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def check_covers_registry(kinds: set[str], where: str) -> None:
    """A kind added to the registry without its test servers and clean-up fails every backend test."""
    from omnisync.stores.registry import KINDS

    if kinds != set(KINDS):
        raise RuntimeError(f"{where} covers {sorted(kinds)}, the registry declares {sorted(KINDS)}: add the new kind's entry here too")


def forget_agent(kind: str, url: str, agent: str) -> None:
    """Remove everything a test wrote under ``agent`` on a shared server (sessions, messages, runs)."""
    _FORGET[kind](url, agent)


def _forget_redis(url: str, agent: str) -> None:
    from omnisync.stores.redis.store import RedisStore

    with RedisStore.from_url(url, prefix="omnisync") as store:
        stem = store._agent_stem(agent)  # on a cluster, "omnisync:{a:A}"; sessions are "omnisync:{a:A:s:S}"
        patterns = [f"{stem}:*"] + ([f"{stem[:-1]}:s:*"] if store.cluster else [])
        for pattern in patterns:
            for key in list(store.client.scan_iter(match=pattern, count=1000)):
                store.client.delete(key)  # one at a time: on a cluster they lie in many slots
        store.client.srem(store._agents_key, agent.encode("utf-8").hex())
        store.client.zrem(store._agents_order_key, agent.encode("utf-8").hex())  # its sorted twin


def _forget_sql(url: str, agent: str) -> None:
    if url.startswith("sqlite"):
        return  # a file of the test's own
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for table in ("omnisync_messages", "omnisync_runs", "omnisync_sessions", "omnisync_run_events"):
                if sa.inspect(conn).has_table(table):
                    conn.execute(sa.text(f"delete from {table} where agent = :agent"), {"agent": agent})
    finally:
        engine.dispose()


def _forget_nothing(url: str, agent: str) -> None:
    """In-process stores end with the test; MongoDB tests drop a database of their own."""


_FORGET = {"in_memory": _forget_nothing, "sql": _forget_sql, "redis": _forget_redis, "mongodb": _forget_nothing}
check_covers_registry(set(_FORGET), "tests/helpers/backends.py _FORGET")
