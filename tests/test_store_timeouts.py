"""Bounded waits: a store whose server stops answering raises StoreError within its timeouts; options are checked up front."""

from __future__ import annotations

import socket
import threading

import pytest

from omnisync import MemoryRouter
from omnisync.errors import ConfigurationError, StoreError


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never says a word (a server hung, or a link gone quiet)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


@pytest.mark.parametrize(
    ("kind", "url"),
    [
        ("sql", "postgresql+psycopg://u:p@127.0.0.1:{port}/db"),
        ("redis", "redis://127.0.0.1:{port}/0"),
        ("mongodb", "mongodb://127.0.0.1:{port}/"),
    ],
)
def test_a_silent_server_is_a_store_error_within_the_timeouts(silent_server, kind, url):
    router = MemoryRouter(kind, url=url.format(port=silent_server), connect_timeout=1, timeout=1)
    with pytest.raises(StoreError):
        router.store.sessions("assistant")
    router.close()


@pytest.mark.parametrize(
    ("kind", "url", "options", "says"),
    [
        ("in_memory", None, {"anything": 1}, "takes no options"),
        ("sql", "sqlite:///x.db", {"pool_size": 5}, "does not take pool_size; it takes connect_timeout, timeout only"),
        ("redis", "redis://127.0.0.1:1/0", {"anything": 1}, "redis.Redis's options"),
        ("mongodb", "mongodb://127.0.0.1:1/", {"anything": 1}, "MongoClient's options"),
        ("redis", "redis://127.0.0.1:1/0", {"timeout": 0}, "timeout must be a positive number of seconds"),
        ("sql", "sqlite:///x.db", {"connect_timeout": "5"}, "connect_timeout must be a positive number of seconds"),
    ],
)
def test_options_a_store_does_not_take_are_refused_when_the_router_is_made(tmp_path, monkeypatch, kind, url, options, says):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=says):
        MemoryRouter(kind, url=url, **options)
    assert list(tmp_path.iterdir()) == []


def test_the_waits_reach_each_driver():
    redis_store = MemoryRouter("redis", url="redis://127.0.0.1:1/0", connect_timeout=2, timeout=7).store
    assert redis_store.client.connection_pool.connection_kwargs["socket_timeout"] == 7
    assert redis_store.client.connection_pool.connection_kwargs["socket_connect_timeout"] == 2
    redis_store.close()


def test_a_statement_on_postgres_is_bounded_by_the_timeout():
    import backends
    import sqlalchemy as sa

    from omnisync.stores.sql import create_engine

    engine = create_engine(backends.postgres_url(), 2, 7)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("show statement_timeout")).scalar() == "7s"
            with pytest.raises(sa.exc.OperationalError, match="statement timeout"):
                conn.execute(sa.text("set statement_timeout = 200; select pg_sleep(2)"))
    finally:
        engine.dispose()
