"""omnisync.transfer used as a library, from a script, with no command line: export, import, copy."""

from __future__ import annotations

import io
import json

import pytest

from omnisync.errors import StoreError, TransferError
from omnisync.stores.in_memory import InMemoryStore
from omnisync.transfer import copy_store, export_jsonl, export_sqlite, import_export, read_export
from store_contract import user
from transfer_helpers import AGENT, fill, seqs, snapshot


class Recorded:
    """A Progress that remembers what it was told."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.done = 0

    def start(self, total: int) -> None:
        self.total = total

    def advance(self, count: int = 1) -> None:
        self.done += count


class FailsForHelper(InMemoryStore):
    """A store that fails on the last session copied (agent "helper"), as a server that goes away mid-copy would."""

    def append(self, agent, session_id, messages):
        if agent == "helper":
            raise StoreError("the server went away")
        return super().append(agent, session_id, messages)


@pytest.fixture
def source():
    store = InMemoryStore()
    fill(store)
    return store


def test_export_to_a_stream_then_import_is_faithful(source):
    out = io.StringIO()
    done = export_jsonl(source, out)
    assert done.sessions == 3 and done.lines == len(out.getvalue().splitlines()) == 18
    target = InMemoryStore()
    report = import_export(target, read_export(io.StringIO(out.getvalue()), name="backup"))
    assert report.describe() == "3 sessions, 15 messages (8 active, 7 inactive, 3 summaries), 3 run records"
    assert snapshot(target) == snapshot(source)
    assert seqs(target, AGENT, "s1") == seqs(source, AGENT, "s1")


def test_export_to_a_path_selects_one_agent(source, tmp_path):
    path = tmp_path / "helper.jsonl"
    done = export_jsonl(source, path, agent="helper")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert done.sessions == 1 and {line.get("agent", line.get("record", {}).get("agent")) for line in lines} == {"helper"}
    assert not (tmp_path / "helper.jsonl.partial").exists()


def test_copy_between_stores_and_progress_counts_every_record(source):
    target, progress = InMemoryStore(), Recorded()
    copy_store(source, target, progress=progress)
    assert snapshot(target) == snapshot(source)
    assert progress.total == progress.done == 18  # 15 messages and 3 run records

    again = Recorded()
    report = copy_store(source, target, append=True, progress=again)
    assert report.runs_already_there == 3
    assert again.done == again.total == 18  # skipped run records count too: the bar completes


def test_a_destination_that_holds_a_session_is_refused_before_writing(source):
    target = InMemoryStore()
    target.append("helper", "s1", [user("already here")])
    with pytest.raises(TransferError, match="already holds 1 of these sessions.*nothing was written"):
        copy_store(source, target)
    assert [(s.agent, s.session_id) for s in target.sessions()] == [("helper", "s1")]
    assert target.list_runs(AGENT) == []


def test_read_export_names_a_missing_file_and_a_bad_line(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(TransferError, match=f"cannot read {missing}"):
        read_export(missing)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "message"}\n')
    with pytest.raises(TransferError, match="bad.jsonl, line 1: agent must be a non-empty string"):
        read_export(bad)


def test_a_failure_after_writing_began_says_what_was_left(source):
    target = FailsForHelper()
    with pytest.raises(TransferError, match="the server went away; the destination was left partly written: 2 sessions complete") as caught:
        copy_store(source, target)
    assert isinstance(caught.value.__cause__, StoreError)
    assert [s.session_id for s in target.sessions(AGENT)] == ["s1", "s2"]  # what was written stays


def test_export_sqlite_refuses_an_existing_file(source, tmp_path):
    pytest.importorskip("sqlite_utils")
    path = tmp_path / "taken.db"
    path.write_bytes(b"mine")
    with pytest.raises(TransferError, match="already exists"):
        export_sqlite(source, path)
    assert path.read_bytes() == b"mine"

