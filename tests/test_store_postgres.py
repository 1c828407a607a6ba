import functools
import uuid

import pytest
import sqlalchemy as sa

from omnisync.errors import StoreError
from omnisync.stores.sql import SQLStore
from backends import postgres_url, unreachable
from store_contract import AGENT, SharedStoreContract, user

pytestmark = pytest.mark.backend("postgres")


@pytest.fixture(scope="module")
def pg_url():
    """A database of this test process's own: the contract empties its tables before each
    test, which must not touch what another process's tests (or another suite) are writing."""
    url = postgres_url()
    try:
        SQLStore(url).close()
    except StoreError as exc:
        unreachable("PostgreSQL", str(exc).splitlines()[0])
    given = sa.engine.make_url(url)
    name = f"omnisync_contract_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(given, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield given.set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture
def store(pg_url):
    """A fresh store: this process's tables, emptied before each test."""
    with SQLStore(pg_url) as store:
        with store.engine.begin() as conn:
            conn.execute(sa.text("TRUNCATE omnisync_messages, omnisync_sessions, omnisync_runs"))
        yield store


@pytest.fixture
def store_opener(pg_url):
    return functools.partial(SQLStore, pg_url)


class TestPostgresStore(SharedStoreContract):
    supports_nul = False  # PostgreSQL text cannot hold U+0000

    def test_window_query_uses_the_window_index(self, store):
        store.append(AGENT, "s", [user(str(i)) for i in range(200)])
        with store.engine.begin() as conn:
            conn.execute(sa.text("ANALYZE omnisync_messages"))
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
            compiled = store.window_query(AGENT, "s", 20).compile(store.engine, compile_kwargs={"literal_binds": True})
            plan = "\n".join(row[0] for row in conn.execute(sa.text(f"EXPLAIN {compiled}")))
        assert "ix_omnisync_messages_window" in plan and "Sort" not in plan, plan
        assert "Limit" in plan

    def test_a_read_against_a_stopped_server_raises(self):
        with pytest.raises(StoreError, match="SQL store"):
            SQLStore("postgresql://omnisync:omnisync@127.0.0.1:1/omnisync_test")

    def test_bad_credentials_raise(self, pg_url):
        bad = pg_url.replace("omnisync:omnisync@", f"omnisync:wrong-{uuid.uuid4().hex[:4]}@")
        with pytest.raises(StoreError, match="password authentication failed|authentication"):
            SQLStore(bad)
