"""PostgreSQL, directly or through a pooler: the connection, schema, what sits in between, version, latency, clock."""

from __future__ import annotations

import socket
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from .measure import clock_offset_s, judge_clock, judge_latency, judge_version
from .pooler import judge_pooler, judge_statement_pooler
from .reach import explain
from .report import FAIL, OK, Report
from .schema import judge_sql_schema

ROUND_TRIPS_PER_RUN = 6
"""About what one ``run()`` of one model call sends to the store (SQLAlchemy's statement events): tests/stores/test_round_trips.py holds it."""

POSTGRES_FLOOR = (10,)
POSTGRES_NEEDS = "psycopg 3's oldest; the statements alone need 9.5, for INSERT ... ON CONFLICT ... RETURNING"


def check_postgres(report: Report, url: str, timeout: float) -> None:
    from ..stores.sql.store import create_engine

    parsed = sa.engine.make_url(url)
    where = f"{parsed.host or 'the local socket'}:{parsed.port or 5432}"
    engine = create_engine(url, connect_timeout=timeout, timeout=timeout)
    try:
        try:
            conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        except SQLAlchemyError as exc:
            if judge_statement_pooler(report, exc, where, parsed, timeout):
                return
            happened, fix = explain(getattr(exc, "orig", None) or exc, where, timeout, (parsed.password,))
            report.add("reachable", FAIL, happened, fix)
            return
        with conn:
            user, database = conn.exec_driver_sql("SELECT current_user, current_database()").one()
            report.add("reachable", OK, f"connected to database {database!r} at {where} as {user!r}")
            judge_sql_schema(report, conn, f"database {database!r}")
            if _in_between(conn, parsed):
                judge_pooler(report, engine, conn, parsed, timeout)
            else:
                report.add("topology", OK, f"a direct connection: the server answers on {where} itself, no pooler in between")
            _judge_standby(report, conn)
            version = str(conn.exec_driver_sql("SHOW server_version").scalar())
            judge_version(report, "PostgreSQL", version, POSTGRES_FLOOR, POSTGRES_NEEDS, "15")
            judge_latency(report, ROUND_TRIPS_PER_RUN, lambda: conn.exec_driver_sql("SELECT 1").scalar())
            judge_clock(report, {"server": clock_offset_s(lambda: conn.exec_driver_sql("SELECT clock_timestamp()").scalar_one())})
    finally:
        engine.dispose()


def _in_between(conn: Any, url: "sa.engine.URL") -> bool:
    """Whether something else answers for the server: the server sees another port or address than
    the URL names (a pooler, a proxy or a port mapping)."""
    if not url.host or url.host.startswith("/"):
        return False  # a Unix socket: nothing to compare
    address, port = conn.exec_driver_sql("SELECT host(inet_server_addr()), inet_server_port()").one()
    if port != (url.port or 5432):
        return True
    try:
        ours = {info[4][0] for info in socket.getaddrinfo(url.host, None)}
    except OSError:
        return False
    return address not in ours


def _judge_standby(report: Report, conn: Any) -> None:
    if conn.exec_driver_sql("SELECT pg_is_in_recovery()").scalar():
        report.add("standby", FAIL, "the server is a read-only standby (pg_is_in_recovery() is true): every run writes", "point the URL at the primary")
