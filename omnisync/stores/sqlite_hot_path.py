"""The SQL store's hottest operations on SQLite, without SQLAlchemy's per-statement cost.

A window load and a run's append are most of what a run does to its store. Profiles showed
about two thirds of their time in SQLAlchemy's execution machinery rather than in SQLite, so
on SQLite they run here: the same statements, compiled once by SQLAlchemy from the store's
own Core definitions, executed on the pooled sqlite3 connection directly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from sqlalchemy.engine import Engine

from ..errors import StoreError


class Prepared:
    """A Core statement compiled once for the qmark style, and how to order its values."""

    def __init__(self, statement: Any, engine: Engine) -> None:
        compiled = statement.compile(dialect=engine.dialect)
        self.sql: str = str(compiled)
        self.names: list[str] = list(compiled.positiontup or [])
        self.defaults: dict[str, Any] = dict(compiled.params)

    def args(self, values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(values[name] if name in values else self.defaults[name] for name in self.names)


class SQLiteHotPath:
    """SQLite's most frequent statements, compiled once and run on the raw sqlite3 connection."""

    def __init__(self, engine: Engine, statements: dict[str, Any], describe: str) -> None:
        self.engine = engine
        prepared = {name: Prepared(statement, engine) for name, statement in statements.items()}
        self.latest: Prepared = prepared["latest"]
        self.latest_before: Prepared = prepared["latest_before"]
        self.upsert_counter: Prepared = prepared["upsert_counter"]
        self.insert_message: Prepared = prepared["insert_message"]
        self.insert_run: Prepared = prepared["insert_run"]
        self.update_run: Prepared = prepared["update_run"]
        self.load_run: Prepared = prepared["load_run"]
        self.describe = describe

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Cursor]:
        try:
            connection = self.engine.raw_connection()
        except Exception as exc:
            raise StoreError(f"{self.describe} failed: {exc}") from exc
        try:
            cursor = connection.cursor()
            try:
                yield cast(sqlite3.Cursor, cursor)  # the pool hands out sqlite3 connections
            finally:
                cursor.close()
        except sqlite3.Error as exc:
            raise StoreError(f"{self.describe} failed: {exc.__class__.__name__}: {exc}") from exc
        finally:
            connection.close()  # back to the pool

    def read_latest(self, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        prepared = self.latest_before if "before" in params else self.latest
        with self._cursor() as cursor:
            return cursor.execute(prepared.sql, prepared.args(params)).fetchall()

    def read_one(self, params: dict[str, Any]) -> Any:
        """The one value a run record read selects, or None."""
        with self._cursor() as cursor:
            row = cursor.execute(self.load_run.sql, self.load_run.args(params)).fetchone()
        return row[0] if row is not None else None

    def append(self, counter: dict[str, Any], place: Any) -> Any:
        """In one write transaction: advance the counter, let ``place(last_seq)`` give the rows' values, insert them."""
        with self._cursor() as cursor:
            cursor.execute("BEGIN IMMEDIATE")
            try:
                last = cursor.execute(self.upsert_counter.sql, self.upsert_counter.args(counter)).fetchone()[0]
                written, values = place(last)
                cursor.executemany(self.insert_message.sql, [self.insert_message.args(v) for v in values])
                cursor.execute("COMMIT")
            except BaseException:
                if cursor.connection.in_transaction:
                    cursor.execute("ROLLBACK")
                raise
            return written

    def write_one(self, prepared: Prepared, params: dict[str, Any]) -> int | None:
        """One statement in its own write transaction: the rows it changed, or None if a key was taken."""
        with self._cursor() as cursor:
            cursor.execute("BEGIN IMMEDIATE")
            try:
                changed = cursor.execute(prepared.sql, prepared.args(params)).rowcount
                cursor.execute("COMMIT")
            except sqlite3.IntegrityError:
                cursor.execute("ROLLBACK")
                return None
            except BaseException:
                if cursor.connection.in_transaction:
                    cursor.execute("ROLLBACK")
                raise
            return changed
