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

SCHEMA_VERSION = 2
"""1: sessions, messages, runs. 2: run_events (added to a version 1 database when it is opened)."""

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
    PrimaryKeyConstraint("agent", "session_id", "seq"),
    Index("ix_omnisync_messages_window", "agent", "session_id", "status", "seq"),
)

runs: Table = Table(
    "omnisync_runs",
    metadata,
    Column("agent", String(255), nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("status", String(32), nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("data", Text, nullable=False),
    PrimaryKeyConstraint("agent", "run_id"),
    Index("ix_omnisync_runs_status", "agent", "status", "created_at"),
    Index("ix_omnisync_runs_finished", "agent", "finished_at"),
)

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
