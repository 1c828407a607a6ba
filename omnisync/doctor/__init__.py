"""``omnisync doctor``: look at a deployment from its URL and say what to fix.

Reads only: nothing is created, no table, key, file or index. One module per kind of server
(``on_sqlite``, ``on_postgres`` with ``pooler``, ``on_redis``, ``on_mongodb``); the measures
and thresholds every kind shares are in ``measure``.
"""

from __future__ import annotations

from ..errors import MissingDependencyError
from ..redact import redact_url
from .report import FAIL, OK, WARN, Check, Report

__all__ = ["FAIL", "OK", "WARN", "Check", "Report", "diagnose"]


def diagnose(kind: str, url: str, timeout: float) -> Report:
    """The checks of the store of ``kind`` at ``url``; a connection is given up after ``timeout`` seconds."""
    report = Report(kind, redact_url(url))
    try:
        if kind == "sql":
            _sql(report, url, timeout)
        elif kind == "redis":
            from .on_redis import check_redis

            check_redis(report, url, timeout)
        elif kind == "mongodb":
            from .on_mongodb import check_mongodb

            check_mongodb(report, url, timeout)
        else:
            report.add("reachable", FAIL, f"the {kind} store lives inside one process: there is nothing to check", "give a sqlite, postgresql, redis or mongodb URL")
    except MissingDependencyError as exc:
        report.add("reachable", FAIL, str(exc).split(". Install")[0], str(exc).split("Install it with: ")[-1])
    return report


def _sql(report: Report, url: str, timeout: float) -> None:
    from ..store_urls import check_url

    check_url("sql", url)  # a ConfigurationError names the right form (exit 2)
    import sqlalchemy as sa

    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        from .on_sqlite import check_sqlite

        check_sqlite(report, parsed)
    else:
        from .on_postgres import check_postgres

        check_postgres(report, url, timeout)
