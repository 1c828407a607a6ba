"""What answers between us and PostgreSQL: PgBouncer or another proxy, and whether its pooling mode suits omnisync.

Three probes, none of which changes anything:

- PgBouncer's admin console (database ``pgbouncer``) tells PgBouncer apart: it answers "not
  allowed" to a user who is not one of its admin or stats users, and ``SHOW CONFIG`` to one who is.
  PostgreSQL itself would say the database does not exist.
- A transaction of two statements: statement pooling refuses it, and omnisync needs it. With
  psycopg a statement pooler refuses the connection already (SQLAlchemy's set-up of a new
  connection is a transaction of several statements): :func:`judge_statement_pooler` then
  reports the login as reachable and the pooler as the failure, with its fix.
- Two client connections, one after the other while the first stays open: in transaction
  pooling the second is handed the server connection the first just gave back (the same
  ``pg_backend_pid()``), which session pooling never does.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from ..stores.sql.pooling import STATEMENT_POOLING_FIX, STATEMENT_POOLING_WHY, statement_pooling_refusal
from .report import FAIL, OK, WARN, Report

_TIMEOUT_FIX = "ALTER ROLE {user} SET statement_timeout = '30s' (the pooler's server connections take it), or set query_timeout in pgbouncer.ini"


def judge_pooler(report: Report, engine: Any, conn: Any, url: "sa.engine.URL", timeout: float) -> None:
    name, mode = _admin_console(url, timeout)
    refused = _refuses_transactions(engine)
    if refused:
        _statement_pooling(report, name, refused)
        return
    if mode is None:
        shared = _shares_server_connections(engine, conn)
        mode = "transaction" if shared else "session"
        seen = "two clients in turn were served by one server connection" if shared else "two clients in turn were served by two server connections; transaction pooling may do that too"
    else:
        seen = "from its SHOW CONFIG"
    if mode == "statement":
        _statement_pooling(report, name, "its SHOW CONFIG says pool_mode = statement")
        return
    who = name or "a proxy or port mapping (not PgBouncer: its admin console did not answer)"
    report.add(
        "topology",
        OK,
        f"{who}, pooling mode {mode} ({seen}): supported; omnisync prepares no server-side statements and takes only transaction-scoped locks",
    )
    setting = str(conn.exec_driver_sql("SHOW statement_timeout").scalar())
    if name and setting in ("0", "0ms"):
        user = url.username or "the_user"
        report.add(
            "timeout",
            WARN,
            "no statement_timeout on the server connections: behind a pooler omnisync's own bound is not set, so a hung statement holds its run until the link drops",
            _TIMEOUT_FIX.format(user=user),
        )


def judge_statement_pooler(report: Report, exc: BaseException, where: str, url: "sa.engine.URL", timeout: float) -> bool:
    """Whether the connection failed because a statement pooler refused it (then reported), or for another reason."""
    refused = statement_pooling_refusal(exc)
    if refused is None:
        return False
    report.add("reachable", OK, f"logged in at {where}; what answers there refuses transactions (below), so nothing else can be checked")
    _statement_pooling(report, _admin_console(url, timeout)[0], refused)
    return True


def _statement_pooling(report: Report, name: str | None, seen: str) -> None:
    report.add("topology", FAIL, f"{name or 'a pooler'} in statement pooling mode ({seen}): {STATEMENT_POOLING_WHY}", STATEMENT_POOLING_FIX)


def _admin_console(url: "sa.engine.URL", timeout: float) -> tuple[str | None, str | None]:
    """("PgBouncer <version>" or "PgBouncer", its pool_mode if readable), or (None, None) when no admin console answers."""
    try:
        import psycopg
    except ImportError:
        return None, None
    try:
        admin = psycopg.connect(
            host=url.host, port=url.port or 5432, user=url.username, password=url.password, dbname="pgbouncer",
            connect_timeout=max(1, round(timeout)), autocommit=True, prepare_threshold=None,
        )
    except psycopg.Error as exc:
        return ("PgBouncer", None) if "not allowed" in str(exc) else (None, None)
    try:
        with admin:
            config = {str(row[0]): str(row[1]) for row in admin.execute("SHOW CONFIG").fetchall()}
            version = admin.execute("SHOW VERSION").fetchone()
    except psycopg.Error:
        return None, None  # a real database named pgbouncer
    name = str(version[0]) if version else "PgBouncer"
    return name, config.get("pool_mode")


def _refuses_transactions(engine: Any) -> str | None:
    """The pooler's words if it refuses a transaction of two statements, else None."""
    try:
        with engine.connect() as conn, conn.begin():
            conn.exec_driver_sql("SELECT 1")
            conn.exec_driver_sql("SELECT 1")
    except SQLAlchemyError as exc:
        words = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return words if "pool" in words.lower() or "transaction" in words.lower() else None
    return None


def _shares_server_connections(engine: Any, conn: Any, tries: int = 3) -> bool:
    for _ in range(tries):
        first = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        with engine.connect() as other:
            if other.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("SELECT pg_backend_pid()").scalar() == first:
                return True
    return False
