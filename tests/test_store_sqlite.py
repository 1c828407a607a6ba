from contextlib import closing
import functools
import sqlite3
import threading

import pytest

from omnisync.errors import StoreError
from omnisync.stores.sql import SQLStore
from omnisync.stores import sql_schema
from store_contract import AGENT, SharedStoreContract, StoreContract, user


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def store(sqlite_url):
    with SQLStore(sqlite_url) as store:
        yield store


@pytest.fixture
def store_opener(sqlite_url):
    return functools.partial(SQLStore, sqlite_url)


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

    def test_a_read_that_fails_raises_instead_of_returning_nothing(self, store, sqlite_url):
        path = sqlite_url.removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as raw, raw:
            raw.execute("drop table omnisync_messages")
        with pytest.raises(StoreError, match="SQL store"):
            store.history(AGENT, "s")
        with pytest.raises(StoreError):
            store.window(AGENT, "s", max_messages=5)


@pytest.fixture
def memory_store():
    with SQLStore("sqlite://") as store:
        yield store


class TestSQLiteInMemoryStore(StoreContract):
    @pytest.fixture
    def store(self, memory_store):
        return memory_store

    def test_threads_share_one_in_memory_database(self, store):
        def work(name):
            for i in range(100):
                store.append(AGENT, "s", [user(f"{name}-{i}")])

        threads = [threading.Thread(target=work, args=(n,)) for n in "abcd"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seqs = [m.seq for m in store.history(AGENT, "s")]
        assert len(seqs) == 400 and seqs == sorted(set(seqs))
