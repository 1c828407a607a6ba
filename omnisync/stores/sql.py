"""The SQL store, on SQLAlchemy Core: SQLite on one machine, PostgreSQL when processes share it.

Seq numbers come from a per-session counter row updated inside the write transaction, so
appends to one session from many processes are serialized by the database. A window is
``ORDER BY seq DESC LIMIT n`` on the index (agent, session_id, status, seq). SQLite files
run in WAL mode with a busy timeout, and writes take the write lock up front
(``BEGIN IMMEDIATE``), so several processes can share one file without "database is locked".
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from typing import Any

from .._logging import logger
from ..errors import MissingDependencyError, RunConflictError, StoreError
from ..messages import ACTIVE, INACTIVE, Message, utcnow
from ..run_record import FINISHED_STATUSES, RunRecord
from .base import SEQ_STEP, MemoryStore, SessionInfo

try:
    import sqlalchemy as sa
    from sqlalchemy import event
    from sqlalchemy.engine import Connection, Engine, make_url
    from sqlalchemy.exc import IntegrityError, SQLAlchemyError
    from sqlalchemy.pool import StaticPool
except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test
    raise MissingDependencyError(
        "SQL database memory requires optional dependency 'sqlalchemy'. "
        "Install it with: pip install 'omnisync[postgres]'"
    ) from exc

from . import sql_schema as schema

SQLITE_BUSY_TIMEOUT_MS = 30_000
_WRITE = "omnisync_write"


class _Rollback(Exception):
    """Abandon a transaction whose compare-and-set did not hold."""


class SQLStore(MemoryStore):
    """Messages and runs in any database SQLAlchemy reaches (``DATABASE_URL``)."""

    kind = "sql"

    def __init__(self, url: str | None = None, *, engine: Engine | None = None) -> None:
        if engine is None and url is None:
            raise ValueError("SQLStore needs a url or an engine")
        self._owns_engine = engine is None
        self.engine = engine if engine is not None else create_engine(url)  # type: ignore[arg-type]
        self._is_sqlite = self.engine.dialect.name == "sqlite"
        self._is_postgres = self.engine.dialect.name == "postgresql"
        # One shared connection (in-memory SQLite) must not interleave two transactions.
        self._serial = threading.RLock() if isinstance(self.engine.pool, StaticPool) else None
        if self._is_sqlite:
            _configure_sqlite(self.engine)
        self._ensure_schema()

    @classmethod
    def from_url(cls, url: str) -> "SQLStore":
        return cls(url)

    # --- transactions ---------------------------------------------------------------

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        with self._serial or nullcontext(), _store_errors(self._describe()):
            with self.engine.connect() as conn:
                if write:
                    conn = conn.execution_options(**{_WRITE: True})
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
        if not messages:
            return []
        now = utcnow()
        with self._tx(write=True) as conn:
            last = self._advance_counter(conn, agent, session_id, SEQ_STEP * len(messages), now)
            first = last - SEQ_STEP * (len(messages) - 1)
            written = [
                m.placed(agent=agent, session_id=session_id, seq=first + SEQ_STEP * i, created_at=now)
                for i, m in enumerate(messages)
            ]
            conn.execute(schema.messages.insert(), [_message_row(m) for m in written])
        return written

    def _advance_counter(self, conn: Connection, agent: str, session_id: str, step: int, now: datetime) -> int:
        table = schema.sessions
        if self._is_sqlite or self._is_postgres:
            dialect_insert = _dialect_insert(self.engine.dialect.name)
            statement = (
                dialect_insert(table)
                .values(agent=agent, session_id=session_id, last_seq=step, updated_at=now)
                .on_conflict_do_update(
                    index_elements=["agent", "session_id"],
                    set_={"last_seq": table.c.last_seq + step, "updated_at": now},
                )
                .returning(table.c.last_seq)
            )
            return int(conn.execute(statement).scalar_one())
        key = (table.c.agent == agent) & (table.c.session_id == session_id)
        updated = conn.execute(table.update().where(key).values(last_seq=table.c.last_seq + step, updated_at=now))
        if updated.rowcount == 0:
            conn.execute(table.insert().values(agent=agent, session_id=session_id, last_seq=step, updated_at=now))
        return int(conn.execute(sa.select(table.c.last_seq).where(key)).scalar_one())

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        if limit <= 0:
            return []
        query = (
            sa.select(schema.messages)
            .where(_session_key(agent, session_id), schema.messages.c.status == ACTIVE)
            .order_by(schema.messages.c.seq.desc())
            .limit(limit)
        )
        if before_seq is not None:
            query = query.where(schema.messages.c.seq < before_seq)
        with self._tx() as conn:
            return [_row_message(row) for row in conn.execute(query).mappings()]

    def window_query(self, agent: str, session_id: str, limit: int) -> Any:
        """The statement :meth:`latest` runs, for EXPLAIN in tests and benchmarks."""
        return (
            sa.select(schema.messages)
            .where(_session_key(agent, session_id), schema.messages.c.status == ACTIVE)
            .order_by(schema.messages.c.seq.desc())
            .limit(limit)
        )

    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        query = sa.select(schema.messages).where(_session_key(agent, session_id)).order_by(schema.messages.c.seq)
        if not include_inactive:
            query = query.where(schema.messages.c.status == ACTIVE)
        with self._tx() as conn:
            return [_row_message(row) for row in conn.execute(query).mappings()]

    def clear(self, agent: str, session_id: str | None = None) -> int:
        key = schema.messages.c.agent == agent
        if session_id is not None:
            key &= schema.messages.c.session_id == session_id
        with self._tx(write=True) as conn:  # the seq counters stay, so seq never goes back
            return int(conn.execute(schema.messages.delete().where(key)).rowcount)

    def sessions(self, agent: str | None = None) -> list[SessionInfo]:
        table = schema.messages
        query = (
            sa.select(table.c.agent, table.c.session_id, sa.func.count(), sa.func.max(table.c.created_at))
            .group_by(table.c.agent, table.c.session_id)
            .order_by(table.c.agent, table.c.session_id)
        )
        if agent is not None:
            query = query.where(table.c.agent == agent)
        with self._tx() as conn:
            return [SessionInfo(a, s, int(n), _utc(last)) for a, s, n, last in conn.execute(query)]

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
        table = schema.runs
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
        with self._tx(write=True) as conn:
            if expected_version is None:
                try:
                    conn.execute(table.insert().values(**row))
                except IntegrityError as exc:
                    raise RunConflictError(f"run {record.run_id} already exists") from exc
            else:
                key = (table.c.agent == record.agent) & (table.c.run_id == record.run_id) & (table.c.version == expected_version)
                if conn.execute(table.update().where(key).values(**row)).rowcount != 1:
                    raise RunConflictError(
                        f"run {record.run_id} was changed by someone else (expected version {expected_version})"
                    )
        return saved

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        table = schema.runs
        query = sa.select(table.c.data).where(table.c.agent == agent, table.c.run_id == run_id)
        with self._tx() as conn:
            data = conn.execute(query).scalar()
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


def create_engine(url: str) -> Engine:
    """An engine for ``url``, with the driver our extras install and SQLite set up for sharing."""
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername=_postgres_driver())
    if parsed.get_backend_name() == "sqlite":
        in_memory = parsed.database in (None, "", ":memory:")
        options: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}}
        if in_memory:
            options["poolclass"] = StaticPool
        return sa.create_engine(parsed, **options)
    try:
        return sa.create_engine(parsed, pool_pre_ping=True)
    except ImportError as exc:
        raise MissingDependencyError(
            f"The database driver for {parsed.drivername!r} is not installed ({exc}). "
            "For PostgreSQL install it with: pip install 'omnisync[postgres]'"
        ) from exc


def _postgres_driver() -> str:
    try:
        import psycopg  # noqa: F401

        return "postgresql+psycopg"
    except ImportError:
        pass
    try:
        import psycopg2  # noqa: F401

        return "postgresql+psycopg2"
    except ImportError as exc:
        raise MissingDependencyError(
            "PostgreSQL memory requires optional dependency 'psycopg'. "
            "Install it with: pip install 'omnisync[postgres]'"
        ) from exc


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
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_WRITE) else "BEGIN")


def _dialect_insert(name: str) -> Any:
    if name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        from sqlalchemy.dialects.postgresql import insert
    return insert


def _session_key(agent: str, session_id: str) -> Any:
    return (schema.messages.c.agent == agent) & (schema.messages.c.session_id == session_id)


def _message_row(message: Message) -> dict[str, Any]:
    return {
        "agent": message.agent,
        "session_id": message.session_id,
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "name": message.name,
        "status": message.status,
        "run_id": message.run_id,
        "tokens": message.tokens,
        "created_at": message.created_at,
        "metadata": message.metadata or {},
    }


def _row_message(row: Any) -> Message:
    return Message(
        role=row["role"],
        content=row["content"],
        tool_calls=row["tool_calls"],
        tool_call_id=row["tool_call_id"],
        name=row["name"],
        metadata=row["metadata"] or {},
        tokens=row["tokens"],
        run_id=row["run_id"],
        agent=row["agent"],
        session_id=row["session_id"],
        seq=row["seq"],
        status=row["status"],
        created_at=_utc(row["created_at"]),
    )


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


@contextmanager
def _store_errors(where: str) -> Iterator[None]:
    try:
        yield
    except SQLAlchemyError as exc:
        logger.debug("%s failed: %s", where, exc)
        raise StoreError(f"{where} failed: {exc.__class__.__name__}: {exc}") from exc
