import contextlib
import functools
import logging
import multiprocessing
import uuid
from datetime import timedelta

import psycopg
import pytest
import sqlalchemy as sa

from omnisync.errors import StoreError
from omnisync.messages import utcnow
from omnisync.run_record import RunRecord
from omnisync.stores.sql.postgres import PostgresStore
from omnisync.stores.sql import schema as sql_schema
from omnisync.stores.sql.store import SQLStore
from helpers import backends
from helpers.backends import fresh_database, pgbouncer_url, postgres_url, unreachable
from helpers.store_contract import AGENT, SharedStoreContract, assert_upgrades, make_old_schema, user

pytestmark = pytest.mark.backend("postgres")


def _reachable(name: str, url: str) -> str:
    try:
        SQLStore(url).close()
    except StoreError as exc:
        unreachable(name, str(exc).splitlines()[0])
    return url


@pytest.fixture(scope="module")
def own_database():
    """A database of this test process's own, made on first use and dropped at the end: the
    store fixture empties its tables before each test, which must reach no other test's
    tables (another xdist worker's, or another test run's on the same server)."""
    with contextlib.ExitStack() as stack:
        made: dict[str, str] = {}

        def on(url: str) -> str:
            if url not in made:
                made[url] = stack.enter_context(backends.fresh_database(url))
            return made[url]

        yield on


@pytest.fixture(params=["direct", pytest.param("pgbouncer", marks=pytest.mark.backend("pgbouncer"))])
def pg_url(request, own_database):
    """PostgreSQL itself, then through PgBouncer in transaction pooling mode."""
    if request.param == "direct":
        return own_database(_reachable("PostgreSQL", postgres_url()))
    return own_database(_reachable("PostgreSQL through PgBouncer", pgbouncer_url()))


@pytest.fixture(params=[PostgresStore, SQLStore], ids=["psycopg-path", "sqlalchemy-path"])
def store_class(request):
    return request.param


@pytest.fixture
def store(pg_url, store_class):
    """A fresh store: the tables of this process's database, emptied before each test."""
    with store_class(pg_url) as store:
        with store.engine.begin() as conn:
            conn.execute(sa.text("TRUNCATE omnisync_messages, omnisync_sessions, omnisync_runs, omnisync_run_events"))
        yield store


@pytest.fixture
def store_opener(pg_url, store_class):
    return functools.partial(store_class, pg_url)


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

    def test_an_append_sends_one_statement_compiled_once_whatever_its_size(self, store, monkeypatch):
        sent: list[str] = []
        execute = psycopg.Cursor.execute
        monkeypatch.setattr(psycopg.Cursor, "execute", lambda cursor, query, *args, **kw: (sent.append(query), execute(cursor, query, *args, **kw))[1])
        store.append(AGENT, "s", [user("a")])
        store.append(AGENT, "s", [user("b"), user("c"), user("d")])
        store.append(AGENT, "other", [user("e"), user("f")])
        assert len(sent) == 3 and len(set(sent)) == 1, sent  # the same text: SQLAlchemy's cache hits
        assert [(m.content, m.seq) for m in store.history(AGENT, "s")] == [("a", 2), ("b", 4), ("c", 6), ("d", 8)]

    @pytest.mark.parametrize("filters, index", [({}, "page"), ({"status": "completed"}, "by_status"), ({"session_id": "s1"}, "by_session")])
    @pytest.mark.parametrize("from_cursor", [False, True])
    def test_a_page_of_runs_walks_its_index_from_the_cursor(self, store, filters, index, from_cursor):
        made = utcnow()
        records = [
            RunRecord(run_id=f"{kind}-{i}", agent=AGENT, session_id=f"s{i % 30}", kind=kind, status=("completed", "failed")[i % 2], created_at=made + timedelta(milliseconds=i))
            for i in range(600)
            for kind in [("run", "session", "fold")[i % 3]]
        ]
        store.save_runs([(record, None) for record in records])
        after = (made + timedelta(milliseconds=300), "run-300") if from_cursor else None
        compiled = store.runs_page_query(AGENT, after, 5, **filters).compile(store.engine, compile_kwargs={"literal_binds": True})
        with store.engine.begin() as conn:
            conn.execute(sa.text("ANALYZE omnisync_runs"))
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
            conn.execute(sa.text("SET LOCAL enable_bitmapscan = off"))  # on a table this small it would win, with a sort
            plan = "\n".join(row[0] for row in conn.execute(sa.text(f"EXPLAIN {compiled}")))
        assert f"ix_omnisync_runs_{index}" in plan and "Limit" in plan, plan
        assert "Sort" not in plan, plan  # read in order: nothing after the cursor is read whole

    @pytest.mark.parametrize("agent, after", [(None, None), (None, ("a1", "s5")), ("a1", None), ("a1", ("a1", "s5")), ("a1", ("a0", "s9"))])
    def test_a_page_of_sessions_walks_the_primary_key_from_its_cursor(self, store, agent, after):
        for i in range(30):
            store.append(f"a{i % 3}", f"s{i}", [user("x"), user("y")])
        compiled = store.sessions_page_query(agent, after, 5).compile(store.engine, compile_kwargs={"literal_binds": True})
        with store.engine.begin() as conn:
            conn.execute(sa.text("ANALYZE omnisync_messages"))
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
            plan = "\n".join(row[0] for row in conn.execute(sa.text(f"EXPLAIN {compiled}")))
        assert "Index" in plan and "GroupAggregate" in plan and "Limit" in plan, plan
        assert "Sort" not in plan and "HashAggregate" not in plan, plan  # nothing after the cursor is read whole

    @pytest.mark.parametrize("version", [1, 2, 3])
    def test_an_older_database_is_upgraded_and_keeps_its_data(self, version):
        with fresh_database(_reachable("PostgreSQL", postgres_url())) as url:
            make_old_schema(url, version)
            assert_upgrades(SQLStore, url, version)

    def test_a_read_against_a_stopped_server_raises(self):
        with pytest.raises(StoreError, match="SQL store"):
            SQLStore("postgresql://omnisync:omnisync@127.0.0.1:1/omnisync_test")

    def test_bad_credentials_raise(self, pg_url):
        bad = pg_url.replace("omnisync:omnisync@", f"omnisync:wrong-{uuid.uuid4().hex[:4]}@")
        with pytest.raises(StoreError, match="password authentication failed|authentication"):
            SQLStore(bad)

    def test_no_statement_is_prepared_on_the_server(self, store):
        """Behind a transaction pooler the next transaction may run where nothing was prepared."""
        with store.engine.connect() as conn:
            assert conn.connection.driver_connection.prepare_threshold is None
        for i in range(20):  # past psycopg's default of preparing on the fifth use
            store.append(AGENT, "s", [user(str(i))])
            store.window(AGENT, "s", max_messages=5)
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM pg_prepared_statements")).scalar() == 0


def test_in_a_database_of_another_collation_pages_follow_its_order():
    """The columns' collation orders the sessions and compares the cursor: in an ICU en-US
    database that is not Python's order, and the pages still concatenate to the listing."""
    base = _reachable("PostgreSQL", postgres_url())
    name = f"omnisync_t_icu_{uuid.uuid4().hex[:12]}"
    with backends.autocommit(base) as conn:
        if int(conn.execute(sa.text("SHOW server_version_num")).scalar()) < 150000:
            pytest.skip("a database's ICU locale needs PostgreSQL 15")
        conn.execute(sa.text(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"))
    try:
        url = sa.engine.make_url(base).set(database=name).render_as_string(hide_password=False)
        ids = ["b", "B", "a", "A", "é", "e", "z", "Z", "a b", "ab"]
        with SQLStore(url) as store:
            for session_id in ids:
                store.append(AGENT, session_id, [user(session_id)])
            with store.engine.connect() as conn:
                collated = conn.execute(sa.text("SELECT id FROM unnest(CAST(:ids AS text[])) AS id ORDER BY id"), {"ids": ids}).scalars().all()
            listed = store.sessions(AGENT)
            assert [s.session_id for s in listed] == collated != sorted(ids)
            for size in (1, 2, 3):
                assert list(store.iter_sessions(AGENT, page_size=size)) == listed
                assert list(store.iter_sessions(page_size=size)) == listed
    finally:
        with backends.autocommit(base) as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_through_pgbouncer_the_statement_timeout_is_left_to_the_server_with_a_warning(caplog):
    url = _reachable("PostgreSQL through PgBouncer", pgbouncer_url())
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="omnisync"):
        with SQLStore(url) as store:
            store.sessions(AGENT)
            store.engine.dispose()  # a second connection: the pooler is not asked twice
            store.sessions(AGENT)
    refusals = [r for r in caplog.records if "refused the options startup parameter" in r.getMessage()]
    assert len(refusals) == 1 and "ALTER ROLE" in refusals[0].getMessage()
    assert "omnisync:***@" in refusals[0].getMessage()


@pytest.mark.backend("pgbouncer")
def test_through_statement_pooling_the_store_does_not_open_and_says_what_to_change():
    url = backends.pgbouncer_statement_url()
    with pytest.raises(StoreError) as refused:
        SQLStore(url)
    message = str(refused.value)
    assert message.startswith("SQL store postgresql+psycopg://omnisync:***@")
    assert "is behind a pooler in statement pooling mode: set pool_mode = transaction in pgbouncer.ini" in message
    assert "omnisync needs transactions of several statements (" in message  # then the driver's words (older psycopg adds "consuming input failed: ")
    assert message.endswith("transaction blocks not allowed in statement pooling mode)")
    assert f":{sa.engine.make_url(url).password}@" not in message


@pytest.mark.parametrize("find_url", [postgres_url, pgbouncer_url], ids=["direct", "pgbouncer"])
@pytest.mark.parametrize("older", [None, 2], ids=["new", "upgraded-from-2"])
def test_several_processes_creating_the_schema_at_once_all_succeed(find_url, older):
    base = _reachable("PostgreSQL", find_url())
    with backends.fresh_database(base) as url:
        if older:
            make_old_schema(url, older)
        context = multiprocessing.get_context("spawn")
        go = context.Event()
        racers = [context.Process(target=_open_store_at, args=(url, go)) for _ in range(4)]
        for racer in racers:
            racer.start()
        go.set()
        for racer in racers:
            racer.join(timeout=120)
        assert [racer.exitcode for racer in racers] == [0, 0, 0, 0]
        with SQLStore(url) as store, store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT version FROM omnisync_schema")).all() == [(sql_schema.SCHEMA_VERSION,)]
            assert len([c for c in sa.inspect(conn).get_columns("omnisync_messages") if c["name"] == "terms"]) == 1
            assert len([c for c in sa.inspect(conn).get_columns("omnisync_runs") if c["name"] == "kind"]) == 1
            store.append(AGENT, "s", [user("after the race")])
            assert [m.content for m in store.history(AGENT, "s")] == ["after the race"]


def _open_store_at(url: str, go) -> None:
    go.wait(60)
    SQLStore(url).close()


def test_the_driver_path_hands_its_connection_back_out_of_autocommit(pg_url, monkeypatch):
    """PostgresStore runs its statements in autocommit; a connection left so would run the next
    SQLAlchemy transaction's statements one by one, each committed on its own."""
    session = f"autocommit-{uuid.uuid4().hex}"  # the module's database is shared with other tests
    with PostgresStore(pg_url) as store:
        with pytest.raises(StoreError):
            store.append(AGENT, session, [user("a NUL \x00 inside")])  # refused by the driver
        with monkeypatch.context() as patched:
            patched.setattr(psycopg.Cursor, "fetchall", lambda cursor: (_ for _ in ()).throw(RuntimeError("not the driver's")))
            with pytest.raises(RuntimeError):
                store.window(AGENT, session, max_messages=5)
        pooled = store.engine.raw_connection()
        try:
            assert pooled.driver_connection.autocommit is False
        finally:
            pooled.close()
        assert store.append(AGENT, session, [user("kept")])[0].seq == 2  # the refused write took no seq


def test_two_writers_of_sealed_events_queue_instead_of_retrying(store):
    """Sealed events are sealed between the read of the run's highest id and the insert. The
    second writer must wait for the first to commit (each event sealed once, at its final id),
    not read the same highest id, lose on the primary key and seal again."""
    import threading

    sealed: list[tuple[str, int]] = []
    first_sealing, second_arrived = threading.Event(), threading.Event()

    def seal(agent, run_id, event_id, name, data):
        sealed.append((name, event_id))
        if name == "first":
            first_sealing.set()
            second_arrived.wait(0.5)  # without the lock the second writer reads the same highest id meanwhile
        else:
            second_arrived.set()
        return {**data, "sealed": True}

    store.event_seal = seal
    first = threading.Thread(target=store.append_events, args=(AGENT, "r1", [("first", {})]))
    first.start()
    assert first_sealing.wait(5)
    store.append_events(AGENT, "r1", [("second", {})])
    first.join()
    assert sealed == [("first", 1), ("second", 2)]
    assert [(e.id, e.name, e.data) for e in store.read_events(AGENT, "r1")] == [(1, "first", {"sealed": True}), (2, "second", {"sealed": True})]
