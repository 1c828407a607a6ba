"""PostgreSQL through a connection pooler in transaction mode (PgBouncer, pgcat, Supavisor, RDS Proxy).

Such a pooler hands each transaction whichever server connection is free, so nothing that
lives in a server session survives from one transaction to the next. For the SQL store:

- No server-side prepared statements, ever: psycopg 3 prepares a statement on the fifth use
  by default, and behind a pooler the next transaction lands where it was never prepared
  (``prepared statement "_pg3_0" does not exist``). A pooler cannot be told apart from a
  server reliably, so they are off on every engine the store makes. Measured on loopback
  PostgreSQL 15, psycopg 3.3, 30 rounds of 200 window loads each: 400 µs a load with
  prepares at best, 596 µs without (medians 804 and 1,011 µs on a busy 2-core machine).
  Who connects to PostgreSQL directly and wants them back passes
  ``SQLStore(engine=sqlalchemy.create_engine(url))``.
- The statement timeout rides in the ``options`` startup parameter, which PgBouncer before
  1.20 refuses (``unsupported startup parameter: options``). The engine then connects
  without it, once logged as a warning: set the bound on the server side instead
  (``ALTER ROLE ... SET statement_timeout = '30s'``, which the pooler's server connections
  inherit) or as the pooler's ``query_timeout``.
- Schema creation is serialized by ``pg_advisory_xact_lock`` inside its own transaction
  (see ``SQLStore._ensure_schema``): a transaction-scoped lock, the only kind a
  transaction pooler keeps, so several processes can create the tables at once.

A pooler in statement pooling mode is not supported: it refuses any transaction of more
than one statement, and the store needs some (even SQLAlchemy's set-up of a new connection
is one). Its refusal is turned into an error that says so and what to change
(:func:`statement_pooling_refusal`), for the store and ``omnisync doctor`` alike.
"""

from __future__ import annotations

from typing import Any

from ..._logging import logger

from sqlalchemy import event  # imported by sql.py only, after it has named a missing extra
from sqlalchemy.engine import URL, Engine

_REFUSED = "unsupported startup parameter: options"
_STATEMENT_POOLING = "statement pooling mode"  # PgBouncer: "transaction blocks not allowed in statement pooling mode"

STATEMENT_POOLING_WHY = (
    "statement pooling ends every transaction after one statement, and omnisync needs transactions of several "
    "(a new connection's set-up, the schema's creation, a summary that replaces the messages it folds)"
)
STATEMENT_POOLING_FIX = (
    "set pool_mode = transaction in pgbouncer.ini (in [pgbouncer], or per database: mydb = ... pool_mode=transaction) "
    "and reload PgBouncer"
)


def statement_pooling_refusal(exc: BaseException) -> str | None:
    """The pooler's words when ``exc`` (the driver's error, or SQLAlchemy's around it) is a pooler in
    statement pooling mode refusing a transaction, else None."""
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return lines[0] if lines and _STATEMENT_POOLING in lines[0] else None


def statement_pooling_error(where: str, exc: BaseException) -> str | None:
    """What to tell a user whose ``where`` (a store, a URL) met a statement pooler, else None.
    The fix comes before the pooler's words: the command line shows an error's first 300 characters."""
    refused = statement_pooling_refusal(exc)
    if refused is None:
        return None
    return f"{where} is behind a pooler in statement pooling mode: {STATEMENT_POOLING_FIX}; omnisync needs transactions of several statements ({refused})"


def connect_args(url: "URL") -> dict[str, Any]:
    """What every connection of ours to PostgreSQL is opened with, besides the waits."""
    return {"prepare_threshold": None} if url.drivername == "postgresql+psycopg" else {}


def connect_without_options_if_refused(engine: "Engine") -> None:
    """Connect without the ``options`` startup parameter once a pooler has refused it."""
    refused = False

    @event.listens_for(engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
        nonlocal refused
        if refused:
            cparams.pop("options", None)
            return dialect.connect(*cargs, **cparams)
        try:
            return dialect.connect(*cargs, **cparams)
        except dialect.loaded_dbapi.OperationalError as exc:
            if _REFUSED not in str(exc) or "options" not in cparams:
                raise
        refused = True
        logger.warning(
            "%s refused the options startup parameter (a connection pooler such as PgBouncer): "
            "connecting without it, so statement_timeout is not set by omnisync; set it on the "
            "database role (ALTER ROLE ... SET statement_timeout) or as the pooler's query_timeout",
            engine.url.render_as_string(hide_password=True),
        )
        cparams.pop("options")
        return dialect.connect(*cargs, **cparams)
