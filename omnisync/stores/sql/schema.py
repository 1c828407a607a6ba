"""The SQL store's tables, and the schema version that lets later releases migrate them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

from ...run_record import RUN

SCHEMA_VERSION = 4
"""1: sessions, messages, runs. 2: run_events. 3: runs.kind, and the indexes pages of runs
read by (:func:`omnisync.stores.sql.migrations.upgrade_runs_to_3`). 4: messages.terms and its full-text
index (:func:`omnisync.stores.sql.search.upgrade_messages_to_4`). An older database is upgraded when opened, by ``migrations.py``."""

metadata: MetaData = MetaData()

schema_info: Table = Table(
    "omnisync_schema",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
)

# One row per (agent, session): the last seq handed out. Appends lock this row, so seq
# assignment is serialized per session inside the write transaction.
sessions: Table = Table(
    "omnisync_sessions",
    metadata,
    Column("agent", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("last_seq", Integer, nullable=False),
    Column("updated_at_us", BigInteger, nullable=False),
    PrimaryKeyConstraint("agent", "session_id"),
)

# Hot columns are plain types on purpose: a window load decodes no JSON for a message without
# tool calls or metadata (they are NULL), and times are integer microseconds since the epoch,
# which every database reads without parsing.
messages: Table = Table(
    "omnisync_messages",
    metadata,
    Column("agent", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("role", String(32), nullable=False),
    Column("content", Text),
    Column("tool_calls", Text),  # JSON text, NULL when there are none
    Column("tool_call_id", String(255)),
    Column("name", String(255)),
    Column("status", String(16), nullable=False),
    Column("run_id", String(64)),
    Column("tokens", Integer, nullable=False),
    Column("created_at_us", BigInteger, nullable=False),
    Column("metadata", Text),  # JSON text, NULL when empty
    Column("terms", Text),  # the search index's terms (omnisync.search.terms), NULL when none
    PrimaryKeyConstraint("agent", "session_id", "seq"),
    Index("ix_omnisync_messages_window", "agent", "session_id", "status", "seq"),
)

runs: Table = Table(
    "omnisync_runs",
    metadata,
    Column("agent", String(255), nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("kind", String(16), nullable=False, server_default=RUN),
    Column("status", String(32), nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("data", Text, nullable=False),
    PrimaryKeyConstraint("agent", "run_id"),
    # One per way a page of runs is asked for: all, of one status, of one session.
    Index("ix_omnisync_runs_page", "agent", "kind", "created_at", "run_id"),
    Index("ix_omnisync_runs_by_status", "agent", "kind", "status", "created_at", "run_id"),
    Index("ix_omnisync_runs_by_session", "agent", "session_id", "kind", "created_at", "run_id"),
    Index("ix_omnisync_runs_finished", "agent", "finished_at"),
)
RUNS_INDEXES_BEFORE_3 = ("ix_omnisync_runs_status",)

# A run's events (the server's SSE stream, text deltas coalesced), deleted with the run.
# The id is the run's max + 1 inside the insert; the primary key refuses a second writer
# that took the same ids, and that writer tries again (SQLStore.append_events).
run_events: Table = Table(
    "omnisync_run_events",
    metadata,
    Column("agent", String(255), nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("id", Integer, nullable=False),
    Column("name", String(64), nullable=False),
    Column("data", Text, nullable=False),
    PrimaryKeyConstraint("agent", "run_id", "id"),
)
