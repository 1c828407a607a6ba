"""The SQL schema's upgrades, beside the schema they upgrade (``schema.py``): each step takes a
database from one version to the next inside the opening transaction."""

from __future__ import annotations

import json
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..._logging import logger
from ...errors import StoreError
from ...run_record import RUN
from . import schema, search


def bring_up_to_date(conn: Connection, where: str) -> None:
    """Create what is missing and upgrade an older database to :data:`schema.SCHEMA_VERSION`;
    refuse a newer one. Inside the caller's write transaction."""
    schema.metadata.create_all(conn)
    version = conn.execute(sa.select(schema.schema_info.c.version)).scalar()
    if version is None or version >= 4:
        search.ensure_search_index(conn)
    if version is None:
        conn.execute(schema.schema_info.insert().values(id=1, version=schema.SCHEMA_VERSION))
    elif version > schema.SCHEMA_VERSION:
        raise StoreError(
            f"{where} holds schema version {version}, newer than this omnisync "
            f"understands ({schema.SCHEMA_VERSION}): upgrade omnisync."
        )
    elif version < schema.SCHEMA_VERSION:  # create_all above added the tables it lacked
        for step_to, step in STEPS:
            if version < step_to:
                step(conn)
        conn.execute(schema.schema_info.update().values(version=schema.SCHEMA_VERSION))
        logger.info("%s: schema upgraded from version %s to %s", where, version, schema.SCHEMA_VERSION)


def upgrade_runs_to_3(conn: Connection) -> None:
    """Schema 2 (or 1) to 3: each run row gains ``kind``, as its record's JSON says, and the
    indexes that pages of runs read in order replace the one of schema 2. Inside the caller's transaction."""
    table = schema.runs
    conn.execute(sa.text(f"ALTER TABLE {table.name} ADD COLUMN kind VARCHAR(16) DEFAULT '{RUN}' NOT NULL"))
    # A run's compact JSON holds this text; what lacks it is a lease, a claim, or a record
    # written before records carried their kind, which its JSON then settles.
    maybe_not_runs = sa.select(table.c.agent, table.c.run_id, table.c.data).where(table.c.data.not_like(f'%"kind":"{RUN}"%'))
    kinds = [
        {"key_agent": agent, "key_run_id": run_id, "kind": kind}
        for agent, run_id, data in conn.execute(maybe_not_runs)
        if (kind := json.loads(data).get("kind", RUN)) != RUN
    ]
    if kinds:
        conn.execute(
            table.update().where(table.c.agent == sa.bindparam("key_agent"), table.c.run_id == sa.bindparam("key_run_id")).values(kind=sa.bindparam("kind")),
            kinds,
        )
    for name in schema.RUNS_INDEXES_BEFORE_3:
        conn.execute(sa.text(f"DROP INDEX IF EXISTS {name}"))
    for index in table.indexes:
        index.create(conn, checkfirst=True)


STEPS: tuple[tuple[int, Callable[[Connection], None]], ...] = (
    (3, upgrade_runs_to_3),
    (4, search.upgrade_messages_to_4),
)
"""Each step and the version it brings a database to, in order (version 2's table is made by
``create_all``)."""
