"""PostgreSQL on psycopg 3: the SQL store, with window loads and appends on the driver directly.

Through SQLAlchemy's Connection a window load cost about three times what psycopg takes to
send the same statement (bench/store_floors.py): its execution machinery, and switching the
connection to autocommit and back on every checkout. Here those two operations run the
store's own statements, compiled once by SQLAlchemy for psycopg, on a connection of the
engine's pool (so the pool's check of a rested connection still runs at checkout), in
autocommit, bound and never prepared on the server (poolers); everything else is SQLStore's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg  # this module is loaded only for a URL whose engine runs on psycopg 3 (open.store_for_url)
from sqlalchemy.exc import SQLAlchemyError

from ...errors import StoreError
from . import pooling as postgres_pooling
from .store import APPEND, LATEST, LATEST_BEFORE, SQLStore


class Compiled:
    """A Core statement compiled once for psycopg, with the values it binds by itself."""

    def __init__(self, statement: Any, store: SQLStore) -> None:
        compiled = statement.compile(dialect=store.engine.dialect)
        self.sql: bytes = compiled.string.encode()  # psycopg takes a query as bytes (or a literal string, which this is not)
        self.defaults: dict[str, Any] = {name: value for name, value in compiled.params.items() if value is not None}


class PostgresStore(SQLStore):
    """Messages and runs in PostgreSQL (directly or behind a transaction pooler), through psycopg 3."""

    def __init__(self, url: str | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        if self.engine.dialect.name != "postgresql" or self.engine.dialect.driver != "psycopg":
            self.close()
            raise StoreError(f"PostgresStore runs on psycopg 3, not {self.engine.dialect.name}+{self.engine.dialect.driver}: open it with MemoryRouter(\"sql\", url=...)")
        self._compiled = {id(statement): Compiled(statement, self) for statement in (LATEST, LATEST_BEFORE, APPEND)}

    def _rows_of(self, statement: Any, params: dict[str, Any], write: bool = False) -> Sequence[Any]:
        compiled = self._compiled.get(id(statement))
        if compiled is None:
            return super()._rows_of(statement, params, write)
        with self._autocommit() as connection:
            return connection.execute(compiled.sql, {**compiled.defaults, **params}).fetchall()

    @contextmanager
    def _autocommit(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit, back in the pool as it came (or dropped if it broke)."""
        try:
            pooled = self.engine.raw_connection()
        except SQLAlchemyError as exc:
            raise StoreError(_failed(self._describe(), exc)) from exc
        connection: psycopg.Connection[Any] = pooled.driver_connection  # type: ignore[assignment]
        try:
            connection.autocommit = True
            try:
                yield connection
            finally:  # whatever happened: SQLAlchemy's transactions on this connection need it off
                connection.autocommit = False
        except psycopg.Error as exc:
            if connection.closed or connection.broken:
                pooled.invalidate(exc)
            raise StoreError(_failed(self._describe(), exc)) from exc  # named only on failure: rendering the URL costs a load ~5 µs
        finally:
            pooled.close()  # back to the pool


def _failed(where: str, exc: BaseException) -> str:
    return postgres_pooling.statement_pooling_error(where, exc) or f"{where} failed: {exc.__class__.__name__}: {exc}"
