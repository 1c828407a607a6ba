"""A SQLite file: there (or creatable), a database, writable, its schema, and the sqlite3 library's version."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa

from .measure import judge_version
from .report import FAIL, OK, WARN, Report
from .schema import judge_sql_schema

SQLITE_FLOOR = (3, 35)
SQLITE_NEEDS = "RETURNING, with which one statement hands out message numbers"


def check_sqlite(report: Report, url: "sa.engine.URL") -> None:
    database = url.database or ""
    if database in ("", ":memory:") or url.query.get("mode") == "memory":
        report.add("reachable", FAIL, "an in-memory SQLite database lives inside one process: no other process, and no doctor, can see it", "use a file: sqlite:///./memory.db")
        return
    path = Path(database).expanduser().resolve()
    if not path.exists():
        _missing(report, path)
        return
    try:
        connection = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        report.add("reachable", FAIL, f"cannot open {path}: {exc}", "check the file's permissions")
        return
    try:
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            report.add("reachable", FAIL, f"{path} is not a SQLite database ({exc})", "correct the path in the URL: it names some other file")
            return
        _reachable(report, path)
        engine = sa.create_engine("sqlite://", creator=lambda: connection)
        with engine.connect() as conn:
            judge_sql_schema(report, conn, str(path))
    finally:
        connection.close()
    judge_version(report, "SQLite library", sqlite3.sqlite_version, SQLITE_FLOOR, SQLITE_NEEDS, "3.40")


def _missing(report: Report, path: Path) -> None:
    folder = path.parent
    if not folder.is_dir():
        report.add("reachable", FAIL, f"no folder {folder}: SQLite cannot create {path.name} there", "create the folder, or correct the path in the URL (sqlite:///relative or sqlite:////absolute)")
    elif not os.access(folder, os.W_OK):
        report.add("reachable", FAIL, f"no file {path}, and {folder} is not writable, so it cannot be created", "correct the path, or let this user write to the folder")
    else:
        report.add(
            "reachable",
            WARN,
            f"no file {path} yet: the first store opened on it creates it",
            "if you expected data there, correct the path (a relative sqlite:/// path starts at the working directory)",
        )


def _reachable(report: Report, path: Path) -> None:
    for place in (path, path.parent):  # WAL mode keeps -wal and -shm files beside the database
        if not os.access(place, os.W_OK):
            report.add("reachable", FAIL, f"{place} is not writable: every run writes", "let this user write to the file and its folder (chown or chmod)")
            return
    report.add("reachable", OK, f"{path}, a SQLite database ({path.stat().st_size:,} bytes)")
