"""What a PostgreSQL store sends, counted through SQLAlchemy's own events: a regression in
round trips fails here, not only in the bench."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from omnisync import MemoryRouter
from omnisync.stores import sql as sql_module
from omnisync.stores.sql import SQLStore
from agent_helpers import echo, make_agent
from backends import forget_agent, postgres_url, unreachable
from fake_http import install
from store_contract import AGENT, user

pytestmark = pytest.mark.backend("postgres")


class RoundTrips:
    """Every message psycopg sends: statements, and BEGIN, COMMIT, ROLLBACK and pings unless in autocommit."""

    def __init__(self, engine: Any) -> None:
        self.sent: list[str] = []

        def in_autocommit(conn: Any) -> bool:
            return bool(conn.connection.driver_connection.autocommit)

        @event.listens_for(engine, "before_cursor_execute")
        def _statement(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            self.sent.append(statement.split(None, 1)[0].upper())

        for name in ("begin", "commit", "rollback"):
            event.listen(engine, name, lambda conn, name=name: None if in_autocommit(conn) else self.sent.append(name.upper()))

        ping = engine.dialect.do_ping

        def counted_ping(dbapi_connection: Any) -> Any:
            self.sent.append("PING")
            return ping(dbapi_connection)

        engine.dialect.do_ping = counted_ping

    def of(self, work: Any) -> list[str]:
        self.sent = []
        work()
        return list(self.sent)


@pytest.fixture
def store():
    url = postgres_url()
    try:
        store = SQLStore(url)
    except Exception as exc:  # noqa: BLE001 - unreachable: skip, or fail in CI
        unreachable("PostgreSQL", str(exc).splitlines()[0])
    agent = f"{AGENT}-trips-{uuid.uuid4().hex[:8]}"
    yield store, agent
    store.close()
    forget_agent("sql", url, agent)


def test_a_window_load_and_a_run_record_read_are_one_statement_each(store):
    store, agent = store
    store.append(agent, "s", [user(str(i)) for i in range(30)])
    trips = RoundTrips(store.engine)
    assert trips.of(lambda: store.window(agent, "s", max_messages=20)) == ["SELECT"]
    assert trips.of(lambda: store.load_run(agent, "nothing")) == ["SELECT"]
    assert trips.of(lambda: store.history(agent, "s")) == ["SELECT"]


def test_an_append_is_one_transaction(store):
    store, agent = store
    trips = RoundTrips(store.engine)
    assert trips.of(lambda: store.append(agent, "s", [user("a"), user("b")])) == ["BEGIN", "INSERT", "INSERT", "COMMIT"]


def test_a_run_of_one_model_call_makes_at_most_ten_round_trips(store, monkeypatch):
    """Issue 12's goal is 6; this holds what is reached (29 before reads went to autocommit
    and the per-checkout ping went), so a regression fails."""
    store, agent = store
    install(monkeypatch, echo)
    router = MemoryRouter("sql", url=postgres_url())
    bot = make_agent(agent, router)
    try:
        bot.run("warm up", session_id="s")
        trips = RoundTrips(router.store.engine)  # type: ignore[attr-defined]
        sent = trips.of(lambda: bot.run("hello", session_id="s"))
    finally:
        bot.cleanup()
        router.close()
    assert "PING" not in sent
    assert len(sent) <= 10, sent


def test_a_connection_the_server_dropped_while_resting_is_replaced_before_use(store, monkeypatch):
    store, agent = store
    store.append(agent, "s", [user("kept")])
    with store.engine.connect() as conn:
        backend = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    with store.engine.connect() as conn:  # the same pooled connection: the pool hands back the one it just got
        assert conn.exec_driver_sql("SELECT pg_backend_pid()").scalar() == backend
    admin = sa.create_engine(store.engine.url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            assert conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": backend}).scalar()
    finally:
        admin.dispose()
    monkeypatch.setattr(sql_module, "IDLE_BEFORE_PING", 0.0)
    trips = RoundTrips(store.engine)
    sent = trips.of(lambda: store.window(agent, "s", max_messages=5))
    assert [m.content for m in store.history(agent, "s")] == ["kept"]
    assert sent == ["PING", "SELECT"]  # found dead and replaced by a new connection, which needs no ping


def test_a_connection_used_a_moment_ago_is_not_pinged(store):
    store, agent = store
    trips = RoundTrips(store.engine)
    sent = trips.of(lambda: [store.window(agent, "s", max_messages=5) for _ in range(5)])
    assert sent == ["SELECT"] * 5
