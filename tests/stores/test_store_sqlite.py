"""The store contract on SQLite through both of its paths: SQLiteStore (what a SQLite URL
opens, its hottest operations on sqlite3 directly) and SQLStore (SQLAlchemy Core throughout,
the path PostgreSQL takes)."""

from contextlib import closing
import functools
import gc
import sqlite3
import threading
import types

import pytest
import sqlalchemy as sa

from omnisync import MemoryRouter
from omnisync.errors import ConfigurationError, StoreError
from omnisync.stores.sql.store import SQLStore
from omnisync.stores.sql.sqlite import SQLiteStore
from omnisync.stores.sql import schema as sql_schema
from helpers.store_contract import AGENT, SharedStoreContract, StoreContract, assert_upgrades, make_old_schema, user


@pytest.fixture(params=[SQLiteStore, SQLStore], ids=["sqlite3-path", "sqlalchemy-path"])
def store_class(request):
    return request.param


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def store(store_class, sqlite_url):
    with store_class(sqlite_url) as store:
        yield store


@pytest.fixture
def store_opener(store_class, sqlite_url):
    return functools.partial(store_class, sqlite_url)


class TestSQLiteFileStore(SharedStoreContract):
    def test_window_query_is_a_bounded_index_search(self, store, tmp_path):
        store.append(AGENT, "s", [user(str(i)) for i in range(50)])
        statement = store.window_query(AGENT, "s", 20)
        compiled = statement.compile(store.engine, compile_kwargs={"literal_binds": True})
        with store.engine.connect() as conn:
            plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}")]
        assert any("USING INDEX ix_omnisync_messages_window" in step for step in plan), plan
        assert not any("TEMP B-TREE" in step or step.startswith("SCAN") for step in plan), plan
        assert "LIMIT 20" in str(compiled)

    @pytest.mark.parametrize("agent, after", [(None, None), (None, ("a1", "s5")), ("a1", None), ("a1", ("a1", "s5")), ("a1", ("a0", "s9"))])
    def test_a_page_of_sessions_walks_the_index_from_its_cursor(self, store, agent, after):
        for i in range(30):
            store.append(f"a{i % 3}", f"s{i}", [user("x"), user("y")])
        compiled = store.sessions_page_query(agent, after, 5).compile(store.engine, compile_kwargs={"literal_binds": True})
        with store.engine.connect() as conn:
            plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}")]
        assert any("USING INDEX" in step or "USING COVERING INDEX" in step for step in plan), plan
        assert not any("TEMP B-TREE" in step for step in plan), plan  # no sort or grouping of everything after the cursor
        if after is not None:
            assert any("SEARCH" in step for step in plan), plan

    def test_file_is_in_wal_mode_with_a_busy_timeout(self, store, tmp_path):
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000

    def test_schema_version_is_recorded(self, store, sqlite_url):
        path = sqlite_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as raw, raw:
            assert raw.execute("select version from omnisync_schema").fetchall() == [(sql_schema.SCHEMA_VERSION,)]

    def test_a_newer_schema_is_refused_not_overwritten(self, store, sqlite_url):
        store.append(AGENT, "s", [user("precious")])
        path = sqlite_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as raw, raw:
            raw.execute("update omnisync_schema set version = 99")
        with pytest.raises(StoreError, match="upgrade omnisync"):
            SQLStore(sqlite_url)
        with closing(sqlite3.connect(path)) as raw, raw:
            assert raw.execute("select content from omnisync_messages").fetchall() == [("precious",)]

    @pytest.mark.parametrize("version", [1, 2, 3])
    def test_an_older_database_is_upgraded_and_keeps_its_data(self, store_class, tmp_path, version):
        url = f"sqlite:///{tmp_path / 'old.db'}"
        make_old_schema(url, version)
        assert_upgrades(store_class, url, version)

    def test_a_read_that_fails_raises_instead_of_returning_nothing(self, store, sqlite_url):
        path = sqlite_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as raw, raw:
            raw.execute("drop table omnisync_messages")
        with pytest.raises(StoreError, match="SQL store"):
            store.history(AGENT, "s")
        with pytest.raises(StoreError):
            store.window(AGENT, "s", max_messages=5)


@pytest.fixture
def memory_store(store_class):
    with store_class("sqlite://") as store:
        yield store


class TestSQLiteInMemoryStore(StoreContract):
    @pytest.fixture
    def store(self, memory_store):
        return memory_store


def test_a_sqlite_url_opens_the_sqlite_path(sqlite_url):
    from omnisync.stores.registry import KINDS

    assert KINDS["sql"].store_class(sqlite_url) is SQLiteStore  # the registry's choice, not SQLStore's
    with SQLStore.from_url(sqlite_url) as store:
        assert type(store) is SQLStore
    router = MemoryRouter("sql", url=sqlite_url)
    try:
        router.store.append(AGENT, "s", [user("hi")])
        assert type(router.store) is SQLiteStore
    finally:
        router.close()


def test_both_paths_read_what_the_other_wrote(sqlite_url):
    with SQLiteStore(sqlite_url) as fast, SQLStore(sqlite_url) as core:
        fast.append(AGENT, "s", [user("one"), user("two")])
        core.append(AGENT, "s", [user("three")])
        expected = ["one", "two", "three"]
        assert [m.content for m in fast.history(AGENT, "s")] == expected
        assert [m.content for m in core.window(AGENT, "s", max_messages=10)] == expected
        assert [m.seq for m in fast.window(AGENT, "s", max_messages=10)] == [m.seq for m in core.history(AGENT, "s")]


def test_each_thread_keeps_one_connection_and_close_closes_them_all(sqlite_url):
    store = SQLiteStore(sqlite_url)
    seen = {}

    def work(name):
        for i in range(3):
            store.append(AGENT, name, [user(str(i))])
            with store._connection() as connection:
                seen.setdefault(name, []).append(connection)  # held, so no later connection can take its id

    threads = [threading.Thread(target=work, args=(n,)) for n in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(len({id(c) for c in held}) == 1 for held in seen.values()), seen
    assert seen["a"][0] is not seen["b"][0]
    gc.collect()
    assert len(store._threads._all) == 0  # a thread that ended took its connection with it
    for held in (seen["a"][0], seen["b"][0]):
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            held.execute("select 1")  # closed, not left open for the collector
    with store._connection() as mine:
        pass
    store.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        mine.execute("select 1")


def test_a_store_used_after_close_opens_a_new_connection_rather_than_failing(sqlite_url):
    store = SQLiteStore(sqlite_url)
    store.append(AGENT, "s", [user("kept")])
    store.close()
    assert [m.content for m in store.history(AGENT, "s")] == ["kept"]
    assert [m.content for m in store.window(AGENT, "s", max_messages=5)] == ["kept"]
    store.close()


def test_dialects_other_than_sqlite_and_postgresql_are_refused_with_what_to_use():
    with pytest.raises(ConfigurationError, match="runs on SQLite and PostgreSQL"):
        MemoryRouter("sql", url="mysql://user@127.0.0.1/omnisync")
    no_driver_needed = types.SimpleNamespace(paramstyle="format", Error=Exception, version_info=(1, 4, 0))
    engine = sa.create_engine("mysql+mysqldb://user@127.0.0.1:1/omnisync", module=no_driver_needed)
    with pytest.raises(StoreError, match="runs on SQLite and PostgreSQL, not mysql"):
        SQLStore(engine=engine)
