"""The benchmark's raw baselines send the statements our SQL stores send, and get the same answer.

A baseline that reads more columns than the store (or writes in more statements) flatters
the store's ratio; one that reads fewer flatters the baseline. So each baseline's statements,
captured as they are sent (sqlite3's trace, psycopg's cursor), must have the store's shapes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import sqlalchemy as sa

from helpers.backends import fresh_database, postgres_url
from omnisync.stores.registry import KINDS
from omnisync.stores.sql.sqlite import SQLiteStore

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # the bench's modules import each other by name
_spec = importlib.util.spec_from_file_location("bench_backends", BENCH / "backends.py")
bench = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(bench)  # type: ignore[union-attr]

OPERATIONS = {
    "write": lambda side, session: side.write(session),
    "load20": lambda side, session: side.load(session, 20),
    "load200": lambda side, session: side.load(session, 200),
    "tokens": lambda side, session: side.tokens(session, 30_000),  # two pages: the second read from a cursor
}


def _shapes(sent: list[str]) -> list[str]:
    return [bench.statement_shape(sql) for sql in sent]


def _compare(ours, raw, sqlite_connections=()) -> None:
    for side in (ours, raw):
        side.fill("s", 600)
    for name, operation in OPERATIONS.items():
        with bench.sent_statements(sqlite_connections) as by_ours:
            ours_answer = operation(ours, "s")
        with bench.sent_statements(sqlite_connections) as by_raw:
            raw_answer = operation(raw, "s")
        assert _shapes(by_raw) == _shapes(by_ours), name
        assert by_ours, name
        if name != "write":
            assert [row[1] for row in raw_answer] == [m.content for m in ours_answer], name


def test_the_sqlite_baseline_sends_the_store_statements(tmp_path):
    with SQLiteStore(f"sqlite:///{tmp_path / 'ours.db'}") as store:
        raw = bench.RawSQLite(str(tmp_path / "raw.db"))
        try:
            _compare(bench.Ours(store), raw, [store._threads.get(store._describe), raw.conn])
        finally:
            raw.close()


def test_the_postgres_baseline_sends_the_store_statements():
    with fresh_database(postgres_url()) as url:
        with KINDS["sql"].build(url, {}) as store:  # what a PostgreSQL URL opens, as the bench opens it: PostgresStore
            assert type(store).__name__ == "PostgresStore"
            raw = bench.RawPostgres(sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False))
            try:
                _compare(bench.Ours(store), raw)
            finally:
                raw.close()


def test_a_shape_keeps_the_columns_and_drops_the_values():
    shape = bench.statement_shape("SELECT raw_messages.role, raw_messages.seq FROM raw_messages WHERE raw_messages.agent = 'it''s' LIMIT 20")
    assert shape == "SELECT role, seq FROM omnisync_messages WHERE agent = ? LIMIT ?"
    assert bench.statement_shape("SELECT role, content FROM t") != bench.statement_shape("SELECT role FROM t")
