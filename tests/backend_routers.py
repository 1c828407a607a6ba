"""A MemoryRouter on each of the seven backends, for tests that must hold on every one.

Each router is the test's own: a Redis prefix, a MongoDB database and an agent name of its
own on the shared servers, and what it wrote is removed afterwards.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import pytest

from omnisync import MemoryRouter
import backends

BACKENDS = [
    "in_memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.backend("postgres")),
    pytest.param("pgbouncer", marks=pytest.mark.backend("pgbouncer")),
    pytest.param("redis", marks=pytest.mark.backend("redis")),
    pytest.param("redis_cluster", marks=pytest.mark.backend("redis_cluster")),
    pytest.param("mongodb", marks=pytest.mark.backend("mongodb")),
]


def open_router(kind: str, tmp_path, monkeypatch) -> Iterator[MemoryRouter]:
    """Yield a fresh router on ``kind``; afterwards delete everything it wrote."""
    if kind == "in_memory":
        with MemoryRouter("in_memory") as router:
            yield router
    elif kind == "sqlite":
        with MemoryRouter("sql", url=f"sqlite:///{tmp_path / 'memory.db'}") as router:
            yield router
    elif kind == "postgres":
        yield from _postgres("PostgreSQL", backends.postgres_url)
    elif kind == "pgbouncer":
        yield from _postgres("PostgreSQL through PgBouncer", backends.pgbouncer_url)
    elif kind == "redis":
        yield from _redis("Redis", backends.redis_url)
    elif kind == "redis_cluster":
        yield from _redis("Redis Cluster", backends.redis_cluster_url)
    else:
        yield from _mongodb(monkeypatch)


def _postgres(name: str, find_url: Callable[[], str]) -> Iterator[MemoryRouter]:
    """A router on a database of its own, so no other test's clean-up reaches what it wrote."""
    pytest.importorskip("sqlalchemy")
    url = find_url()
    with contextlib.ExitStack() as stack:
        try:
            own = stack.enter_context(backends.fresh_database(url))
            router = stack.enter_context(MemoryRouter("sql", url=own))
            router.store  # noqa: B018 - opened now, so a server that cannot be reached is found here
        except Exception as exc:  # noqa: BLE001 - any failure to reach it is a reason to skip (or fail in CI)
            backends.unreachable(name, f"{exc.__class__.__name__}: {exc}")
        yield router


def _redis(name: str, find_url: Callable[[], str]) -> Iterator[MemoryRouter]:
    pytest.importorskip("redis")
    from omnisync.errors import StoreError

    url = find_url()
    try:
        router = MemoryRouter("redis", url=url, prefix=f"omnisync-failures-{uuid.uuid4().hex}", connect_timeout=2)
        router.store.client.ping()
    except StoreError as exc:  # a cluster that cannot be reached fails as the store is made
        backends.unreachable(name, f"{url}: {exc}")
    except Exception as exc:  # noqa: BLE001 - redis' own connection errors
        router.close()
        backends.unreachable(name, f"{url}: {exc.__class__.__name__}: {exc}")
    with router:
        yield router
        store = router.store
        for key in list(store.client.scan_iter(match=f"{store.prefix}:*", count=1000)):
            store.client.delete(key)  # one at a time: on a cluster they lie in many slots


def _mongodb(monkeypatch) -> Iterator[MemoryRouter]:
    pymongo = pytest.importorskip("pymongo")
    uri = backends.mongodb_uri()
    database = f"omnisync_failures_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("MONGODB_DB_NAME", database)
    try:
        router = MemoryRouter("mongodb", url=uri)
    except Exception as exc:  # noqa: BLE001
        backends.unreachable("MongoDB (FerretDB)", f"{exc.__class__.__name__}: {exc}")
    with router:
        yield router
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000) as client:
        client.drop_database(database)
