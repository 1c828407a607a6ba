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
from helpers import backends

TEST_SERVERS: dict[str, tuple[str, Callable[[], str] | None]] = {
    "in_memory": ("in_memory", None),
    "sqlite": ("sql", None),  # a file in the test's own folder
    "postgres": ("sql", backends.postgres_url),
    "pgbouncer": ("sql", backends.pgbouncer_url),
    "redis": ("redis", backends.redis_url),
    "redis_cluster": ("redis", backends.redis_cluster_url),
    "mongodb": ("mongodb", backends.mongodb_uri),
}
"""Each backend the tests run on: the registry's kind, and where its server is found."""

backends.check_covers_registry({kind for kind, _ in TEST_SERVERS.values()}, "tests/helpers/backend_routers.py TEST_SERVERS")

BACKENDS = [name if find_url is None else pytest.param(name, marks=pytest.mark.backend(name)) for name, (_, find_url) in TEST_SERVERS.items()]

_NAMES = {"postgres": "PostgreSQL", "pgbouncer": "PostgreSQL through PgBouncer", "redis": "Redis", "redis_cluster": "Redis Cluster"}


def open_router(backend: str, tmp_path, monkeypatch) -> Iterator[MemoryRouter]:
    """Yield a fresh router on ``backend``; afterwards delete everything it wrote."""
    kind, find_url = TEST_SERVERS[backend]
    yield from _OPENERS[kind](_NAMES.get(backend, backend), find_url, tmp_path, monkeypatch)


def _in_memory(name: str, find_url: None, tmp_path, monkeypatch) -> Iterator[MemoryRouter]:
    with MemoryRouter("in_memory") as router:
        yield router


def _sql(name: str, find_url: Callable[[], str] | None, tmp_path, monkeypatch) -> Iterator[MemoryRouter]:
    if find_url is None:
        with MemoryRouter("sql", url=f"sqlite:///{tmp_path / 'memory.db'}") as router:
            yield router
    else:
        yield from _postgres(name, find_url)


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


def _redis(name: str, find_url: Callable[[], str], tmp_path, monkeypatch) -> Iterator[MemoryRouter]:
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


def _mongodb(name: str, find_url: Callable[[], str], tmp_path, monkeypatch) -> Iterator[MemoryRouter]:
    pymongo = pytest.importorskip("pymongo")
    uri = find_url()
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


_OPENERS = {"in_memory": _in_memory, "sql": _sql, "redis": _redis, "mongodb": _mongodb}
backends.check_covers_registry(set(_OPENERS), "tests/helpers/backend_routers.py _OPENERS")
