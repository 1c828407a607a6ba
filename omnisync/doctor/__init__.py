"""``omnisync doctor``: look at a deployment from its URL and say what to fix.

Reads only: nothing is created, no table, key, file or index. One module per kind of server
(``on_sql`` choosing ``on_sqlite`` or ``on_postgres`` with ``pooler``, ``on_redis``,
``on_mongodb``), named by the kind's registry entry; the measures and thresholds every kind
shares are in ``measure``.
"""

from __future__ import annotations

from ..errors import MissingDependencyError
from ..redact import redact_url
from ..store_urls import check_url
from ..stores.registry import KINDS, NETWORKED, load
from .report import FAIL, OK, WARN, Check, Report

__all__ = ["FAIL", "OK", "WARN", "Check", "Report", "diagnose"]


def diagnose(kind: str, url: str, timeout: float) -> Report:
    """The checks of the store of ``kind`` at ``url``; a connection is given up after ``timeout`` seconds."""
    report = Report(kind, redact_url(url))
    checks = KINDS[kind].doctor if kind in KINDS else None
    if checks is None:
        kinds = ", ".join(NETWORKED)
        report.add("reachable", FAIL, f"the {kind} store lives inside one process: there is nothing to check", f"give the URL of a {kinds} store")
        return report
    check_url(kind, url)  # a ConfigurationError names the right form (exit 2)
    try:
        load(checks)(report, url, timeout)
    except MissingDependencyError as exc:
        report.add("reachable", FAIL, str(exc).split(". Install")[0], str(exc).split("Install it with: ")[-1])
    return report
