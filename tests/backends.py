"""Reaching the real servers the backend tests use.

With CI set, a server that cannot be reached fails the test; elsewhere the test is skipped
with the reason, so a laptop without the servers still runs everything else.
"""

from __future__ import annotations

import os

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


def mongodb_uri() -> str:
    url = os.environ.get("MONGODB_URI")
    if WITHOUT_SERVERS or not url:
        unreachable("MongoDB (FerretDB)", "MONGODB_URI is not set")
    return url  # type: ignore[return-value]


def forget_agent(kind: str, url: str, agent: str) -> None:
    """Remove everything a test wrote under ``agent`` on a shared server (sessions, messages, runs)."""
    if kind == "redis":
        from omnisync.stores.redis_store import RedisStore

        with RedisStore.from_url(url, prefix="omnisync") as store:
            stem = store._agent_stem(agent)  # on a cluster, "omnisync:{a:A}"; sessions are "omnisync:{a:A:s:S}"
            patterns = [f"{stem}:*"] + ([f"{stem[:-1]}:s:*"] if store.cluster else [])
            for pattern in patterns:
                for key in list(store.client.scan_iter(match=pattern, count=1000)):
                    store.client.delete(key)  # one at a time: on a cluster they lie in many slots
            store.client.srem(store._agents_key, agent.encode("utf-8").hex())
    elif kind == "sql" and not url.startswith("sqlite"):
        import sqlalchemy as sa

        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                for table in ("omnisync_messages", "omnisync_runs", "omnisync_sessions"):
                    if sa.inspect(conn).has_table(table):
                        conn.execute(sa.text(f"delete from {table} where agent = :agent"), {"agent": agent})
        finally:
            engine.dispose()
