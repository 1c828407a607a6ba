"""SQLite: what a run writes goes in as few transactions as its calls allow, all or nothing."""

from __future__ import annotations

import pytest

from omnisync.errors import RunConflictError
from omnisync.messages import utcnow
from omnisync.run_record import COMPLETED, RunRecord
from omnisync.stores.sql.sqlite import SQLiteStore
from helpers.store_contract import AGENT, contents, reply, user


@pytest.fixture
def store(tmp_path):
    with SQLiteStore(f"sqlite:///{tmp_path / 'memory.db'}") as store:
        yield store


@pytest.fixture
def statements(store):
    """Every statement the calling thread's connection runs from now on."""
    seen: list[str] = []
    store._threads.get(store._describe).set_trace_callback(seen.append)
    return seen


def _record(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, agent=AGENT, session_id="s", created_at=utcnow())


def test_save_runs_is_one_transaction(store, statements):
    lease = store.save_run(_record("lease"), None)
    statements.clear()
    store.save_runs([(lease.evolve(lease_owner="r1"), lease.version), (_record("r1"), None)])
    assert [s.split()[0] for s in statements] == ["BEGIN", "UPDATE", "INSERT", "COMMIT"]


def test_save_runs_writes_all_or_none(store):
    lease = store.save_run(_record("lease"), None)
    store.save_run(_record("taken"), None)
    with pytest.raises(RunConflictError):
        store.save_runs([(lease.evolve(lease_owner="taken"), lease.version), (_record("taken"), None)])
    assert store.load_run(AGENT, "lease") == lease  # the first fitted, the second did not: neither was written


def test_append_and_save_run_is_one_transaction(store, statements):
    record = store.save_run(_record("r1"), None)
    statements.clear()
    written, saved = store.append_and_save_run(AGENT, "s", [user("hi"), reply("hello")], record.evolve(status=COMPLETED), record.version)
    assert _sent_by_store(statements) == ["BEGIN", "INSERT INTO omnisync_sessions", "INSERT INTO omnisync_messages", "UPDATE omnisync_runs", "COMMIT"]
    assert saved.first_written_seq == written[0].seq and store.load_run(AGENT, "r1") == saved


def _sent_by_store(statements: list[str]) -> list[str]:
    """What the store sent, in order, each kind once: not the search index's trigger (its steps
    traced as ``--`` comments and FTS5's own statements on ``'main'.`` tables, and the insert
    traced again at each trigger run), so one transaction reads BEGIN ... COMMIT around the store's statements."""
    kinds: list[str] = []
    for statement in statements:
        if statement.startswith("--") or "'main'." in statement:
            continue
        words = statement.split()
        kind = " ".join(words[:3]) if words[0] in ("INSERT", "UPDATE") else words[0]
        kind = kind.replace(" SET", "") if kind.startswith("UPDATE") else kind
        if not kinds or kinds[-1] != kind:
            kinds.append(kind)
    return kinds


def test_append_and_save_run_writes_both_or_neither(store):
    record = store.save_run(_record("r1"), None)
    store.append(AGENT, "s", [user("before")])
    with pytest.raises(RunConflictError):
        store.append_and_save_run(AGENT, "s", [user("lost lease")], record.evolve(status=COMPLETED), record.version + 1)
    assert contents(store.history(AGENT, "s")) == ["before"]
    assert store.load_run(AGENT, "r1") == record
    written, _ = store.append_and_save_run(AGENT, "s", [user("after")], record.evolve(status=COMPLETED), record.version)
    assert written[0].seq == 4  # the refused write took no seq
