"""``omnisync doctor`` against the real services, run as users run it (a subprocess).

Every check here reads only; the SQLite files are the test's own, the servers are the shared ones.
"""

from __future__ import annotations

from contextlib import closing
import json
import socket
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from helpers import backends
from omnisync.doctor import FAIL, OK, WARN, Report
from omnisync.doctor.measure import judge_clock, judge_latency, judge_version
from omnisync.stores.sql import schema as sql_schema
from omnisync.stores.sql.store import SQLStore
from helpers.cli_run import assert_one_line_failure, cli, environment

PASSWORD = "s3cr3t-doctor-pw"


def doctor(url: str, *options: str) -> tuple[int, dict[str, tuple[str, str]], str]:
    """(exit status, {check: (status, its whole line)}, stdout+stderr) of ``omnisync doctor --url URL``."""
    result = cli("doctor", "--url", url, *options, env=environment())
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines and lines[0].startswith("omnisync doctor: "), result
    checks = {}
    for line in lines[1:]:
        status, name = line.split()[:2]
        checks[name] = (status, line)
    return result.returncode, checks, result.stdout + result.stderr


def statuses(checks: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {name: status for name, (status, _) in checks.items()}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def with_password(url: str) -> str:
    import sqlalchemy as sa

    return sa.engine.make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


# --- SQLite -------------------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    SQLStore(f"sqlite:///{path}").close()
    return path


def test_a_sqlite_store_of_this_version_is_ok(sqlite_store):
    status, checks, _ = doctor(f"sqlite:///{sqlite_store}")
    assert status == 0
    assert statuses(checks) == {"reachable": "ok", "schema": "ok", "server": "ok"}
    assert f"schema version {sql_schema.SCHEMA_VERSION}, this omnisync's" in checks["schema"][1]


def test_a_sqlite_store_with_a_newer_schema_fails_and_says_upgrade(sqlite_store):
    with closing(sqlite3.connect(sqlite_store)) as conn, conn:
        conn.execute("UPDATE omnisync_schema SET version = ?", (sql_schema.SCHEMA_VERSION + 1,))
    status, checks, _ = doctor(f"sqlite:///{sqlite_store}")
    assert status == 1
    assert checks["schema"][0] == "FAIL"
    assert f"schema version {sql_schema.SCHEMA_VERSION + 1} is newer" in checks["schema"][1]
    assert "fix: upgrade omnisync" in checks["schema"][1]


def test_a_sqlite_file_of_another_application_is_named_and_left_as_it_was(tmp_path):
    path = tmp_path / "invoices.db"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
        conn.execute("CREATE TABLE customers (id INTEGER)")
    status, checks, _ = doctor(f"sqlite:///{path}")
    assert status == 0  # a warning: omnisync could add its tables, but this is probably the wrong file
    assert checks["schema"][0] == "warn"
    assert "not an omnisync store" in checks["schema"][1] and "customers, invoices" in checks["schema"][1]
    with closing(sqlite3.connect(path)) as conn, conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"invoices", "customers"}


def test_a_file_that_is_not_a_database_fails(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("not a database, but long enough to have a header of some sort\n" * 10)
    status, checks, _ = doctor(f"sqlite:///{path}")
    assert status == 1
    assert checks["reachable"][0] == "FAIL" and "is not a SQLite database" in checks["reachable"][1]
    assert list(checks) == ["reachable"]


def test_a_missing_sqlite_file_is_not_created(tmp_path):
    path = tmp_path / "typo.db"
    status, checks, _ = doctor(f"sqlite:///{path}")
    assert status == 0 and checks["reachable"][0] == "warn"
    assert not path.exists()
    status, checks, _ = doctor(f"sqlite:///{tmp_path / 'no-such-folder' / 'memory.db'}")
    assert status == 1 and "no folder" in checks["reachable"][1]


# --- PostgreSQL, directly and through PgBouncer ---------------------------------------


@pytest.mark.backend("postgres")
def test_postgresql_direct_is_ok():
    with backends.fresh_database(backends.postgres_url()) as url:
        status, checks, _ = doctor(url)
        assert status == 0, checks
        assert "no omnisync tables yet" in checks["schema"][1]
        SQLStore(url).close()
        status, checks, output = doctor(url)
    assert status == 0, checks
    assert set(statuses(checks)) == {"reachable", "schema", "topology", "server", "latency", "clock"}
    assert statuses(checks)["server"] == "ok" and "PostgreSQL" in checks["server"][1]
    assert "a direct connection" in checks["topology"][1]
    assert f"schema version {sql_schema.SCHEMA_VERSION}, this omnisync's" in checks["schema"][1]
    assert "a run makes about 6" in checks["latency"][1]
    assert ":***@" in output


@pytest.mark.backend("pgbouncer")
def test_pgbouncer_is_detected_and_its_mode_judged():
    status, checks, _ = doctor(backends.pgbouncer_url())
    assert status == 0, checks
    assert checks["topology"][0] == "ok"
    assert "PgBouncer" in checks["topology"][1] and "pooling mode" in checks["topology"][1]
    assert checks["reachable"][0] == checks["server"][0] == "ok"


@pytest.mark.backend("pgbouncer")
def test_pgbouncer_in_statement_pooling_mode_fails_with_the_fix():
    url = backends.pgbouncer_statement_url()
    password = f":{make_url(url).password}@"
    status, checks, output = doctor(url)
    assert status == 1, checks
    assert statuses(checks) == {"reachable": "ok", "topology": "FAIL"}
    assert "logged in at " in checks["reachable"][1]
    topology = checks["topology"][1]
    assert "PgBouncer in statement pooling mode (" in topology  # then the driver's words, which differ between psycopg versions
    assert "transaction blocks not allowed in statement pooling mode)" in topology
    assert "omnisync needs transactions of several" in topology
    assert "fix: set pool_mode = transaction in pgbouncer.ini" in topology
    assert ":***@" in output and password not in output

    result = cli("doctor", "--url", url, "--json", env=environment())
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["ok"] is False
    assert [(check["name"], check["status"]) for check in report["checks"]] == [("reachable", OK), ("topology", FAIL)]
    topology_check = report["checks"][1]
    assert "PgBouncer in statement pooling mode" in topology_check["detail"]
    assert topology_check["fix"].startswith("set pool_mode = transaction in pgbouncer.ini")
    assert password not in result.stdout


@pytest.mark.backend("pgbouncer")
def test_the_other_commands_through_statement_pooling_say_what_to_change():
    url = backends.pgbouncer_statement_url()
    for command in (["sessions"], ["import", "-"]):  # one only reads, one opens the store to write
        result = cli("--url", url, *command, env=environment(), stdin="")
        assert_one_line_failure(result)
        assert "is behind a pooler in statement pooling mode: set pool_mode = transaction in pgbouncer.ini" in result.stderr, result.stderr
        assert "reload PgBouncer" in result.stderr  # within the 300 characters the command line shows


# --- Redis and Redis Cluster ----------------------------------------------------------


@pytest.mark.backend("redis")
def test_redis_single_server_is_ok():
    status, checks, _ = doctor(backends.redis_url())
    assert status == 0, checks
    assert statuses(checks)["topology"] == "ok" and "one server" in checks["topology"][1]
    assert "Redis" in checks["server"][1] and "no schema version" in checks["schema"][1]
    assert {"latency", "clock", "eviction"} <= set(checks)


@pytest.mark.backend("redis_cluster")
def test_redis_cluster_is_ok():
    status, checks, _ = doctor(backends.redis_cluster_url())
    assert status == 0, checks
    assert "Redis Cluster state ok" in checks["topology"][1]
    assert f"{16384} of 16384 slots served" in checks["topology"][1]


@pytest.mark.backend("redis_cluster")
def test_a_cluster_node_given_as_one_server_gets_the_cluster_url():
    node = backends.redis_cluster_url().split("://", 1)[1].strip("/")
    status, checks, _ = doctor(f"redis://{node}/0")
    assert status == 1
    assert checks["topology"][0] == "FAIL"
    assert f"use redis+cluster://{node}/" in checks["topology"][1]


# --- MongoDB (FerretDB here) -----------------------------------------------------------


@pytest.mark.backend("mongodb")
def test_mongodb_is_ok():
    status, checks, _ = doctor(backends.mongodb_uri())
    assert status == 0, checks
    assert set(statuses(checks)) == {"reachable", "schema", "topology", "server", "latency", "clock"}
    assert set(statuses(checks).values()) == {"ok"}
    assert "no schema version" in checks["schema"][1]


# --- what every kind shares -------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql+psycopg://omnisync:{PASSWORD}@127.0.0.1:{{port}}/omnisync",
        f"redis://:{PASSWORD}@127.0.0.1:{{port}}/0",
        f"mongodb://omnisync:{PASSWORD}@127.0.0.1:{{port}}/omnisync",
    ],
    ids=["postgresql", "redis", "mongodb"],
)
def test_an_unreachable_port_fails_with_the_fix_and_no_password(url):
    port = free_port()
    status, checks, output = doctor(url.format(port=port), "--timeout", "2")
    assert status == 1
    assert list(checks) == ["reachable"]
    assert checks["reachable"][0] == "FAIL"
    assert f"nothing listens at 127.0.0.1:{port}" in checks["reachable"][1]
    assert "fix: start the server, or correct the host and port in the URL" in checks["reachable"][1]
    assert PASSWORD not in output


def test_json_has_one_entry_per_check_and_masks_the_password(sqlite_store):
    result = cli("doctor", "--url", f"sqlite:///{sqlite_store}", "--json", env=environment())
    report = json.loads(result.stdout)
    assert result.returncode == 0
    assert set(report) == {"kind", "url", "ok", "checks"}
    assert report["kind"] == "sql" and report["ok"] is True
    assert [check["name"] for check in report["checks"]] == ["reachable", "schema", "server"]
    for check in report["checks"]:
        assert set(check) == {"name", "status", "detail", "fix"} and check["status"] in (OK, WARN, FAIL)

    port = free_port()
    result = cli("doctor", "--url", f"redis://:{PASSWORD}@127.0.0.1:{port}/0", "--json", env=environment())
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["ok"] is False
    assert report["url"] == f"redis://:***@127.0.0.1:{port}/0"
    assert report["checks"][0]["status"] == FAIL and report["checks"][0]["fix"]
    assert PASSWORD not in result.stdout


def test_the_environment_chooses_the_store_as_for_every_command(sqlite_store):
    result = cli("doctor", env=environment(DATABASE_URL=f"sqlite:///{sqlite_store}"))
    assert result.returncode == 0 and "omnisync doctor: sql store" in result.stdout


# --- the judgements, on their own --------------------------------------------------------


def test_a_clock_more_than_a_second_off_warns_and_says_why():
    report = Report("redis", "redis://x")
    judge_clock(report, {"a:1": 0.2, "b:2": -1.5})
    (check,) = report.checks
    assert check.status == WARN and "(b:2) is 1.500 s behind" in check.detail and "NTP" in check.fix
    report = Report("redis", "redis://x")
    judge_clock(report, {"server": 0.9})
    assert report.checks[0].status == OK


def test_a_slow_round_trip_warns_with_its_cost_per_run(monkeypatch):
    clock = iter(range(0, 1000, 1))  # each perf_counter() call is 1 s later: 1,000 ms a ping
    monkeypatch.setattr("omnisync.doctor.measure.time.perf_counter", lambda: float(next(clock)))
    report = Report("sql", "postgresql://x")
    from omnisync.doctor.on_postgres import ROUND_TRIPS_PER_RUN

    judge_latency(report, ROUND_TRIPS_PER_RUN, lambda: None)
    (check,) = report.checks
    assert check.status == WARN and "1000.00 ms a round trip" in check.detail and "6000.0 ms of each run" in check.detail


def test_a_server_older_than_the_floor_fails():
    report = Report("sql", "postgresql://x")
    judge_version(report, "PostgreSQL", "9.6.24", (10,), "why", "15")
    judge_version(report, "PostgreSQL", "16.2 (Ubuntu 16.2-1)", (10,), "why", "15")
    assert [check.status for check in report.checks] == [FAIL, OK]
    assert report.checks[0].fix == "upgrade PostgreSQL to 10 or later"
