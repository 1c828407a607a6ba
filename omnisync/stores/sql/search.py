"""The SQL store's full-text search, fork copy and undo: SQLite FTS5 and PostgreSQL ``tsvector``.

Both index ``omnisync_messages.terms``, the terms :func:`omnisync.search.keyed.stored_terms_text`
gives, written by the same INSERT as the message (so the index is never behind a write):

- SQLite: an FTS5 table over that column (external content, keyed by the messages' rowid),
  kept by triggers in the writing transaction; ranked by ``bm25()``. SQLite's ``VACUUM`` may
  renumber the rowids of a table with no INTEGER PRIMARY KEY: run ``omnisync reindex`` after one.
- PostgreSQL: a GIN index on ``to_tsvector('simple', terms)``, updated by the INSERT itself;
  matched with ``plainto_tsquery('simple', ...)`` (every term), ranked by ``ts_rank``.

A fork is one ``INSERT ... SELECT`` on the server plus the target's seq counter, one
transaction: no row travels to the client, O(n) in the rows copied inside the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ...messages import ACTIVE, INACTIVE, Message
from ...search.hits import Found
from ...search.keyed import SealedTerms, terms_to_index
from . import schema
from .rows import hit_message, micros, row_content

FTS_TABLE = "omnisync_messages_fts"
GIN_INDEX = "ix_omnisync_messages_terms"
REINDEX_PAGE = 1000

_SQLITE_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(terms, content='omnisync_messages', "
    "content_rowid='rowid', tokenize='unicode61 remove_diacritics 0')",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_insert AFTER INSERT ON omnisync_messages WHEN new.terms IS NOT NULL "
    f"BEGIN INSERT INTO {FTS_TABLE}(rowid, terms) VALUES (new.rowid, new.terms); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_delete AFTER DELETE ON omnisync_messages WHEN old.terms IS NOT NULL "
    f"BEGIN INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, terms) VALUES ('delete', old.rowid, old.terms); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_update AFTER UPDATE OF terms ON omnisync_messages BEGIN "
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, terms) SELECT 'delete', old.rowid, old.terms WHERE old.terms IS NOT NULL; "
    f"INSERT INTO {FTS_TABLE}(rowid, terms) SELECT new.rowid, new.terms WHERE new.terms IS NOT NULL; END",
)
_POSTGRES_DDL = (f"CREATE INDEX IF NOT EXISTS {GIN_INDEX} ON omnisync_messages USING gin (to_tsvector('simple'::regconfig, terms))",)

_COLUMNS = "m.session_id, m.seq, m.role, m.content, m.metadata, m.created_at_us"
_SQLITE_SEARCH = (
    f"SELECT {_COLUMNS}, -bm25({FTS_TABLE}) AS score FROM {FTS_TABLE} JOIN omnisync_messages m ON m.rowid = {FTS_TABLE}.rowid "
    f"WHERE {FTS_TABLE} MATCH :query AND m.agent = :agent AND m.status = 'active' {{filters}} "
    "ORDER BY score DESC, m.session_id, m.seq LIMIT :limit"
)
# The match is a CTE of its own, MATERIALIZED, so the planner always reads the GIN index first
# (with the agent's rows uncounted, it would walk the agent's window index and tokenize each row).
_POSTGRES_SEARCH = (
    "WITH matched AS MATERIALIZED (SELECT m.*, to_tsvector('simple'::regconfig, m.terms) AS tsv FROM omnisync_messages m "
    "WHERE to_tsvector('simple'::regconfig, m.terms) @@ plainto_tsquery('simple'::regconfig, :query)) "
    f"SELECT {_COLUMNS}, ts_rank(m.tsv, plainto_tsquery('simple'::regconfig, :query)) AS score FROM matched m "
    "WHERE m.agent = :agent AND m.status = 'active' {filters} "
    "ORDER BY score DESC, m.session_id, m.seq LIMIT :limit"
)
_COPY_COLUMNS = [c.name for c in schema.messages.columns if c.name != "session_id"]
_COPY = sa.text(
    f"INSERT INTO omnisync_messages (session_id, {', '.join(_COPY_COLUMNS)}) "
    f"SELECT :target, {', '.join(_COPY_COLUMNS)} FROM omnisync_messages "
    "WHERE agent = :agent AND session_id = :source AND seq <= :last_seq"
)
_m = schema.messages.c


def ensure_search_index(conn: Connection) -> None:
    """Create the index (and on SQLite its triggers) where it is missing; cheap when it is there."""
    for statement in _SQLITE_DDL if conn.dialect.name == "sqlite" else _POSTGRES_DDL:
        conn.execute(sa.text(statement))


def upgrade_messages_to_4(conn: Connection) -> None:
    """Schema 4: the ``terms`` column, its index, and the terms of every message already stored."""
    columns = {column["name"] for column in sa.inspect(conn).get_columns("omnisync_messages")}
    if "terms" not in columns:
        conn.execute(sa.text("ALTER TABLE omnisync_messages ADD COLUMN terms TEXT"))
    ensure_search_index(conn)
    reindex_rows(conn, None)


def reindex_rows(conn: Connection, agent: str | None, sealed_terms: SealedTerms | None = None) -> int:
    """Write the terms of every message of ``agent`` (None: all) again, a page at a time; return how many hold terms.

    A sealed message's are its keyed terms, given by ``sealed_terms`` (none without it). On
    SQLite a rebuild of every agent also rebuilds the FTS5 table from the column."""
    after: tuple[str, str, int] | None = None
    indexed = 0
    while True:
        query = sa.select(_m.agent, _m.session_id, _m.seq, _m.content, _m.metadata, _m.terms).order_by(_m.agent, _m.session_id, _m.seq).limit(REINDEX_PAGE)
        if agent is not None:
            query = query.where(_m.agent == agent)
        if after is not None:
            query = query.where(sa.tuple_(_m.agent, _m.session_id, _m.seq) > sa.tuple_(*after))
        rows = conn.execute(query).all()
        changed = []
        for row in rows:
            stored = Message("", row_content(row[3], row[4]), agent=row[0], session_id=row[1], seq=row[2])
            terms = " ".join(terms_to_index(stored, sealed_terms)) or None
            indexed += terms is not None
            if terms != row[5]:
                changed.append({"a": row[0], "s": row[1], "q": row[2], "terms": terms})
        if changed:
            conn.execute(
                schema.messages.update()
                .where(_m.agent == sa.bindparam("a"), _m.session_id == sa.bindparam("s"), _m.seq == sa.bindparam("q"))
                .values(terms=sa.bindparam("terms")),
                changed,
            )
        if len(rows) < REINDEX_PAGE:
            break
        after = (rows[-1][0], rows[-1][1], rows[-1][2])
    if agent is None and conn.dialect.name == "sqlite":
        conn.execute(sa.text(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')"))
    return indexed


def search_rows(
    conn: Connection,
    agent: str,
    terms: Sequence[str],
    session_id: str | None,
    limit: int,
    before: datetime | None,
    after: datetime | None,
) -> list[Found]:
    """The best ``limit`` active messages of ``agent`` holding every term, best first."""
    params: dict[str, Any] = {"agent": agent, "limit": limit}
    filters = []
    if session_id is not None:
        filters.append("AND m.session_id = :session_id")
        params["session_id"] = session_id
    if before is not None:
        filters.append("AND m.created_at_us < :before")
        params["before"] = micros(before)
    if after is not None:
        filters.append("AND m.created_at_us > :after")
        params["after"] = micros(after)
    if conn.dialect.name == "sqlite":
        params["query"] = " ".join('"' + term.replace('"', '""') + '"' for term in terms)
        statement = _SQLITE_SEARCH
    else:
        params["query"] = " ".join(terms)
        statement = _POSTGRES_SEARCH
    rows = conn.execute(sa.text(statement.replace("{filters}", " ".join(filters))), params).all()
    return [Found(float(row[6]), hit_message(agent, row)) for row in rows]


def copy_rows(conn: Connection, agent: str, source: str, target: str, last_seq: int) -> int:
    """The source's rows up to ``last_seq`` inserted as the target's, and the target's counter moved past them."""
    copied = int(conn.execute(_COPY, {"agent": agent, "source": source, "target": target, "last_seq": last_seq}).rowcount)
    if copied:
        top = conn.execute(sa.select(sa.func.max(_m.seq)).where(_m.agent == agent, _m.session_id == target)).scalar_one()
        even = int(top) // 2 * 2
        counters = schema.sessions
        key = (counters.c.agent == agent) & (counters.c.session_id == target)
        now = micros(datetime.now(timezone.utc))
        if conn.execute(counters.update().where(key).values(last_seq=sa.func.max(counters.c.last_seq, even) if conn.dialect.name == "sqlite" else sa.func.greatest(counters.c.last_seq, even), updated_at_us=now)).rowcount == 0:
            conn.execute(counters.insert().values(agent=agent, session_id=target, last_seq=even, updated_at_us=now))
    return copied


def deactivate_rows(conn: Connection, agent: str, session_id: str, first_seq: int, last_seq: int) -> int:
    """Mark the active rows in the range inactive; return how many."""
    in_range = (_m.agent == agent) & (_m.session_id == session_id) & (_m.status == ACTIVE) & (_m.seq >= first_seq) & (_m.seq <= last_seq)
    return int(conn.execute(schema.messages.update().where(in_range).values(status=INACTIVE)).rowcount)
