"""Bounded waits: a store whose server stops answering raises StoreError within its timeouts; options are checked up front."""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid

import pytest

from helpers import backends
from omnisync import MemoryRouter
from omnisync.errors import ConfigurationError, StoreError
from omnisync.messages import Message
from helpers.silent_proxy import silent_proxy_to


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
    import sqlalchemy as sa

    from omnisync.stores.sql.store import create_engine

    engine = create_engine(backends.postgres_url(), 2, 7)
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text("show statement_timeout")).scalar() == "7s"
            with pytest.raises(sa.exc.OperationalError, match="statement timeout"):
                conn.execute(sa.text("set statement_timeout = 200; select pg_sleep(2)"))
    finally:
        engine.dispose()


HANG_WAITS = {"connect_timeout": 1, "timeout": 2}


@pytest.mark.parametrize("backend", [pytest.param(b, marks=pytest.mark.backend(b)) for b in ("postgres", "pgbouncer", "redis", "mongodb")])
def test_a_server_that_hangs_on_an_open_connection_is_a_store_error_within_the_timeouts(backend):
    """The server stops answering after a first write while its end keeps acknowledging
    (tests/helpers/silent_proxy.py): the next read is a StoreError, where it once blocked as long as the link."""
    with contextlib.ExitStack() as stack:
        kind, url, default_port, options = _hung_server(backend, stack)
        proxy, through = stack.enter_context(silent_proxy_to(url, default_port))
        router = stack.enter_context(MemoryRouter(kind, url=through, **HANG_WAITS, **options))
        router.store.append("assistant", "s", [Message(role="user", content="before the hang")])
        proxy.go_silent()
        outcome = _within(60, lambda: router.store.history("assistant", "s"))
        assert isinstance(outcome, StoreError), outcome
        if kind == "sql":
            assert "did not answer within timeout=2 s" in str(outcome)


def _hung_server(backend, stack):
    """(kind, url, default port, options) of a place of the test's own on ``backend``'s server."""
    if backend in ("postgres", "pgbouncer"):
        url = backends.postgres_url() if backend == "postgres" else backends.pgbouncer_url()
        return "sql", stack.enter_context(backends.fresh_database(url)), 5432, {}
    if backend == "redis":
        prefix = f"omnisync-hang-{uuid.uuid4().hex}"
        stack.callback(_forget_redis_prefix, backends.redis_url(), prefix)
        return "redis", backends.redis_url(), 6379, {"prefix": prefix}
    pymongo = pytest.importorskip("pymongo")
    uri, db_name = backends.mongodb_uri(), f"omnisync_hang_{uuid.uuid4().hex[:8]}"
    stack.callback(_drop_mongo_database, pymongo, uri, db_name)
    return "mongodb", uri, 27017, {"db_name": db_name}


def _drop_mongo_database(pymongo, uri, db_name):
    with pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000) as client:
        client.drop_database(db_name)


def _forget_redis_prefix(url, prefix):
    import redis

    client = redis.Redis.from_url(url)
    for key in list(client.scan_iter(match=f"{prefix}:*", count=1000)):
        client.delete(key)
    client.close()


def _within(seconds, call):
    """What ``call`` returns or raises, run in a thread given ``seconds``: a call still blocked then fails the test."""
    outcome = []

    def run():
        try:
            outcome.append(call())
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the test asserts on
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"the store call was still blocked after {seconds} s", pytrace=False)
    return outcome[0]
