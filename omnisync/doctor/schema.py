"""The SQL schema version a database holds, judged against this omnisync's (SQLite and PostgreSQL alike)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ..stores.sql import schema as sql_schema
from .report import FAIL, OK, WARN, Report


def judge_sql_schema(report: Report, conn: Any, where: str) -> None:
    """``conn``: a SQLAlchemy connection. Reads only: nothing is created."""
    ours = sql_schema.SCHEMA_VERSION
    tables = set(sa.inspect(conn).get_table_names())
    if sql_schema.schema_info.name not in tables:
        others = sorted(name for name in tables if not name.startswith("omnisync_"))
        if not others:
            report.add("schema", OK, f"no omnisync tables yet: {where} is empty, and the first store opened on it creates version {ours}")
            return
        shown = ", ".join(others[:5]) + (", …" if len(others) > 5 else "")
        report.add(
            "schema",
            WARN,
            f"not an omnisync store: {where} holds {len(others)} other table(s) ({shown}) and none of omnisync's",
            "if this is the wrong database, correct the URL; if it is right, the first store opened on it adds omnisync's tables beside these",
        )
        return
    version = conn.execute(sa.select(sql_schema.schema_info.c.version)).scalar()
    if version is None:
        report.add("schema", OK, f"omnisync's tables with no version row yet: the first store opened on it writes version {ours}")
    elif version > ours:
        report.add(
            "schema",
            FAIL,
            f"schema version {version} is newer than this omnisync understands ({ours}): a newer release wrote this store",
            "upgrade omnisync (pip install -U omnisync) on every machine that uses this store",
        )
    elif version < ours:
        report.add("schema", WARN, f"schema version {version} is older than this omnisync's ({ours}): it will be upgraded when a store is opened on it", "back the database up first")
    else:
        report.add("schema", OK, f"schema version {version}, this omnisync's")
