"""The SQL store, on SQLAlchemy Core: SQLite on one machine, PostgreSQL when processes share it.

Seq numbers come from a per-session counter row updated inside the write transaction, so
appends to one session from many processes are serialized by the database. A window is
``ORDER BY seq DESC LIMIT n`` on the index (agent, session_id, status, seq). SQLite files
run in WAL mode with a busy timeout, and writes take the write lock up front
(``BEGIN IMMEDIATE``), so several processes can share one file without "database is locked".
"""

from __future__ import annotations

import importlib.util
import json
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from .._logging import logger
from ..errors import MissingDependencyError, StoreError
from ..messages import ACTIVE, INACTIVE, Message, utcnow
from ..run_record import FINISHED_STATUSES, RunRecord
from ..store_options import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT
from .base import SEQ_STEP, MemoryStore, SessionInfo, check_serializable, run_conflict

try:
    import sqlalchemy as sa
    from sqlalchemy import event
    from sqlalchemy.dialects import postgresql as _postgresql
    from sqlalchemy.dialects import sqlite as _sqlite
    from sqlalchemy.engine import Connection, Engine, make_url
    from sqlalchemy.exc import IntegrityError, SQLAlchemyError
    from sqlalchemy.pool import StaticPool
except ImportError as _missing:  # pragma: no cover - exercised by the missing-extra test
    raise MissingDependencyError(
        "SQL database memory requires optional dependency 'sqlalchemy'. "
        "Install it with: pip install 'omnisync[postgres]'"
    ) from _missing

from . import postgres_pooling
from . import sql_schema as schema
from .sqlite_hot_path import SQLiteHotPath

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_m = schema.messages.c
# In Message's field order, so a row becomes a Message positionally.
_COLUMNS = (
    _m.role, _m.content, _m.tool_calls, _m.tool_call_id, _m.name, _m.metadata, _m.tokens,
    _m.run_id, _m.agent, _m.session_id, _m.seq, _m.status, _m.created_at_us,
)
# Statements built once: a window load only binds values.
_LATEST = (
    sa.select(*_COLUMNS)
    .where(_m.agent == sa.bindparam("agent"), _m.session_id == sa.bindparam("session_id"), _m.status == ACTIVE)
    .order_by(_m.seq.desc())
    .limit(sa.bindparam("limit", type_=sa.Integer))
)
_LATEST_BEFORE = _LATEST.where(_m.seq < sa.bindparam("before"))
_INSERT_MESSAGE = schema.messages.insert()
_r = schema.runs.c
_INSERT_RUN = schema.runs.insert()
_UPDATE_RUN = schema.runs.update().where(
    _r.agent == sa.bindparam("key_agent"), _r.run_id == sa.bindparam("key_run_id"), _r.version == sa.bindparam("expected")
)
_LOAD_RUN = sa.select(_r.data).where(_r.agent == sa.bindparam("agent"), _r.run_id == sa.bindparam("run_id"))
_RUN_COLUMNS = ("agent", "run_id", "session_id", "status", "version", "created_at", "finished_at", "data")
# With every column bound by name, for the SQLite hot path (which needs them all in the compiled SQL).
_INSERT_RUN_ALL_COLUMNS = schema.runs.insert().values({name: sa.bindparam(f"v_{name}") for name in _RUN_COLUMNS})
_UPDATE_RUN_ALL_COLUMNS = _UPDATE_RUN.values({name: sa.bindparam(f"v_{name}") for name in _RUN_COLUMNS})


def _counter_upsert(insert: Any) -> Any:
    table = schema.sessions
    step, now = sa.bindparam("step", type_=sa.Integer), sa.bindparam("now", type_=sa.BigInteger)
    return (
        insert(table)
        .values(agent=sa.bindparam("agent"), session_id=sa.bindparam("session_id"), last_seq=step, updated_at_us=now)
        .on_conflict_do_update(index_elements=["agent", "session_id"], set_={"last_seq": table.c.last_seq + step, "updated_at_us": now})
        .returning(table.c.last_seq)
    )


_UPSERT_COUNTER = {"sqlite": _counter_upsert(_sqlite.insert), "postgresql": _counter_upsert(_postgresql.insert)}

SQLITE_BUSY_TIMEOUT_MS = 30_000
_WRITE = "omnisync_write"


class _Rollback(Exception):
    """Abandon a transaction whose compare-and-set did not hold."""


class SQLStore(MemoryStore):
    """Messages and runs in any database SQLAlchemy reaches (``DATABASE_URL``)."""

    kind = "sql"

    def __init__(
        self,
        url: str | None = None,
        *,
        engine: Engine | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """On ``url``, or on a user's ``engine`` (left open by :meth:`close`). On PostgreSQL, a
        connection that cannot be made in ``connect_timeout`` seconds, or a server or link
        that leaves a statement unanswered for ``timeout`` seconds, is a StoreError."""
        if engine is None and url is None:
            raise ValueError("SQLStore needs a url or an engine")
        self._owns_engine = engine is None
        self.engine: Engine = engine if engine is not None else create_engine(url, connect_timeout, timeout)  # type: ignore[arg-type]
        self._is_sqlite = self.engine.dialect.name == "sqlite"
        self._is_postgres = self.engine.dialect.name == "postgresql"
        # One shared connection (in-memory SQLite) must not interleave two transactions.
        self._serial = threading.RLock() if isinstance(self.engine.pool, StaticPool) else None
        if self._is_sqlite:
            _configure_sqlite(self.engine)
        try:
            self._ensure_schema()
        except BaseException:
            if self._owns_engine:
                self.engine.dispose()
            raise
        self._hot = (
            SQLiteHotPath(
                self.engine,
                {
                    "latest": _LATEST,
                    "latest_before": _LATEST_BEFORE,
                    "upsert_counter": _UPSERT_COUNTER["sqlite"],
                    "insert_message": _INSERT_MESSAGE,
                    "insert_run": _INSERT_RUN_ALL_COLUMNS,
                    "update_run": _UPDATE_RUN_ALL_COLUMNS,
                    "load_run": _LOAD_RUN,
                },
                self._describe(),
            )
            if self._is_sqlite
            else None
        )

    @classmethod
    def from_url(cls, url: str) -> "SQLStore":
        return cls(url)

    # --- transactions ---------------------------------------------------------------

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        """A transaction; on SQLite a write takes the write lock up front, a read runs on its own."""
        with self._serial or nullcontext(), _store_errors(self._describe()):
            with self.engine.connect() as conn:
                conn = conn.execution_options(**{_WRITE: write})
                with conn.begin():
                    yield conn

    def _describe(self) -> str:
        return f"SQL store {self.engine.url.render_as_string(hide_password=True)}"

    def _ensure_schema(self) -> None:
        with self._tx(write=True) as conn:
            if self._is_postgres:
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7301931)"))
            schema.metadata.create_all(conn)
            version = conn.execute(sa.select(schema.schema_info.c.version)).scalar()
            if version is None:
                conn.execute(schema.schema_info.insert().values(id=1, version=schema.SCHEMA_VERSION))
            elif version > schema.SCHEMA_VERSION:
                raise StoreError(
                    f"{self._describe()} holds schema version {version}, newer than this omnisync "
                    f"understands ({schema.SCHEMA_VERSION}): upgrade omnisync."
                )

    # --- messages -------------------------------------------------------------------

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        check_serializable(messages)
        if not messages:
            return []
        now = utcnow()
        now_us = _micros(now)
        step = SEQ_STEP * len(messages)

        def place(last: int) -> tuple[list[Message], list[dict[str, Any]]]:
            first = last - SEQ_STEP * (len(messages) - 1)
            written = [
                m.placed(agent=agent, session_id=session_id, seq=first + SEQ_STEP * i, created_at=now)
                for i, m in enumerate(messages)
            ]
            return written, [_message_row(m) for m in written]

        if self._hot is not None:
            counter = {"agent": agent, "session_id": session_id, "step": step, "now": now_us}
            with self._serial or nullcontext():
                written: list[Message] = self._hot.append(counter, place)
                return written
        with self._tx(write=True) as conn:
            written, rows = place(self._advance_counter(conn, agent, session_id, step, now_us))
            conn.execute(_INSERT_MESSAGE, rows)
        return written

    def _advance_counter(self, conn: Connection, agent: str, session_id: str, step: int, now_us: int) -> int:
        params = {"agent": agent, "session_id": session_id, "step": step, "now": now_us}
        upsert = _UPSERT_COUNTER.get(self.engine.dialect.name)
        if upsert is not None:
            return int(conn.execute(upsert, params).scalar_one())
        table = schema.sessions
        key = (table.c.agent == agent) & (table.c.session_id == session_id)
        updated = conn.execute(table.update().where(key).values(last_seq=table.c.last_seq + step, updated_at_us=now_us))
        if updated.rowcount == 0:
            conn.execute(table.insert().values(agent=agent, session_id=session_id, last_seq=step, updated_at_us=now_us))
        return int(conn.execute(sa.select(table.c.last_seq).where(key)).scalar_one())

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        if limit <= 0:
            return []
        params: dict[str, Any] = {"agent": agent, "session_id": session_id, "limit": limit}
        query = _LATEST
        if before_seq is not None:
            query, params["before"] = _LATEST_BEFORE, before_seq
        if self._hot is not None:
            with self._serial or nullcontext():
                return [_row_message(row) for row in self._hot.read_latest(params)]
        with self._tx() as conn:
            return [_row_message(row) for row in conn.execute(query, params).all()]

    def window_query(self, agent: str, session_id: str, limit: int) -> Any:
        """The statement :meth:`latest` runs, with its values bound, for EXPLAIN in tests and benchmarks."""
        return _LATEST.params(agent=agent, session_id=session_id, limit=limit)

    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        query = sa.select(*_COLUMNS).where(_session_key(agent, session_id)).order_by(schema.messages.c.seq)
        if not include_inactive:
            query = query.where(schema.messages.c.status == ACTIVE)
        with self._tx() as conn:
            return [_row_message(row) for row in conn.execute(query)]

    def clear(self, agent: str, session_id: str | None = None) -> int:
        key = schema.messages.c.agent == agent
        if session_id is not None:
            key &= schema.messages.c.session_id == session_id
        with self._tx(write=True) as conn:  # the seq counters stay, so seq never goes back
            return int(conn.execute(schema.messages.delete().where(key)).rowcount)

    def sessions(self, agent: str | None = None) -> list[SessionInfo]:
        table = schema.messages
        query = (
            sa.select(table.c.agent, table.c.session_id, sa.func.count(), sa.func.max(table.c.created_at_us))
            .group_by(table.c.agent, table.c.session_id)
            .order_by(table.c.agent, table.c.session_id)
        )
        if agent is not None:
            query = query.where(table.c.agent == agent)
        with self._tx() as conn:
            return [SessionInfo(a, s, int(n), _from_micros(last)) for a, s, n, last in conn.execute(query)]

    def fold(
        self,
        agent: str,
        session_id: str,
        summary: Message,
        *,
        first_seq: int,
        last_seq: int,
        expected_count: int,
        delete: bool,
    ) -> Message | None:
        if expected_count < 1:
            return None
        table = schema.messages
        in_range = (
            _session_key(agent, session_id)
            & (table.c.status == ACTIVE)
            & (table.c.seq >= first_seq)
            & (table.c.seq <= last_seq)
        )
        written = summary.placed(agent=agent, session_id=session_id, seq=last_seq + 1, created_at=utcnow())
        change = table.delete() if delete else table.update().values(status=INACTIVE)
        try:
            with self._tx(write=True) as conn:
                if conn.execute(change.where(in_range)).rowcount != expected_count:
                    raise _Rollback
                try:
                    conn.execute(table.insert(), [_message_row(written)])
                except IntegrityError as exc:
                    raise _Rollback from exc
        except _Rollback:
            return None
        return written

    # --- runs -----------------------------------------------------------------------

    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        saved = record.evolve(version=(expected_version or 0) + 1)
        row = {
            "agent": saved.agent,
            "run_id": saved.run_id,
            "session_id": saved.session_id,
            "status": saved.status,
            "version": saved.version,
            "created_at": saved.created_at,
            "finished_at": saved.finished_at if saved.status in FINISHED_STATUSES else None,
            "data": saved.to_json(),
        }
        if self._hot is not None:
            times = {"created_at": _sqlite_time(saved.created_at), "finished_at": _sqlite_time(cast("datetime | None", row["finished_at"]))}
            values = {f"v_{name}": value for name, value in {**row, **times}.items()}
            with self._serial or nullcontext():
                if expected_version is None:
                    if self._hot.write_one(self._hot.insert_run, values) is None:
                        raise run_conflict(record, expected_version)
                    return saved
                key = {"key_agent": record.agent, "key_run_id": record.run_id, "expected": expected_version}
                if self._hot.write_one(self._hot.update_run, {**values, **key}) != 1:
                    raise run_conflict(record, expected_version)
            return saved
        with self._tx(write=True) as conn:
            if expected_version is None:
                try:
                    conn.execute(_INSERT_RUN, row)
                except IntegrityError as exc:
                    raise run_conflict(record, expected_version) from exc
            elif conn.execute(_UPDATE_RUN, {**row, "key_agent": record.agent, "key_run_id": record.run_id, "expected": expected_version}).rowcount != 1:
                raise run_conflict(record, expected_version)
        return saved

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        params = {"agent": agent, "run_id": run_id}
        if self._hot is not None:  # every run reads its session's lease and holder: on SQLite, without SQLAlchemy's cost
            with self._serial or nullcontext():
                data = self._hot.read_one(params)
            return RunRecord.from_json(data) if data is not None else None
        with self._tx() as conn:
            data = conn.execute(_LOAD_RUN, params).scalar()
        return RunRecord.from_json(data) if data is not None else None

    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        table = schema.runs
        query = sa.select(table.c.data).where(table.c.agent == agent).order_by(table.c.created_at, table.c.run_id)
        if status is not None:
            query = query.where(table.c.status == status)
        if session_id is not None:
            query = query.where(table.c.session_id == session_id)
        with self._tx() as conn:
            return [RunRecord.from_json(data) for data in conn.execute(query).scalars()]

    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        table = schema.runs
        doomed = (
            (table.c.agent == agent)
            & table.c.status.in_(FINISHED_STATUSES)
            & (table.c.finished_at < finished_before)
        )
        with self._tx(write=True) as conn:
            return int(conn.execute(table.delete().where(doomed)).rowcount)

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()


# --- helpers ------------------------------------------------------------------------


def create_engine(url: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, timeout: float = DEFAULT_TIMEOUT) -> Engine:
    """An engine for ``url``, with the driver our extras install, SQLite set up for sharing and PostgreSQL's waits bounded."""
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername=_postgres_driver())
    if parsed.get_backend_name() == "sqlite":
        in_memory = parsed.database in (None, "", ":memory:")
        options: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}}
        if in_memory:
            options["poolclass"] = StaticPool
        return sa.create_engine(parsed, **options)
    postgres = parsed.get_backend_name() == "postgresql"
    connect_args = {**_postgres_waits(connect_timeout, timeout), **postgres_pooling.connect_args(parsed)} if postgres else {}
    try:
        engine = sa.create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    except ImportError as exc:
        raise MissingDependencyError(
            f"The database driver for {parsed.drivername!r} is not installed ({exc}). "
            "For PostgreSQL install it with: pip install 'omnisync[postgres]'"
        ) from exc
    if postgres:
        postgres_pooling.connect_without_options_if_refused(engine)
    return engine


def _postgres_driver() -> str:
    try:
        import psycopg  # noqa: F401

        return "postgresql+psycopg"
    except ImportError:
        pass
    if importlib.util.find_spec("psycopg2") is not None:
        return "postgresql+psycopg2"
    raise MissingDependencyError(
        "PostgreSQL memory requires optional dependency 'psycopg'. Install it with: pip install 'omnisync[postgres]'"
    )


def _configure_sqlite(engine: Engine) -> None:
    in_memory = isinstance(engine.pool, StaticPool)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE)
        if write or write is None:  # None: not one of ours (create_all, a user's own statement)
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        # A read is a single SELECT, atomic without a transaction: no BEGIN/COMMIT round trips.


def _session_key(agent: str, session_id: str) -> Any:
    return (schema.messages.c.agent == agent) & (schema.messages.c.session_id == session_id)


def _message_row(message: Message) -> dict[str, Any]:
    return {
        "agent": message.agent,
        "session_id": message.session_id,
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "tool_calls": json.dumps(message.tool_calls, ensure_ascii=False) if message.tool_calls else None,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "status": message.status,
        "run_id": message.run_id,
        "tokens": message.tokens,
        "created_at_us": _micros(message.created_at),  # type: ignore[arg-type]
        "metadata": json.dumps(message.metadata, ensure_ascii=False) if message.metadata else None,
    }


def _row_message(row: Any) -> Message:
    role, content, tool_calls, tool_call_id, name, metadata, tokens, run_id, agent, session_id, seq, status, created = row
    return Message(
        role,
        content,
        json.loads(tool_calls) if tool_calls else None,
        tool_call_id,
        name,
        json.loads(metadata) if metadata else {},
        tokens,
        run_id,
        agent,
        session_id,
        seq,
        status,
        _from_micros(created),
    )


def _sqlite_time(moment: datetime | None) -> str | None:
    """A time as SQLAlchemy's SQLite DateTime stores it (UTC wall time), so Core reads and compares it alike."""
    return None if moment is None else moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def _micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _from_micros(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + timedelta(microseconds=value)


@contextmanager
def _store_errors(where: str) -> Iterator[None]:
    try:
        yield
    except SQLAlchemyError as exc:
        logger.debug("%s failed: %s", where, exc)
        raise StoreError(f"{where} failed: {exc.__class__.__name__}: {exc}") from exc


def _postgres_waits(connect_timeout: float, timeout: float) -> dict[str, Any]:
    """libpq's own bounds: the connect, a statement on the server, and a link that stops answering."""
    millis = int(timeout * 1000)
    return {
        "connect_timeout": max(1, math.ceil(connect_timeout)),
        "options": f"-c statement_timeout={millis}",
        "tcp_user_timeout": millis,  # data sent and not acknowledged for this long: the link is gone
        "keepalives": 1,
        "keepalives_idle": max(1, int(timeout / 3)),
        "keepalives_interval": max(1, int(timeout / 9)),
        "keepalives_count": 3,
    }
