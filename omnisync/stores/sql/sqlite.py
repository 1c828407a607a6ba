"""SQLite files and memory: the SQL store, with its hottest operations on sqlite3 directly.

A window load, a run's append and a run record's read and write are most of what a run does
to its store, and through SQLAlchemy about two thirds of their time went to its execution
machinery. Here they run the same statements, compiled once by SQLAlchemy from the store's
own Core definitions, on one sqlite3 connection per thread; everything else is SQLStore's.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from typing import Any, TypeVar, cast

from sqlalchemy.pool import StaticPool

from ...errors import StoreError
from ...messages import Message
from ...run_record import RunRecord
from ..base import run_conflict
from .rows import rows_messages
from .store import (
    INSERT_MESSAGE,
    INSERT_RUN,
    LATEST,
    LATEST_BEFORE,
    LOAD_RUN,
    SQLITE_BUSY_TIMEOUT_MS,
    UPDATE_RUN,
    UPSERT_COUNTER,
    SQLStore,
    counter_params,
    place_messages,
    prepare_sqlite_connection,
    run_key,
    run_values,
)

T = TypeVar("T")


class Prepared:
    """A Core statement compiled once for sqlite3's qmark style, and how to order its values."""

    def __init__(self, statement: Any, store: SQLStore) -> None:
        compiled = statement.compile(dialect=store.engine.dialect)
        self.sql: str = str(compiled)
        self._names: list[str] = list(compiled.positiontup or [])
        self._defaults: dict[str, Any] = dict(compiled.params)

    def args(self, values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(values[name] if name in values else self._defaults[name] for name in self._names)


class SQLiteStore(SQLStore):
    """A SQLite file (or ``sqlite://`` in memory) shared by the threads and processes of one machine."""

    @property
    def writes_run_atomically(self) -> bool:
        return True  # a run's last messages and its record in one write transaction

    def __init__(self, url: str | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        if self.engine.dialect.name != "sqlite":
            self.close()
            raise StoreError(f"SQLiteStore opens SQLite databases, not {self.engine.dialect.name}: open it with MemoryRouter(\"sql\", url=...)")
        self._latest = Prepared(LATEST, self)
        self._latest_before = Prepared(LATEST_BEFORE, self)
        self._upsert_counter_sql = Prepared(UPSERT_COUNTER["sqlite"], self)
        self._insert_message = Prepared(INSERT_MESSAGE, self)
        self._insert_run = Prepared(INSERT_RUN, self)
        self._update_run = Prepared(UPDATE_RUN, self)
        self._load_run = Prepared(LOAD_RUN, self)
        self._load_lease_sql = Prepared(self._load_lease, self)
        # A file we opened gets a connection per thread, kept: checking one out of the pool
        # costs about a third of a window load. Memory (one shared connection) and a user's
        # engine (whose connect arguments we cannot see) go through the pool.
        own_file = self._owns_engine and not isinstance(self.engine.pool, StaticPool)
        self._threads: _ThreadConnections | None = _ThreadConnections(self.engine) if own_file else None

    # --- the operations sped up ---------------------------------------------------------

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        if not messages:
            return []
        return self._write(lambda cursor: self._append_in(cursor, agent, session_id, messages))

    def _append_in(self, cursor: sqlite3.Cursor, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        counter = self._upsert_counter_sql.args(counter_params(agent, session_id, len(messages)))
        last_seq = cursor.execute(self._upsert_counter_sql.sql, counter).fetchone()[0]
        written, rows = place_messages(agent, session_id, messages, last_seq, seal=self.message_seal)
        cursor.executemany(self._insert_message.sql, [self._insert_message.args(row) for row in rows])
        return written

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        if limit <= 0:
            return []
        params: dict[str, Any] = {"agent": agent, "session_id": session_id, "limit": limit}
        prepared = self._latest
        if before_seq is not None:
            prepared, params["before"] = self._latest_before, before_seq
        return rows_messages(self._read(prepared.sql, prepared.args(params)), agent, session_id)

    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        return self._write(lambda cursor: self._save(cursor, record, expected_version))

    def save_runs(self, saves: Sequence[tuple[RunRecord, int | None]]) -> list[RunRecord]:
        """Every save in one write transaction: all of them, or none when one does not fit."""
        return self._write(lambda cursor: [self._save(cursor, record, expected) for record, expected in saves])

    def append_and_save_run(
        self, agent: str, session_id: str, messages: Sequence[Message], record: RunRecord, expected_version: int | None
    ) -> tuple[list[Message], RunRecord]:
        """The messages and the record in one write transaction: both, or neither when the record does not fit."""

        def write(cursor: sqlite3.Cursor) -> tuple[list[Message], RunRecord]:
            written = self._append_in(cursor, agent, session_id, messages) if messages else []
            first_seq = written[0].seq if written and record.first_written_seq is None else record.first_written_seq
            return written, self._save(cursor, record, expected_version, first_written_seq=first_seq)

        return self._write(write)

    def _save(self, cursor: sqlite3.Cursor, record: RunRecord, expected_version: int | None, **changes: Any) -> RunRecord:
        """Save ``record`` (with ``changes``) inside the caller's write; a conflict raises, which rolls it back."""
        saved = record.evolve(version=(expected_version or 0) + 1, **changes)
        values = run_values(saved)
        values["v_created_at"] = _sqlite_time(values["v_created_at"])
        values["v_finished_at"] = _sqlite_time(values["v_finished_at"])
        if expected_version is None:
            prepared, params = self._insert_run, values
        else:
            prepared, params = self._update_run, {**values, **run_key(record, expected_version)}
        try:
            changed = cursor.execute(prepared.sql, prepared.args(params)).rowcount
        except sqlite3.IntegrityError:
            changed = 0  # the run id is taken
        if changed != 1:
            raise run_conflict(record, expected_version)
        return saved

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        rows = self._read(self._load_run.sql, self._load_run.args({"agent": agent, "run_id": run_id}))
        return RunRecord.from_json(rows[0][0]) if rows else None

    def load_lease(self, agent: str, run_id: str) -> tuple[RunRecord | None, RunRecord | None]:
        rows = self._read(self._load_lease_sql.sql, self._load_lease_sql.args({"agent": agent, "run_id": run_id}))
        if not rows:
            return None, None
        lease, holder = rows[0]
        return RunRecord.from_json(lease), RunRecord.from_json(holder) if holder is not None else None

    def close(self) -> None:
        if self._threads is not None:
            self._threads.close()
        super().close()

    # --- sqlite3 connections ------------------------------------------------------------

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """One SELECT's rows: a single statement is atomic on its own, so no transaction."""
        try:
            if self._threads is not None:  # the hot case, without the context managers below
                return self._threads.get(self._describe).execute(sql, args).fetchall()
            with self._serial or nullcontext(), self._connection() as connection:
                return connection.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"{self._describe()} failed: {exc.__class__.__name__}: {exc}") from exc

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Cursor]:
        with self._serial or nullcontext(), self._connection() as connection:
            cursor = connection.cursor()
            try:
                yield cursor
            except sqlite3.Error as exc:
                raise StoreError(f"{self._describe()} failed: {exc.__class__.__name__}: {exc}") from exc
            finally:
                cursor.close()

    def _write(self, work: Callable[[sqlite3.Cursor], T]) -> T:
        """``work`` in one write transaction, which takes the file's write lock up front."""
        with self._cursor() as cursor:
            cursor.execute("BEGIN IMMEDIATE")
            try:
                done = work(cursor)
                cursor.execute("COMMIT")
            except BaseException:
                if cursor.connection.in_transaction:
                    cursor.execute("ROLLBACK")
                raise
            return done

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        if self._threads is not None:
            yield self._threads.get(self._describe)
            return
        try:
            pooled = self.engine.raw_connection()
        except Exception as exc:
            raise StoreError(f"{self._describe()} failed: {exc}") from exc
        try:
            yield cast(sqlite3.Connection, pooled.driver_connection)  # the SQLite dialect's pool holds sqlite3 connections
        finally:
            pooled.close()  # back to the pool


class _ThreadConnections:
    """One sqlite3 connection per thread on a file, each closed with its thread or the store."""

    def __init__(self, engine: Any) -> None:
        arguments, options = engine.dialect.create_connect_args(engine.url)
        self._open = functools.partial(
            sqlite3.connect, *arguments, **{**options, "check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        )
        self._local = threading.local()
        self._all: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._lock = threading.Lock()

    def get(self, describe: Callable[[], str]) -> sqlite3.Connection:
        held: _Held | None = getattr(self._local, "held", None)
        if held is None:
            try:
                connection = self._open()
                prepare_sqlite_connection(connection, in_memory=False)
            except sqlite3.Error as exc:
                raise StoreError(f"{describe()} failed: {exc.__class__.__name__}: {exc}") from exc
            held = self._local.held = _Held(connection)
            with self._lock:
                self._all.add(held)
        return held.connection

    def close(self) -> None:
        with self._lock:
            for held in list(self._all):
                held.connection.close()
            self._all.clear()
        self._local = threading.local()


class _Held:
    """A thread's connection, closed when its thread ends (the thread's local goes, and this with it)."""

    __slots__ = ("connection", "__weakref__")

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def __del__(self) -> None:
        self.connection.close()  # closed, not left to the collector (which Python 3.13 warns about)


@functools.lru_cache(maxsize=1024)
def _sqlite_time(moment: datetime | None) -> str | None:
    """A time as SQLAlchemy's SQLite DateTime stores it (UTC wall time), so Core reads and compares it alike.

    Cached: a run's records share their created_at through every save."""
    return None if moment is None else moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
