"""A SQL URL: a SQLite file (``on_sqlite``) or a PostgreSQL server (``on_postgres``)."""

from __future__ import annotations

from .report import Report


def check_sql(report: Report, url: str, timeout: float) -> None:
    import sqlalchemy as sa

    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        from .on_sqlite import check_sqlite

        check_sqlite(report, parsed)
    else:
        from .on_postgres import check_postgres

        check_postgres(report, url, timeout)
