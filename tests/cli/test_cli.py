"""The omnisync command, run as users run it: ``python -m omnisync.cli`` in a subprocess.

Each test gets a SQLite store (``DATABASE_URL``) filled in-process through SQLStore with
``transfer_helpers.fill``: summaries kept and deleted, two agents, runs awaiting approval.
"""

from __future__ import annotations

from contextlib import closing

import json
import sys
import uuid
from pathlib import Path

import pytest

from helpers import backends
from omnisync.agent import OmniCoreAgent
from omnisync.messages import Message, utcnow
from omnisync.router import MemoryRouter
from omnisync.run_record import AWAITING_APPROVAL, RunRecord
from omnisync.stores.sql.store import SQLStore
from helpers.transfer_helpers import AGENT, fill, seqs, snapshot
from helpers.cli_run import assert_one_line_failure, cli, environment

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with SQLStore(url) as store:
        fill(store)
    return url


@pytest.fixture
def env(db):
    return environment(DATABASE_URL=db)


def open_sql(url: str) -> SQLStore:
    return SQLStore(url)


# --- help and bad arguments -----------------------------------------------------------


def test_help_lists_every_command(env):
    result = cli("--help", env=env)
    assert result.returncode == 0
    for command in ("sessions", "history", "clear", "export", "import", "copy", "runs", "approve", "deny", "preview"):
        assert command in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["frobnicate"],
        ["history", "s1"],  # --agent is required
        ["clear", "--agent", AGENT],  # neither SESSION nor --all-sessions
        ["clear", "s1", "--agent", AGENT, "--all-sessions"],  # both
        ["runs", "--status", "sleeping"],
        ["preview", "s1", "--agent", AGENT, "--memory-config", "{not json"],
        ["copy", "--from", "memory:", "--to", "sqlite:///x.db"],
    ],
    ids=["no-command", "unknown-command", "no-agent", "clear-nothing-named", "clear-both", "bad-status", "bad-json", "copy-memory"],
)
def test_bad_arguments_print_usage_and_exit_2(env, db, args):
    result = cli(*args, env=env)
    assert result.returncode == 2, result
    assert result.stderr.startswith("usage: omnisync")
    assert "Traceback" not in result.stderr
    with open_sql(db) as store:
        assert len(store.history(AGENT, "s1", include_inactive=True)) == 10  # nothing was cleared


def test_an_unreachable_store_exits_1_with_one_line(env):
    result = cli("sessions", "--store", "redis", "--url", "redis://127.0.0.1:1/0", env=env)
    assert_one_line_failure(result)
    assert "127.0.0.1:1" in result.stderr


def test_no_store_configured_names_the_variables():
    result = cli("sessions", env=environment())
    assert result.returncode == 2
    assert "DATABASE_URL" in result.stderr and "--store" in result.stderr


# --- sessions, history, clear ---------------------------------------------------------


def test_sessions_table_and_json(env):
    table = cli("sessions", env=env)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["AGENT", "SESSION", "MESSAGES", "LAST", "ACTIVITY"]
    assert len(table.stdout.splitlines()) == 4
    listed = json.loads(cli("sessions", "--agent", AGENT, "--json", env=env).stdout)
    assert [(s["agent"], s["session_id"], s["message_count"]) for s in listed] == [(AGENT, "s1", 10), (AGENT, "s2", 3)]
    assert all(s["last_activity"] for s in listed)


def test_long_listings_are_printed_whole_a_page_at_a_time(tmp_path):
    url = f"sqlite:///{tmp_path / 'many.db'}"
    with SQLStore(url) as store:
        for i in range(1203):
            store.append("many", f"s{i:04d}", [Message(role="user", content=f"hello {i}", tokens=1)])
        store.append("many", "long", [Message(role="user", content=f"m{i}", tokens=1) for i in range(1203)])
    env = environment(DATABASE_URL=url)
    lines = cli("sessions", "--agent", "many", env=env).stdout.splitlines()
    assert lines[0].split()[:2] == ["AGENT", "SESSION"] and [line.split()[1] for line in lines[1:]] == ["long", *(f"s{i:04d}" for i in range(1203))]
    assert len({line.index(line.split()[1]) for line in lines}) == 1  # one column for the session ids throughout
    listed = json.loads(cli("sessions", "--json", env=env).stdout)
    assert [s["session_id"] for s in listed] == ["long", *(f"s{i:04d}" for i in range(1203))]
    history = json.loads(cli("history", "long", "--agent", "many", "--json", env=env).stdout)
    assert [m["message"]["content"] for m in history] == [f"m{i}" for i in range(1203)]
    table = cli("history", "long", "--agent", "many", env=env).stdout.splitlines()
    assert [line.split()[-1] for line in table[1:]] == [f"m{i}" for i in range(1203)]


def test_many_runs_are_printed_whole_a_page_at_a_time(tmp_path):
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    made = utcnow()
    with SQLStore(url) as store:
        store.append("many", "s", [Message(role="user", content="hello", tokens=1)])
        store.save_runs([(RunRecord(run_id=f"run-{i:04d}", agent="many", session_id="s", status="completed", created_at=made), None) for i in range(1203)])
        store.save_run(RunRecord(run_id="session-lease", agent="many", session_id="s", kind="session", created_at=made), None)
    env = environment(DATABASE_URL=url)
    expected = [f"run-{i:04d}" for i in range(1203)]  # the session's lease is not a run
    assert [r["run_id"] for r in json.loads(cli("runs", "--json", env=env).stdout)] == expected
    lines = cli("runs", "--agent", "many", env=env).stdout.splitlines()
    assert lines[0].split()[0] == "RUN" and [line.split()[0] for line in lines[1:]] == expected
    assert len({line.index(line.split()[1]) for line in lines}) == 1  # one column for the agents throughout


def test_history_shows_active_messages_or_everything_marked(env):
    active = cli("history", "s1", "--agent", AGENT, env=env)
    assert active.returncode == 0, active.stderr
    lines = active.stdout.splitlines()
    assert lines[0].split() == ["SEQ", "ROLE", "CONTENT"]
    assert [line.split()[0] for line in lines[1:]] == ["13", "14", "16"]
    assert "Atlas ships Friday." in lines[1]

    everything = json.loads(cli("history", "s1", "--agent", AGENT, "--all", "--json", env=env).stdout)
    assert [(m["seq"], m["status"], "summary" in m["metadata"]) for m in everything] == [
        (2, "inactive", False), (4, "inactive", False), (6, "inactive", False), (8, "inactive", False),
        (9, "inactive", True), (10, "inactive", False), (12, "inactive", False),
        (13, "active", True), (14, "active", False), (16, "active", False),
    ]
    assert everything[2]["message"]["tool_calls"][0]["id"] == "call_t-0"
    assert everything[3]["message"] == {"role": "tool", "content": "result 0", "tool_call_id": "call_t-0", "name": "lookup"}


def test_clear_one_session_then_all_sessions_of_one_agent(env, db):
    one = cli("clear", "s1", "--agent", AGENT, env=env)
    assert one.returncode == 0, one.stderr
    assert "10 messages" in one.stdout
    with open_sql(db) as store:
        assert [(s.agent, s.session_id) for s in store.sessions()] == [(AGENT, "s2"), ("helper", "s1")]
    unasked = cli("clear", "--agent", AGENT, "--all-sessions", env=env)  # stdin is not a terminal
    assert unasked.returncode == 2 and "--yes" in unasked.stderr
    with open_sql(db) as store:
        assert len(store.sessions(AGENT)) == 1  # nothing deleted
    every = cli("clear", "--agent", AGENT, "--all-sessions", "--yes", env=env)
    assert every.returncode == 0 and "3 messages" in every.stdout
    with open_sql(db) as store:
        assert [(s.agent, s.session_id) for s in store.sessions()] == [("helper", "s1")]
        assert store.load_run(AGENT, "run-wait") is not None  # run records are kept


# --- runs, approve, deny --------------------------------------------------------------


def test_runs_json_filtered_by_status_and_table(env):
    waiting = json.loads(cli("runs", "--status", "awaiting_approval", "--json", env=env).stdout)
    assert [(r["run_id"], r["status"]) for r in waiting] == [("run-wait", "awaiting_approval")]
    assert [c["id"] for c in waiting[0]["pending_calls"]] == ["call_a", "call_b"]
    table = cli("runs", env=env)
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert [row.split()[0] for row in rows[1:]] == ["run-wait", "run-done", "run-h"]
    assert "call_a (lookup), call_b (delete_file)" in rows[1]


def test_approve_and_deny_record_decisions_like_resolve_approval(env, db):
    approved = cli("approve", "run-wait", "call_a", "--agent", AGENT, "--reason", "fine", env=env)
    assert approved.returncode == 0, approved.stderr
    assert "call_b" in approved.stderr  # still undecided
    denied = cli("deny", "run-wait", "call_b", "--agent", AGENT, env=env)
    assert denied.returncode == 0, denied.stderr
    assert "agent.resume('run-wait')" in denied.stderr
    with open_sql(db) as store:
        record = store.load_run(AGENT, "run-wait")
    assert record.decisions == {"call_a": {"approved": True, "reason": "fine"}, "call_b": {"approved": False, "reason": None}}
    assert record.version == 4 and record.status == AWAITING_APPROVAL

    # The agent's own resolve_approval writes the same shape.
    with open_sql(db) as store:
        with OmniCoreAgent(AGENT, "", {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, memory_router=MemoryRouter(store=store)) as agent:
            agent.resolve_approval("run-wait", "call_b", False)
            assert store.load_run(AGENT, "run-wait").decisions == record.decisions


def test_approve_refuses_a_finished_run_or_an_unknown_call(env):
    finished = cli("approve", "run-done", "call_a", "--agent", AGENT, env=env)
    assert_one_line_failure(finished)
    assert "completed, not awaiting_approval" in finished.stderr


# --- preview --------------------------------------------------------------------------


def test_preview_is_what_the_agent_would_send(env, db):
    memory = {"mode": "sliding_window", "value": 2}
    shown = cli("preview", "s1", "--agent", AGENT, "--system", "Be brief.", "--memory-config", json.dumps(memory), "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    preview = json.loads(shown.stdout)
    with open_sql(db) as store:
        agent = OmniCoreAgent(
            AGENT, "Be brief.", {"model": "preview", "base_url": "http://127.0.0.1:9/v1"},
            memory_router=MemoryRouter(store=store), agent_config={"memory_config": memory},
        )
        with agent:
            assert preview == agent.preview("s1")
    assert [m["content"] for m in preview["messages"]] == ["Be brief.", "The team is Ada and Linus.", "Noted, Ada and Linus."]
    assert preview["window"] == {"mode": "sliding_window", "value": 2, "messages": 2}

    table = cli("preview", "s1", "--agent", AGENT, env=env)
    assert table.returncode == 0, table.stderr
    assert "summary: [CONVERSATION SUMMARY] Atlas ships Friday." in table.stdout
    assert "total tokens:" in table.stdout


# --- export and import ----------------------------------------------------------------


def test_export_import_round_trip_keeps_statuses_summaries_and_runs(env, db, tmp_path):
    exported = tmp_path / "export.jsonl"
    result = cli("export", "-o", str(exported), env=env)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    assert {line["kind"] for line in lines} == {"message", "run", "run_events"}
    assert sum(line["kind"] == "run" for line in lines) == 6  # 3 runs, a lease, a claim, an idempotency key
    events = [line for line in lines if line["kind"] == "run_events"]
    assert [(e["run_id"], e["first"], [name for name, _ in e["events"]]) for e in events] == [("run-done", 1, ["run_started", "text_delta", "run_finished"])]
    assert lines[lines.index(events[0]) - 1]["record"]["run_id"] == "run-done"  # right after its run

    copy_url = f"sqlite:///{tmp_path / 'copy.db'}"
    imported = cli("import", str(exported), env=environment(DATABASE_URL=copy_url))
    assert imported.returncode == 0, imported.stderr
    assert "counts verified" in imported.stdout
    assert "importing [" not in imported.stderr  # no bar: stderr is not a terminal
    with open_sql(db) as source, open_sql(copy_url) as copy:
        assert snapshot(copy) == snapshot(source)
        assert seqs(copy, AGENT, "s1") == seqs(source, AGENT, "s1")  # no gaps: the same numbers
        assert [m.metadata for m in copy.history(AGENT, "s1", include_inactive=True)] == [
            m.metadata for m in source.history(AGENT, "s1", include_inactive=True)
        ]
        # s2 lost [2, 6] to a delete-fold: renumbered in order, runs moved along.
        assert seqs(copy, AGENT, "s2") == [(3, "active", True), (4, "active", False), (6, "active", False)]
        assert copy.load_run(AGENT, "run-done").loaded_seq == (3, 4)
        assert copy.load_run(AGENT, "run-done").first_written_seq == 6
        assert copy.load_run(AGENT, "run-wait") == source.load_run(AGENT, "run-wait")  # version and all

    again = cli("import", str(exported), env=environment(DATABASE_URL=copy_url))
    assert_one_line_failure(again)
    assert "already holds" in again.stderr and "--append" in again.stderr

    appended = cli("import", "--append", "-", env=environment(DATABASE_URL=copy_url), stdin=exported.read_text())
    assert appended.returncode == 0, appended.stderr
    assert "6 already there" in appended.stdout
    with open_sql(copy_url) as copy:
        assert [m.content for m in copy.history("helper", "s1")] == ["helper question", "helper answer"] * 2
        assert len(copy.history(AGENT, "s1", include_inactive=True)) == 20
        assert [m.content for m in copy.history(AGENT, "s1")][:3] == [m.content for m in copy.history(AGENT, "s1")][3:]


def test_import_refuses_a_bad_line_before_writing(env, db, tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"kind": "run", "record": {"run_id": "r", "agent": "a", "session_id": "s"}}\n{"kind": "nope"}\n')
    copy_url = f"sqlite:///{tmp_path / 'copy.db'}"
    result = cli("import", str(broken), env=environment(DATABASE_URL=copy_url))
    assert_one_line_failure(result)
    assert "line 2" in result.stderr
    with open_sql(copy_url) as copy:
        assert copy.load_run("a", "r") is None


def test_import_keeps_an_undone_message_inactive(tmp_path):
    # An inactive message no summary folded (an undo's): it is written, then made inactive again,
    # and the count check agrees (before undo existed, this was the import that could not be faithful).
    line = {"kind": "message", "agent": AGENT, "session_id": "odd", "seq": 2, "status": "inactive", "message": {"role": "user", "content": "x"}}
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps(line) + "\n")
    url = f"sqlite:///{tmp_path / 'copy.db'}"
    result = cli("import", str(odd), env=environment(DATABASE_URL=url))
    assert result.returncode == 0, result.stderr
    with closing(open_sql(url)) as store:
        assert [(m.content, m.status) for m in store.history(AGENT, "odd", include_inactive=True)] == [("x", "inactive")]


def test_export_sqlite_opens_as_plain_tables(env, tmp_path):
    sqlite_utils = pytest.importorskip("sqlite_utils")
    target = tmp_path / "plain.db"
    result = cli("export", "--sqlite", str(target), env=env)
    assert result.returncode == 0, result.stderr
    db = sqlite_utils.Database(target)
    assert set(db.table_names()) == {"messages", "runs", "run_events"}
    assert db["messages"].count == 15 and db["runs"].count == 6 and db["run_events"].count == 3
    assert [(r["id"], r["name"]) for r in db.query("select id, name from run_events where run_id = 'run-done' order by id")] == [
        (1, "run_started"), (2, "text_delta"), (3, "run_finished")
    ]
    assert db["messages"].pks == ["agent", "session_id", "seq"]
    rows = list(db.query("select seq, status, summary, metadata from messages where agent = ? and session_id = 's1' order by seq", [AGENT]))
    assert [(r["seq"], r["status"], r["summary"]) for r in rows][4] == (9, "inactive", 1)
    assert json.loads(rows[4]["metadata"])["summary"]["folded"] == 4
    run = next(db.query("select pending_calls, version from runs where run_id = 'run-wait'"))
    assert [c["id"] for c in json.loads(run["pending_calls"])] == ["call_a", "call_b"] and run["version"] == 2
    assert set(db["runs"].columns_dict) == set(RunRecord.__dataclass_fields__)  # every field of a run record has its column
    db.close()


# --- copy -----------------------------------------------------------------------------


def test_copy_sqlite_to_sqlite_verifies_counts(env, db, tmp_path):
    target = f"sqlite:///{tmp_path / 'target.db'}"
    result = cli("copy", "--from", db, "--to", target, "--progress", env=env)
    assert result.returncode == 0, result.stderr
    assert "copied 3 sessions, 15 messages (8 active, 7 inactive, 3 summaries), 6 run records" in result.stdout
    assert "counts verified" in result.stdout
    assert "copying [" in result.stderr and "100%" in result.stderr
    with open_sql(db) as source, open_sql(target) as copy:
        assert snapshot(copy) == snapshot(source)

    again = cli("copy", "--from", db, "--to", target, env=env)
    assert_one_line_failure(again)
    assert "already holds 3 of these sessions" in again.stderr


def test_copy_sqlite_to_redis(env, db):
    redis = pytest.importorskip("redis")
    from omnisync.stores.redis.store import RedisStore

    url = backends.redis_url()
    prefix = f"omnisync-cli-test-{uuid.uuid4().hex}"
    try:
        result = cli("copy", "--from", db, "--to", url, env={**env, "OMNISYNC_REDIS_PREFIX": prefix})
        if result.returncode != 0 and "Connection refused" in result.stderr:
            backends.unreachable("Redis", result.stderr.strip())
        assert result.returncode == 0, result.stderr
        assert "counts verified" in result.stdout
        with open_sql(db) as source, RedisStore.from_url(url, prefix=prefix) as copy:
            assert snapshot(copy) == snapshot(source)
            assert seqs(copy, AGENT, "s1") == seqs(source, AGENT, "s1")
    finally:
        client = redis.Redis.from_url(url)
        doomed = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if doomed:
            client.delete(*doomed)
        client.close()


def test_copy_sqlite_to_mongodb(env, db):
    pymongo = pytest.importorskip("pymongo")
    from omnisync.stores.mongo.store import MongoStore

    uri = backends.mongodb_uri()
    db_name = f"omnisync_cli_test_{uuid.uuid4().hex[:12]}"
    try:
        result = cli("copy", "--from", db, "--to", uri, env={**env, "MONGODB_DB_NAME": db_name})
        if result.returncode != 0 and ("refused" in result.stderr or "Timeout" in result.stderr):
            backends.unreachable("MongoDB (FerretDB)", result.stderr.strip())
        assert result.returncode == 0, result.stderr
        assert "counts verified" in result.stdout
        with open_sql(db) as source, MongoStore.from_url(uri, db_name=db_name) as copy:
            assert snapshot(copy) == snapshot(source)
    finally:
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
        client.drop_database(db_name)
        client.close()


# --- reading never creates ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["sessions"], ["history", "s1", "--agent", AGENT], ["runs"], ["export"], ["clear", "s1", "--agent", AGENT], ["preview", "s1", "--agent", AGENT]],
    ids=["sessions", "history", "runs", "export", "clear", "preview"],
)
def test_a_mistyped_sqlite_path_is_an_error_and_creates_nothing(tmp_path, args):
    missing = tmp_path / "memroy.db"
    result = cli(*args, env=environment(DATABASE_URL=f"sqlite:///{missing}"))
    assert_one_line_failure(result)
    assert f"no store at {missing}: no such file" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_sqlite_file_without_omnisync_tables_is_not_a_store(tmp_path):
    import sqlite3

    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("create table notes (body text)")
    conn.close()
    result = cli("sessions", "--url", f"sqlite:///{other}", env=environment())
    assert_one_line_failure(result)
    assert "no omnisync tables" in result.stderr
    with closing(sqlite3.connect(other)) as conn, conn:
        assert [name for (name,) in conn.execute("select name from sqlite_master")] == ["notes"]
    conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_reading_an_existing_store_leaves_no_file_behind(env, tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (["sessions"], ["runs"], ["export"]):
        assert cli(*args, env=env).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_import_of_a_missing_file_opens_no_store(tmp_path):
    result = cli("import", str(tmp_path / "nope.jsonl"), env=environment(DATABASE_URL=f"sqlite:///{tmp_path / 'new.db'}"))
    assert_one_line_failure(result)
    assert "cannot read" in result.stderr and "nope.jsonl" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_copy_from_a_missing_store_creates_neither(tmp_path):
    source, target = tmp_path / "typo.db", tmp_path / "target.db"
    result = cli("copy", "--from", f"sqlite:///{source}", "--to", f"sqlite:///{target}", env=environment())
    assert_one_line_failure(result)
    assert f"no store at {source}" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_postgres_schema_without_tables_is_not_a_store():
    sqlalchemy = pytest.importorskip("sqlalchemy")
    url = backends.postgres_url()
    schema = f"cli_{uuid.uuid4().hex[:12]}"
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text(f"create schema {schema}"))
    except sqlalchemy.exc.OperationalError as exc:
        engine.dispose()
        backends.unreachable("PostgreSQL", str(exc).splitlines()[0])
    try:
        result = cli("sessions", "--url", f"{url}?options=-csearch_path%3D{schema}", env=environment())
        assert_one_line_failure(result)
        assert "no omnisync tables" in result.stderr
        with engine.connect() as conn:
            assert sqlalchemy.inspect(conn).get_table_names(schema=schema) == []
        missing_db = url.rsplit("/", 1)[0] + f"/{schema}"
        absent = cli("sessions", "--url", missing_db, env=environment())
        assert_one_line_failure(absent)
        assert "cannot open" in absent.stderr and schema in absent.stderr
    finally:
        with engine.begin() as conn:
            conn.execute(sqlalchemy.text(f"drop schema {schema} cascade"))
        engine.dispose()


def test_a_redis_prefix_with_no_keys_is_not_a_store():
    redis = pytest.importorskip("redis")
    url = backends.redis_url()
    prefix = f"omnisync-cli-typo-{uuid.uuid4().hex}"
    result = cli("sessions", "--url", url, env=environment(OMNISYNC_REDIS_PREFIX=prefix))
    if "Connection refused" in result.stderr:
        backends.unreachable("Redis", result.stderr.strip())
    assert_one_line_failure(result)
    assert f"no key starts with '{prefix}:'" in result.stderr
    client = redis.Redis.from_url(url)
    try:
        assert list(client.scan_iter(match=f"{prefix}*", count=1000)) == []
    finally:
        client.close()


def test_a_missing_mongodb_database_is_an_error_and_is_not_created():
    pymongo = pytest.importorskip("pymongo")
    uri = backends.mongodb_uri()
    db_name = f"omnisync_cli_typo_{uuid.uuid4().hex[:12]}"
    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
    try:
        result = cli("runs", "--url", uri, env=environment(MONGODB_DB_NAME=db_name))
        if "cannot reach" in result.stderr:
            backends.unreachable("MongoDB (FerretDB)", result.stderr.strip())
        assert_one_line_failure(result)
        assert f"database '{db_name}' has no collection 'messages'" in result.stderr
        assert db_name not in client.list_database_names()
    finally:
        client.drop_database(db_name)
        client.close()


# --- names that hold nothing, asking first, the bar, the version --------------------------


@pytest.mark.parametrize(
    "args, said",
    [
        (["clear", "s1", "--agent", "assitant"], "agent 'assitant' has no sessions"),
        (["clear", "--agent", "assitant", "--all-sessions", "--yes"], "agent 'assitant' has no sessions"),
        (["clear", "s9", "--agent", AGENT], "agent 'assistant' has no session 's9' (2 others: omnisync sessions --agent assistant lists them)"),
        (["history", "s9", "--agent", AGENT, "--all"], "agent 'assistant' has no session 's9' (2 others"),
        (["sessions", "--agent", "assitant"], "agent 'assitant' has no sessions"),
    ],
    ids=["clear-agent", "clear-all-agent", "clear-session", "history-session", "sessions-agent"],
)
def test_an_unknown_agent_or_session_is_an_error(env, db, args, said):
    result = cli(*args, env=env)
    assert_one_line_failure(result)
    assert said in result.stderr
    with open_sql(db) as store:
        assert len(store.history(AGENT, "s1", include_inactive=True)) == 10


def test_clear_all_sessions_asks_on_a_terminal(env, db, monkeypatch):
    from omnisync.cli.main import main

    class Terminal:
        def isatty(self) -> bool:
            return True

    for name in ("REDIS_URL", "MONGODB_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", db)
    monkeypatch.setattr(sys, "stdin", Terminal())
    answers = iter(["n", "y"])
    asked = []
    monkeypatch.setattr("builtins.input", lambda question: asked.append(question) or next(answers))
    assert main(["clear", "--agent", AGENT, "--all-sessions"]) == 1
    assert asked == ["delete all 2 sessions (13 messages) of agent 'assistant'? [y/N] "]
    with open_sql(db) as store:
        assert len(store.sessions(AGENT)) == 2
    assert main(["clear", "--agent", AGENT, "--all-sessions"]) == 0
    with open_sql(db) as store:
        assert store.sessions(AGENT) == []


def test_the_progress_bar_counts_records_and_completes_on_append(env, db, tmp_path):
    target = f"sqlite:///{tmp_path / 'target.db'}"
    first = cli("copy", "--from", db, "--to", target, "--progress", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stderr.rstrip().endswith("100%  21/21 records")  # 15 messages, 3 runs and 3 records beside them
    again = cli("copy", "--from", db, "--to", target, "--append", "--progress", env=env)
    assert again.returncode == 0, again.stderr
    assert "6 already there" in again.stdout
    assert again.stderr.rstrip().endswith("100%  21/21 records")


def test_version(env):
    from importlib.metadata import version

    result = cli("--version", env=env)
    assert result.returncode == 0
    assert result.stdout.strip() == f"omnisync {version('omnisync')}"


# --- the store a URL names -----------------------------------------------------------------


@pytest.fixture
def mongodb_named_in_url():
    """A filled store in a database the URL names, and a decoy (``MONGODB_DB_NAME``) holding the same sessions."""
    pymongo = pytest.importorskip("pymongo")
    from omnisync.stores.mongo.store import MongoStore

    base = backends.mongodb_uri().rstrip("/")
    named, decoy = (f"omnisync_cli_{what}_{uuid.uuid4().hex[:12]}" for what in ("url", "env"))
    try:
        for name in (named, decoy):
            with MongoStore.from_url(f"{base}/{name}", serverSelectionTimeoutMS=5000) as store:
                fill(store)
    except pymongo.errors.PyMongoError as exc:
        backends.unreachable("MongoDB (FerretDB)", f"{exc.__class__.__name__}: {exc}")
    client = pymongo.MongoClient(base, serverSelectionTimeoutMS=5000)
    try:
        yield f"{base}/{named}", named, decoy
    finally:
        for name in (named, decoy):
            client.drop_database(name)
        client.close()


@pytest.mark.parametrize(
    "args",
    [["sessions", "--json"], ["history", "s2", "--agent", AGENT, "--json"], ["runs", "--json"], ["export"]],
    ids=["sessions", "history", "runs", "export"],
)
def test_reading_commands_read_the_mongodb_database_the_url_names(mongodb_named_in_url, args):
    url, named, decoy = mongodb_named_in_url
    from omnisync.stores.mongo.store import MongoStore

    with MongoStore.from_url(url) as store:
        store.append(AGENT, "only-in-url", [Message(role="user", content="here")])
    for env in (environment(), environment(MONGODB_DB_NAME=decoy)):
        result = cli(*args, "--url", url, env=env)
        assert result.returncode == 0, result.stderr
        if args[0] in ("sessions", "export"):
            assert "only-in-url" in result.stdout
        elif args[0] == "runs":
            assert {r["run_id"] for r in json.loads(result.stdout)} >= {"run-wait", "run-done"}
        else:
            assert [m["seq"] for m in json.loads(result.stdout)] == [7, 8, 10]


def test_clear_deletes_in_the_mongodb_database_the_url_names_not_mongodb_db_name(mongodb_named_in_url):
    url, named, decoy = mongodb_named_in_url
    from omnisync.stores.mongo.store import MongoStore

    result = cli("clear", "s2", "--agent", AGENT, "--url", url, env=environment(MONGODB_DB_NAME=decoy))
    assert result.returncode == 0, result.stderr
    base = url.rsplit("/", 1)[0]
    with MongoStore.from_url(url) as cleared, MongoStore.from_url(f"{base}/{decoy}") as kept:
        assert cleared.history(AGENT, "s2") == []
        assert [m.seq for m in kept.history(AGENT, "s2")] == [7, 8, 10]


def test_copy_from_reads_the_mongodb_database_the_url_names(mongodb_named_in_url, tmp_path):
    url, named, decoy = mongodb_named_in_url
    from omnisync.stores.mongo.store import MongoStore

    target = f"sqlite:///{tmp_path / 'copy.db'}"
    result = cli("copy", "--from", url, "--to", target, env=environment(MONGODB_DB_NAME=f"{decoy}_absent"))
    assert result.returncode == 0, result.stderr
    with MongoStore.from_url(url) as source, open_sql(target) as copy:
        assert snapshot(copy) == snapshot(source)


def test_runs_lists_the_failed_runs_of_an_agent_without_sessions(env, db):
    with open_sql(db) as store:
        now = utcnow()
        failed = RunRecord(run_id="run-down", agent="no-sessions", session_id="s", status="failed", created_at=now, updated_at=now)
        store.save_run(failed, expected_version=None)
        assert all(s.agent != "no-sessions" for s in store.iter_sessions())
    listed = json.loads(cli("runs", "--json", env=env).stdout)
    assert ("no-sessions", "run-down", "failed") in {(r["agent"], r["run_id"], r["status"]) for r in listed}
    only = cli("runs", "--status", "failed", env=env)
    assert only.returncode == 0, only.stderr
    assert [row.split()[:2] for row in only.stdout.splitlines()[1:]] == [["run-down", "no-sessions"]]
