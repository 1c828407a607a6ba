"""The SQL store, on SQLAlchemy Core: SQLite on one machine, PostgreSQL when processes share it.

Seq numbers come from a per-session counter row updated inside the write transaction, so
appends to one session from many processes are serialized by the database. A window is
``ORDER BY seq DESC LIMIT n`` on the index (agent, session_id, status, seq). A page of
sessions is one ``GROUP BY agent, session_id ... LIMIT n`` that walks the primary key
(agent, session_id, seq) from the cursor and stops after n groups: it reads the messages of
the sessions it lists (to count them), none of those before or after, and a cleared session
has no rows to pass over. Its order, and the cursor's comparison, are the columns' collation:
SQLite's BINARY (Python's order of str); on PostgreSQL the database's (Python's order in a
database whose collation is C; ``en_US.UTF-8`` and the like order case and accents their own
way, consistently). Not ``COLLATE "C"`` in the query: PostgreSQL then cannot walk the index in
order, and each page would read every message after the cursor. SQLite files
run in WAL mode with a busy timeout, and writes take the write lock up front
(``BEGIN IMMEDIATE``), so several processes can share one file without "database is locked".
"""

from __future__ import annotations

import importlib.util
import json
import math
import secrets
import sqlite3
import select
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from typing import Any

from ..._logging import logger
from ...errors import MissingDependencyError, StoreError
from ...messages import ACTIVE, INACTIVE, Message, utcnow
from ...run_record import FINISHED_STATUSES, RUN, RunRecord
from ..registry import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT
from ..base import (
    MAX_EVENTS_READ,
    SEQ_STEP,
    MemoryStore,
    RunCursor,
    StoredEvent,
    SessionInfo,
    check_events,
    events_limit,
    page_limit,
    run_conflict,
)

try:
    import sqlalchemy as sa
    from sqlalchemy import event
    from sqlalchemy.dialects import postgresql as _postgresql
    from sqlalchemy.dialects import sqlite as _sqlite
    from sqlalchemy.engine import Connection, Engine, make_url
    from sqlalchemy.exc import DisconnectionError, IntegrityError, SQLAlchemyError
    from sqlalchemy.pool import StaticPool
except ImportError as _missing:  # pragma: no cover - exercised by the missing-extra test
    raise MissingDependencyError(
        "SQL database memory requires optional dependency 'sqlalchemy'. "
        "Install it with: pip install 'omnisync[postgres]'"
    ) from _missing

from . import pooling as postgres_pooling, search as sql_search

from .. import call_deadline
from . import migrations, schema
from .rows import from_micros, message_row, micros, rows_messages
from .retry import saved_again_on_a_fresh_connection
from .. import copy_by_replay
from ...search.hits import Found

# A row of content parts keeps them as JSON text in ``content`` and says so in ``metadata``
# (taken out again on reading), so every row written before parts existed reads as text.
_m = schema.messages.c
# A message's columns but those a session's WHERE clause fixes (agent, session_id, status),
# in the order row_message reads them.
MESSAGE_COLUMNS = (
    _m.role, _m.content, _m.tool_calls, _m.tool_call_id, _m.name, _m.metadata, _m.tokens, _m.run_id, _m.seq, _m.created_at_us,
)
# Statements built once: a window load only binds values.
LATEST = (
    sa.select(*MESSAGE_COLUMNS)
    .where(_m.agent == sa.bindparam("agent"), _m.session_id == sa.bindparam("session_id"), _m.status == ACTIVE)
    .order_by(_m.seq.desc())
    .limit(sa.bindparam("limit", type_=sa.Integer))
)
LATEST_BEFORE = LATEST.where(_m.seq < sa.bindparam("before"))
INSERT_MESSAGE = schema.messages.insert()
# Sessions with their counts and last write, in (agent, session_id) order: the primary key's.
SESSIONS = (
    sa.select(_m.agent, _m.session_id, sa.func.count(), sa.func.max(_m.created_at_us))
    .group_by(_m.agent, _m.session_id)
    .order_by(_m.agent, _m.session_id)
)
_r = schema.runs.c
RUN_COLUMNS = ("agent", "run_id", "session_id", "kind", "status", "version", "created_at", "finished_at", "data")
# Every column bound by name, so a compiled statement names them all whatever a call passes.
INSERT_RUN = schema.runs.insert().values({name: sa.bindparam(f"v_{name}") for name in RUN_COLUMNS})
UPDATE_RUN = (
    schema.runs.update()
    .where(_r.agent == sa.bindparam("key_agent"), _r.run_id == sa.bindparam("key_run_id"), _r.version == sa.bindparam("expected"))
    .values({name: sa.bindparam(f"v_{name}") for name in RUN_COLUMNS})
)
LOAD_RUN = sa.select(_r.data).where(_r.agent == sa.bindparam("agent"), _r.run_id == sa.bindparam("run_id"))


def _counter_upsert(insert: Any) -> Any:
    table = schema.sessions
    step, now = sa.bindparam("step", type_=sa.Integer), sa.bindparam("now", type_=sa.BigInteger)
    return (
        insert(table)
        .values(agent=sa.bindparam("agent"), session_id=sa.bindparam("session_id"), last_seq=step, updated_at_us=now)
        .on_conflict_do_update(index_elements=["agent", "session_id"], set_={"last_seq": table.c.last_seq + step, "updated_at_us": now})
        .returning(table.c.last_seq)
    )


UPSERT_COUNTER = {"sqlite": _counter_upsert(_sqlite.insert), "postgresql": _counter_upsert(_postgresql.insert)}
DIALECTS = tuple(UPSERT_COUNTER)

SQLITE_BUSY_TIMEOUT_MS = 30_000
_WRITE = "omnisync_write"


class _Rollback(Exception):
    """Abandon a transaction whose compare-and-set did not hold."""


class SQLStore(MemoryStore):
    """Messages and runs in SQLite or PostgreSQL through SQLAlchemy Core (``DATABASE_URL``).

    A router opens SQLite files as :class:`~omnisync.stores.sqlite.SQLiteStore` (the registry's
    choice), which runs the hottest operations on sqlite3 directly; this class is the path for
    everything else.
    """

    kind = "sql"
    keeps_search_index = True

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
        dialect = self.engine.dialect.name
        if dialect not in DIALECTS:
            if self._owns_engine:
                self.engine.dispose()
            raise StoreError(
                f"omnisync's SQL store runs on SQLite and PostgreSQL, not {dialect}: "
                "use a sqlite:/// or postgresql:// URL (or another kind of store: redis, mongodb)."
            )
        self._upsert_counter = UPSERT_COUNTER[dialect]
        self._load_lease = _load_lease_statement(dialect)
        self._is_postgres = dialect == "postgresql"
        # One shared connection (in-memory SQLite) must not interleave two transactions.
        self._serial = threading.RLock() if isinstance(self.engine.pool, StaticPool) else None
        if dialect == "sqlite":
            _configure_sqlite(self.engine)
        try:
            self._ensure_schema()
        except BaseException:
            if self._owns_engine:
                self.engine.dispose()
            raise

    @property
    def database_system(self) -> str | None:
        dialect = str(self.engine.dialect.name)
        return None if dialect == "sqlite" else dialect  # SQLite runs in this process: no round trip

    @property
    def writes_run_atomically(self) -> bool:
        return self._is_postgres and self.message_seal is None  # APPEND_AND_SAVE_RUN: one statement, of rows not sealed

    @classmethod
    def from_url(cls, url: str, **options: Any) -> "SQLStore":
        """This class on ``url``. Which class a URL opens (SQLite's or PostgreSQL's subclass) is the
        registry's choice: ``KINDS["sql"].store_class(url)``."""
        return cls(url, **options)

    # --- transactions ---------------------------------------------------------------

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Connection]:
        """A transaction; on SQLite a write takes the write lock up front, a read runs on its own."""
        with self._serial or nullcontext(), _store_errors(self._describe):
            with self.engine.connect() as conn:
                conn = conn.execution_options(**{_WRITE: write})
                with conn.begin():
                    yield conn

    @contextmanager
    def _statement(self, write: bool = False) -> Iterator[Connection]:
        """For exactly one statement, atomic on its own: on PostgreSQL it runs in autocommit,
        one round trip instead of BEGIN, the statement and COMMIT."""
        if not self._is_postgres:
            with self._tx(write) as conn:
                yield conn
            return
        with _store_errors(self._describe), self.engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def _describe(self) -> str:
        return f"SQL store {self.engine.url.render_as_string(hide_password=True)}"

    def _ensure_schema(self) -> None:
        with self._tx(write=True) as conn:
            if self._is_postgres:
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(7301931)"))
            migrations.bring_up_to_date(conn, self._describe())

    # --- messages -------------------------------------------------------------------

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        if not messages:
            return []
        if self._is_postgres and self.message_seal is None:  # sealed rows need their seq first: the two statements below
            return self._append_in_one_statement(agent, session_id, messages)
        counter = counter_params(agent, session_id, len(messages))
        with self._tx(write=True) as conn:
            last_seq = int(conn.execute(self._upsert_counter, counter).scalar_one())
            written, rows = place_messages(agent, session_id, messages, last_seq, seal=self.message_seal)
            conn.execute(INSERT_MESSAGE, rows)
        return written

    def _append_in_one_statement(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        """PostgreSQL: the counter's upsert and the rows' insert as one statement (the upsert a
        data-modifying CTE the insert reads), atomic on its own: one round trip, not four."""
        now = utcnow()
        written, rows = place_messages(agent, session_id, messages, 0, now)  # seq relative to the counter's new value
        last_seq = max(seq for (seq,) in self._rows_of(APPEND, append_params(agent, session_id, rows, micros(now)), write=True))
        for message in written:
            message.seq += last_seq
        return written

    def append_and_save_run(
        self, agent: str, session_id: str, messages: Sequence[Message], record: RunRecord, expected_version: int | None
    ) -> tuple[list[Message], RunRecord]:
        """On PostgreSQL one statement, both or neither (the record's version checked first); a
        record saved so keeps the ``first_written_seq`` it had. Elsewhere the plain calls."""
        if not self.writes_run_atomically or not messages or expected_version is None:
            return super().append_and_save_run(agent, session_id, messages, record, expected_version)
        now = utcnow()
        written, rows = place_messages(agent, session_id, messages, 0, now)  # seq relative to the counter's new value
        stand_in = -1 - secrets.randbelow(10**12) if record.first_written_seq is None else None
        saved = record.evolve(version=expected_version + 1, **({"first_written_seq": stand_in} if stand_in is not None else {}))
        marker = f'"first_written_seq":{stand_in}' if stand_in is not None else ""  # the statement writes the first seq there
        params = {
            **append_params(agent, session_id, rows, micros(now)),
            **run_values(saved),
            **run_key(record, expected_version),
            "marker": marker,
            "first": rows[0]["seq"],
        }
        seqs = self._rows_of(APPEND_AND_SAVE_RUN, params, write=True)
        if not seqs:
            raise run_conflict(record, expected_version)
        last_seq = max(seq for (seq,) in seqs)
        for message in written:
            message.seq += last_seq
        if stand_in is not None:
            saved = saved.evolve(first_written_seq=written[0].seq)
        return written, saved

    def _rows_of(self, statement: Any, params: dict[str, Any], write: bool = False) -> Sequence[Any]:
        """The rows of one statement, atomic on its own (PostgresStore runs the hottest on the driver)."""
        with self._statement(write) as conn:
            return conn.execute(statement, params).all()

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        if limit <= 0:
            return []
        params: dict[str, Any] = {"agent": agent, "session_id": session_id, "limit": limit}
        query = LATEST
        if before_seq is not None:
            query, params["before"] = LATEST_BEFORE, before_seq
        return rows_messages(self._rows_of(query, params), agent, session_id)

    def window_query(self, agent: str, session_id: str, limit: int) -> Any:
        """The statement :meth:`latest` runs, with its values bound, for EXPLAIN in tests and benchmarks."""
        return LATEST.params(agent=agent, session_id=session_id, limit=limit)

    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        table = schema.messages
        query = sa.select(*MESSAGE_COLUMNS, table.c.status).where(_session_key(agent, session_id)).order_by(table.c.seq)
        if not include_inactive:
            query = query.where(table.c.status == ACTIVE)
        with self._statement() as conn:
            return rows_messages(conn.execute(query), agent, session_id, status=None)

    def history_page(
        self, agent: str, session_id: str, after_seq: int | None, limit: int, include_inactive: bool = False
    ) -> list[Message]:
        if limit <= 0:
            return []
        table = schema.messages
        query = sa.select(*MESSAGE_COLUMNS, table.c.status).where(_session_key(agent, session_id)).order_by(table.c.seq).limit(limit)
        if after_seq is not None:
            query = query.where(table.c.seq > after_seq)
        if not include_inactive:
            query = query.where(table.c.status == ACTIVE)
        with self._statement() as conn:
            return rows_messages(conn.execute(query), agent, session_id, status=None)

    def delete_message(self, agent: str, session_id: str, seq: int) -> bool:
        key = (schema.messages.c.agent == agent) & (schema.messages.c.session_id == session_id) & (schema.messages.c.seq == seq)
        with self._statement(write=True) as conn:  # the seq counter stays
            return bool(conn.execute(schema.messages.delete().where(key)).rowcount)

    def clear(self, agent: str, session_id: str | None = None) -> int:
        key = schema.messages.c.agent == agent
        if session_id is not None:
            key &= schema.messages.c.session_id == session_id
        with self._statement(write=True) as conn:  # the seq counters stay, so seq never goes back
            return int(conn.execute(schema.messages.delete().where(key)).rowcount)

    def sessions(self, agent: str | None = None) -> list[SessionInfo]:
        query = SESSIONS if agent is None else SESSIONS.where(_m.agent == agent)
        with self._statement() as conn:
            return [_session_info(row) for row in conn.execute(query)]

    def sessions_page(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionInfo]:
        query = self.sessions_page_query(agent, after, page_limit(limit))
        with self._statement() as conn:
            return [_session_info(row) for row in conn.execute(query)]

    def sessions_page_query(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> Any:
        """The statement :meth:`sessions_page` runs, for EXPLAIN in tests. Each form is one the
        databases answer by walking the primary key from the cursor: a row comparison across
        agents; within one agent, ``session_id > s``, or (a cursor in another agent) the
        database's own comparison of the two agents, a constant it evaluates once."""
        query = SESSIONS.limit(limit)
        if agent is None:
            if after is not None:
                query = query.where(sa.tuple_(_m.agent, _m.session_id) > sa.tuple_(_text(after[0]), _text(after[1])))
            return query
        query = query.where(_m.agent == agent)
        if after is None:
            return query
        if after[0] == agent:
            return query.where(_m.session_id > after[1])
        return query.where(_text(after[0]) < _text(agent))

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
                    conn.execute(table.insert(), [message_row(written)])
                except IntegrityError as exc:
                    raise _Rollback from exc
        except _Rollback:
            return None
        return written

    def replace_values(self, agent: str, session_id: str, messages: Sequence[Message]) -> int:
        if not messages:
            return 0
        rows = [message_row(m, 0) for m in messages]
        values = [{"key_seq": row["seq"], **{f"v_{name}": row[name] for name in ("content", "tool_calls", "metadata", "terms")}} for row in rows]
        table = schema.messages
        change = table.update().where(_session_key(agent, session_id) & (table.c.seq == sa.bindparam("key_seq")))
        with self._tx(write=True) as conn:
            change = change.values({name: sa.bindparam(f"v_{name}") for name in ("content", "tool_calls", "metadata", "terms")})
            return int(conn.execute(change, values).rowcount)

    # --- editing and searching history (sql_search.py) --------------------------------

    def copy_session(self, agent: str, source_session_id: str, target_session_id: str, *, last_seq: int) -> int:
        """One transaction on the server: ``INSERT ... SELECT`` of the rows and the target's counter (sql_search.py)."""
        with self._tx(write=True) as conn:
            if conn.execute(sa.select(_m.seq).where(_session_key(agent, target_session_id)).limit(1)).first() is not None:
                raise copy_by_replay.target_taken(agent, target_session_id)
            return sql_search.copy_rows(conn, agent, source_session_id, target_session_id, last_seq)

    def deactivate(self, agent: str, session_id: str, *, first_seq: int, last_seq: int, expected_count: int) -> bool:
        if expected_count < 1:
            return False
        try:
            with self._tx(write=True) as conn:
                if sql_search.deactivate_rows(conn, agent, session_id, first_seq, last_seq) != expected_count:
                    raise _Rollback
        except _Rollback:
            return False
        return True

    def search_messages(
        self,
        agent: str,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        limit: int = 10,
        before: datetime | None = None,
        after: datetime | None = None,
    ) -> list[Found]:
        """One indexed query: FTS5 ``MATCH`` ranked by ``bm25()`` on SQLite, ``@@`` on the GIN index ranked by ``ts_rank`` on PostgreSQL."""
        if not terms or limit < 1:
            return []
        with self._statement() as conn:
            return sql_search.search_rows(conn, agent, terms, session_id, limit, before, after)

    def reindex(self, agent: str | None = None) -> int:
        """Every message's terms written again from its content (and on SQLite, the FTS5 table rebuilt)."""
        with self._tx(write=True) as conn:
            return sql_search.reindex_rows(conn, agent, self.sealed_terms)

    # --- runs -----------------------------------------------------------------------

    @saved_again_on_a_fresh_connection
    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        saved = record.evolve(version=(expected_version or 0) + 1)
        values = run_values(saved)
        with self._statement(write=True) as conn:
            if expected_version is None:
                try:
                    conn.execute(INSERT_RUN, values)
                except IntegrityError as exc:
                    raise run_conflict(record, expected_version) from exc
            elif conn.execute(UPDATE_RUN, {**values, **run_key(record, expected_version)}).rowcount != 1:
                raise run_conflict(record, expected_version)
        return saved

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        with self._statement() as conn:
            data = conn.execute(LOAD_RUN, {"agent": agent, "run_id": run_id}).scalar()
        return RunRecord.from_json(data) if data is not None else None

    def load_lease(self, agent: str, run_id: str) -> tuple[RunRecord | None, RunRecord | None]:
        """One SELECT: the lease joined to the run its JSON names as holder."""
        with self._statement() as conn:
            row = conn.execute(self._load_lease, {"agent": agent, "run_id": run_id}).first()
        if row is None:
            return None, None
        lease, holder = tuple(row)
        return RunRecord.from_json(lease), RunRecord.from_json(holder) if holder is not None else None

    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        table = schema.runs
        query = sa.select(table.c.data).where(table.c.agent == agent).order_by(table.c.created_at, table.c.run_id)
        if status is not None:
            query = query.where(table.c.status == status)
        if session_id is not None:
            query = query.where(table.c.session_id == session_id)
        with self._statement() as conn:
            return [RunRecord.from_json(data) for data in conn.execute(query).scalars()]

    def _page_of_runs(
        self, agent: str, after: RunCursor | None, limit: int, status: str | None, session_id: str | None, kind: str
    ) -> list[RunRecord]:
        """One SELECT of at most ``limit`` rows (:meth:`runs_page_query`)."""
        query = self.runs_page_query(agent, after, limit, status=status, session_id=session_id, kind=kind)
        with self._statement() as conn:
            return [RunRecord.from_json(data) for data in conn.execute(query).scalars()]

    def runs_page_query(
        self, agent: str, after: RunCursor | None, limit: int, *, status: str | None = None, session_id: str | None = None, kind: str = RUN
    ) -> Any:
        """A page of runs, read in order from the index that starts with the filters given
        (``ix_omnisync_runs_page``, ``_by_status`` or ``_by_session``) from the cursor on."""
        table = schema.runs
        query = (
            sa.select(table.c.data)
            .where(table.c.agent == agent, table.c.kind == kind, table.c.created_at.is_not(None))
            .order_by(table.c.created_at, table.c.run_id)
            .limit(limit)
        )
        if status is not None:
            query = query.where(table.c.status == status)
        if session_id is not None:
            query = query.where(table.c.session_id == session_id)
        if after is not None:
            created_at = sa.literal(after[0].astimezone(timezone.utc), table.c.created_at.type)
            query = query.where(sa.tuple_(table.c.created_at, table.c.run_id) > sa.tuple_(created_at, sa.literal(after[1])))
        return query

    def run_agents(self) -> list[str]:
        """One SELECT DISTINCT over the runs' page index, which starts with the agent."""
        with self._statement() as conn:
            return list(conn.execute(sa.select(schema.runs.c.agent).distinct().order_by(schema.runs.c.agent)).scalars())

    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        table = schema.runs
        doomed = (
            (table.c.agent == agent)
            & table.c.status.in_(FINISHED_STATUSES)
            & (table.c.finished_at < finished_before)
        )
        events = schema.run_events
        of_doomed = sa.select(table.c.run_id).where(doomed)
        with self._tx(write=True) as conn:
            conn.execute(events.delete().where((events.c.agent == agent) & events.c.run_id.in_(of_doomed)))
            return int(conn.execute(table.delete().where(doomed)).rowcount)

    # --- a run's events -------------------------------------------------------------

    def append_events(self, agent: str, run_id: str, events: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """The ids are the run's highest + 1, 2... taken inside the write: on PostgreSQL one
        INSERT ... SELECT (a writer that took the same ids meets the primary key and tries
        again, so readers never see a gap), on SQLite under the write lock. Sealed events are
        sealed at their ids between the read of the highest and the insert: on PostgreSQL that
        transaction first takes a lock on the run's events, so writers queue instead of
        retrying (three threads once lost twenty retries in a row)."""
        checked = check_events(events)
        if not checked:
            return self._last_event_id(agent, run_id)
        for attempt in range(_EVENT_ATTEMPTS):
            try:
                if self._is_postgres and self.event_seal is None:  # sealed events need their ids first: the two statements below
                    with self._statement(write=True) as conn:
                        return int(max(conn.execute(_append_events_statement(agent, run_id, checked)).scalars()))
                with self._tx(write=True) as conn:
                    if self._is_postgres:
                        conn.execute(_LOCK_RUN_EVENTS, {"agent": agent, "run_id": run_id})
                    last = int(conn.execute(_LAST_EVENT, {"agent": agent, "run_id": run_id}).scalar() or 0)
                    stored = self.events_as_stored(agent, run_id, last + 1, events, checked)
                    rows = [{"agent": agent, "run_id": run_id, "id": last + i, "name": n, "data": d} for i, (n, d) in enumerate(stored, 1)]
                    conn.execute(schema.run_events.insert(), rows)
                    return last + len(rows)
            except StoreError as exc:
                if not isinstance(exc.__cause__, IntegrityError) or attempt == _EVENT_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def replace_events(self, agent: str, run_id: str, events: Sequence[StoredEvent]) -> int:
        if not events:
            return 0
        table = schema.run_events
        where = (table.c.agent == agent) & (table.c.run_id == run_id) & (table.c.id == sa.bindparam("event_id"))
        statement = table.update().where(where).values(data=sa.bindparam("new_data"))
        with self._tx(write=True) as conn:
            return sum(
                int(conn.execute(statement, {"event_id": e.id, "new_data": json.dumps(e.data, ensure_ascii=False, separators=(",", ":"))}).rowcount)
                for e in events
            )

    def _last_event_id(self, agent: str, run_id: str) -> int:
        with self._statement() as conn:
            return int(conn.execute(_LAST_EVENT, {"agent": agent, "run_id": run_id}).scalar() or 0)

    def read_events(self, agent: str, run_id: str, after: int = 0, limit: int = MAX_EVENTS_READ) -> list[StoredEvent]:
        limit = events_limit(after, limit)
        with self._statement() as conn:
            rows = conn.execute(_READ_EVENTS, {"agent": agent, "run_id": run_id, "after": after, "limit": limit}).all()
        return [StoredEvent(int(id_), name, json.loads(data)) for id_, name, data in rows]

    def close(self) -> None:
        if self._owns_engine:
            self.engine.dispose()


# --- what both paths write and read ----------------------------------------------------


def counter_params(agent: str, session_id: str, count: int) -> dict[str, Any]:
    """The values of the seq counter's upsert for an append of ``count`` messages."""
    return {"agent": agent, "session_id": session_id, "step": SEQ_STEP * count, "now": micros(utcnow())}


def place_messages(
    agent: str, session_id: str, messages: Sequence[Message], last_seq: int, now: datetime | None = None,
    seal: Callable[[Message], Message] | None = None,
) -> tuple[list[Message], list[dict[str, Any]]]:
    """The messages as written at ``now``, numbered up to ``last_seq``, and their rows (of each sealed, with ``seal``)."""
    now = now or utcnow()
    first = last_seq - SEQ_STEP * (len(messages) - 1)
    written = [m.placed(agent=agent, session_id=session_id, seq=first + SEQ_STEP * i, created_at=now) for i, m in enumerate(messages)]
    now_us = micros(now)  # once: converting a time costs more than the rest of a row
    return written, [message_row(m, now_us) for m in (written if seal is None else map(seal, written))]


# PostgreSQL's append, one statement whatever the number of messages: the counter's upsert a
# data-modifying CTE, the rows one array a column (unnest), so its text never changes and
# SQLAlchemy compiles it once; a statement built from the rows' values compiled anew each call.
# Bound, not prepared on the server (poolers). Seqs in ``seqs`` are relative to the counter's new value.
APPEND_COLUMNS = ("role", "content", "tool_calls", "tool_call_id", "name", "status", "run_id", "tokens", "metadata", "terms")
_ARRAY_TYPES = {"tokens": "INTEGER[]"}
APPEND_SQL = (
    "WITH counter AS ("
    "INSERT INTO omnisync_sessions (agent, session_id, last_seq, updated_at_us) VALUES (:agent, :session_id, :step, :now) "
    "ON CONFLICT (agent, session_id) DO UPDATE SET last_seq = omnisync_sessions.last_seq + excluded.last_seq, "
    "updated_at_us = excluded.updated_at_us RETURNING last_seq) "
    f"INSERT INTO omnisync_messages (agent, session_id, seq, {', '.join(APPEND_COLUMNS)}, created_at_us) "
    f"SELECT :agent, :session_id, counter.last_seq + given.seq, {', '.join('given.' + name for name in APPEND_COLUMNS)}, :now "
    "FROM counter, unnest(CAST(:seqs AS INTEGER[]), "
    + ", ".join(f"CAST(:{name} AS {_ARRAY_TYPES.get(name, 'TEXT[]')})" for name in APPEND_COLUMNS)
    + f") AS given(seq, {', '.join(APPEND_COLUMNS)}) RETURNING seq"
)
APPEND = sa.text(APPEND_SQL)
_COUNTER_VALUES = "INSERT INTO omnisync_sessions (agent, session_id, last_seq, updated_at_us) VALUES (:agent, :session_id, :step, :now) "
assert _COUNTER_VALUES in APPEND_SQL
APPEND_AND_SAVE_RUN = sa.text(
    "WITH fits AS (SELECT 1 FROM omnisync_runs WHERE agent = :key_agent AND run_id = :key_run_id AND version = :expected FOR UPDATE), "
    + APPEND_SQL.removeprefix("WITH ").replace(
        _COUNTER_VALUES,
        "INSERT INTO omnisync_sessions (agent, session_id, last_seq, updated_at_us) "
        "SELECT :agent, :session_id, CAST(:step AS INTEGER), CAST(:now AS BIGINT) FROM fits ",
    ).replace(
        " INSERT INTO omnisync_messages",
        ", saved AS (UPDATE omnisync_runs SET session_id = :v_session_id, kind = :v_kind, status = :v_status, "
        "version = :v_version, created_at = :v_created_at, finished_at = :v_finished_at, "
        "data = replace(CAST(:v_data AS TEXT), CAST(:marker AS TEXT), '\"first_written_seq\":' || CAST(counter.last_seq + CAST(:first AS INTEGER) AS TEXT)) "
        "FROM counter WHERE agent = :key_agent AND run_id = :key_run_id) INSERT INTO omnisync_messages",
        1,
    )
)
"""PostgreSQL: a run's last messages and its record in one statement, the append made only if
the record's compare-and-set matched (no row returned: it did not, and nothing was written)."""


def append_params(agent: str, session_id: str, rows: Sequence[dict[str, Any]], now_us: int) -> dict[str, Any]:
    """APPEND's values for ``rows`` (of :func:`message_row`, numbered relative to the counter)."""
    params: dict[str, Any] = {name: [row[name] for row in rows] for name in APPEND_COLUMNS}
    params.update(agent=agent, session_id=session_id, step=SEQ_STEP * len(rows), now=now_us, seqs=[row["seq"] for row in rows])
    return params


_e = schema.run_events.c
_EVENT_ATTEMPTS = 20
_LOCK_RUN_EVENTS = sa.text("SELECT pg_advisory_xact_lock(hashtext(:agent), hashtext(:run_id))")
_LAST_EVENT = sa.select(sa.func.max(_e.id)).where(_e.agent == sa.bindparam("agent"), _e.run_id == sa.bindparam("run_id"))
_READ_EVENTS = (
    sa.select(_e.id, _e.name, _e.data)
    .where(_e.agent == sa.bindparam("agent"), _e.run_id == sa.bindparam("run_id"), _e.id > sa.bindparam("after"))
    .order_by(_e.id)
    .limit(sa.bindparam("limit", type_=sa.Integer))
)


def _append_events_statement(agent: str, run_id: str, checked: Sequence[tuple[str, str]]) -> Any:
    """PostgreSQL: the events numbered after the run's highest id, inserted in one statement."""
    events = schema.run_events
    last = sa.select(sa.func.coalesce(sa.func.max(_e.id), 0).label("n")).where(_e.agent == agent, _e.run_id == run_id).subquery("last")
    given = sa.values(sa.column("i", sa.Integer), sa.column("name", sa.String), sa.column("data", sa.Text), name="given").data(
        [(i, name, data) for i, (name, data) in enumerate(checked, 1)]
    )
    placed = sa.select(sa.literal(agent, sa.String), sa.literal(run_id, sa.String), last.c.n + given.c.i, given.c.name, given.c.data).select_from(
        last.join(given, sa.true())
    )
    return events.insert().from_select(["agent", "run_id", "id", "name", "data"], placed).returning(events.c.id)


def _load_lease_statement(dialect: str) -> Any:
    lease, holder = schema.runs.alias("lease"), schema.runs.alias("holder")
    if dialect == "postgresql":
        owner: Any = sa.cast(lease.c.data, _postgresql.JSONB)["lease_owner"].astext
    else:
        owner = sa.func.json_extract(lease.c.data, "$.lease_owner")
    return (
        sa.select(lease.c.data, holder.c.data)
        .select_from(lease.outerjoin(holder, (holder.c.agent == lease.c.agent) & (holder.c.run_id == owner)))
        .where(lease.c.agent == sa.bindparam("agent"), lease.c.run_id == sa.bindparam("run_id"))
    )


def run_values(saved: RunRecord) -> dict[str, Any]:
    """A run record's column values, named as INSERT_RUN and UPDATE_RUN bind them."""
    return {
        "v_agent": saved.agent,
        "v_run_id": saved.run_id,
        "v_session_id": saved.session_id,
        "v_kind": saved.kind,
        "v_status": saved.status,
        "v_version": saved.version,
        "v_created_at": saved.created_at,
        "v_finished_at": saved.finished_at if saved.status in FINISHED_STATUSES else None,
        "v_data": saved.to_json(),
    }


def run_key(record: RunRecord, expected_version: int) -> dict[str, Any]:
    """UPDATE_RUN's WHERE values: the record, at the version the caller last saw."""
    return {"key_agent": record.agent, "key_run_id": record.run_id, "expected": expected_version}


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
        engine = sa.create_engine(parsed, connect_args=connect_args)
    except ImportError as exc:
        raise MissingDependencyError(
            f"The database driver for {parsed.drivername!r} is not installed ({exc}). "
            "For PostgreSQL install it with: pip install 'omnisync[postgres]'"
        ) from exc
    _ping_when_idle(engine)
    if postgres:
        call_deadline.bound_every_call(engine, timeout)
        postgres_pooling.connect_without_options_if_refused(engine)
    return engine


IDLE_BEFORE_PING = 10.0
"""Seconds a pooled connection may rest before its next checkout pings it first."""


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection's liveness only when it has rested, or when the server sent
    something while it rested: a connection used a moment ago is alive, and pinging it
    (``pool_pre_ping``) costs a round trip per statement. A server that ends a session (a
    restart, ``pg_terminate_backend``) says so or closes the socket, which is then readable:
    seeing that is a system call, no round trip. One the server dropped while it rested is
    replaced before use (SQLAlchemy retries a checkout that raises DisconnectionError with
    another connection)."""

    @event.listens_for(engine, "checkin")
    def _rested_since(_dbapi_connection: Any, record: Any) -> None:
        record.info["checked_in_at"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _ping_if_rested(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("checked_in_at")
        if since is None or (time.monotonic() - since <= IDLE_BEFORE_PING and not _said_something(dbapi_connection)):
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError(f"the pooled connection did not answer a ping: {exc}") from exc
        if not alive:  # SQLAlchemy before 2.0.something answers False rather than raising
            raise DisconnectionError("the pooled connection did not answer a ping")


def _said_something(dbapi_connection: Any) -> bool:
    """True if the server sent something to a connection that asked nothing (its goodbye)."""
    try:
        return bool(select.select([dbapi_connection.fileno()], [], [], 0)[0])
    except Exception:  # noqa: BLE001 - no socket to look at (the driver's "connection closed"): the ping decides
        return True


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


def prepare_sqlite_connection(dbapi_connection: Any, in_memory: bool) -> None:
    """Every SQLite connection of ours: we issue BEGIN ourselves, wait for a busy file, and share files in WAL mode."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    if not in_memory:
        _set_wal(cursor)
        cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def _set_wal(cursor: Any) -> None:
    """WAL mode, waited for: turning a new file to WAL needs the file to itself, and SQLite does
    not wait for that on its busy timeout, so two processes opening one new file at once could
    fail with "database is locked" (seen in CI, tests/runs/test_durable_runs.py)."""
    waited_until = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    pause = 0.01
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > waited_until:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.25)


def _configure_sqlite(engine: Engine) -> None:
    in_memory = isinstance(engine.pool, StaticPool)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        prepare_sqlite_connection(dbapi_connection, in_memory)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE)
        if write or write is None:  # None: not one of ours (create_all, a user's own statement)
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        # A read is a single SELECT, atomic without a transaction: no BEGIN/COMMIT round trips.


def _session_info(row: Sequence[Any]) -> SessionInfo:
    """A row of SESSIONS: agent, session_id, count, last write (µs)."""
    return SessionInfo(row[0], row[1], int(row[2]), from_micros(row[3]))


def _text(value: str) -> Any:
    """``value`` bound as a string, compared in the database's collation like the columns."""
    return sa.literal(value, sa.String)


def _session_key(agent: str, session_id: str) -> Any:
    return (schema.messages.c.agent == agent) & (schema.messages.c.session_id == session_id)


@contextmanager
def _store_errors(describe: Callable[[], str]) -> Iterator[None]:
    """SQLAlchemy's errors as StoreError naming the store (``describe()``, called only on failure: it renders the URL)."""
    try:
        yield
    except SQLAlchemyError as exc:
        where = describe()
        logger.debug("%s failed: %s", where, exc)
        cut_after = call_deadline.WATCHDOG.cut_here()
        if cut_after is not None:
            raise StoreError(f"{where} did not answer within timeout={cut_after:g} s (a hung server or a silent link)") from exc
        message = postgres_pooling.statement_pooling_error(where, exc) or f"{where} failed: {exc.__class__.__name__}: {exc}"
        raise StoreError(message) from exc


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
