"""omnisync.transfer used as a library, from a script, with no command line: export, import, copy."""

from __future__ import annotations

import io
import json

import pytest

from omnisync.errors import StoreError, TransferError
from omnisync.messages import utcnow
from omnisync.run_record import DATA_KEY, RUN_KINDS, RunRecord
from omnisync.stores.in_memory import InMemoryStore
from omnisync.transfer import copy_store, export_jsonl, export_sqlite, import_export, read_export
from helpers.store_contract import user
from helpers.transfer_helpers import AGENT, fill, seqs, snapshot


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
    assert done.sessions == 3 and done.lines == len(out.getvalue().splitlines()) == 22  # 15 messages, 3 runs and 3 records beside them, 1 line of events
    target = InMemoryStore()
    report = import_export(target, read_export(io.StringIO(out.getvalue()), name="backup"))
    assert report.describe() == "3 sessions, 15 messages (8 active, 7 inactive, 3 summaries), 6 run records with 3 stored events"
    assert snapshot(target) == snapshot(source)
    assert seqs(target, AGENT, "s1") == seqs(source, AGENT, "s1")


def test_export_to_a_path_selects_one_agent(source, tmp_path):
    path = tmp_path / "helper.jsonl"
    done = export_jsonl(source, path, agent="helper")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert done.sessions == 1 and {line.get("agent", line.get("record", {}).get("agent")) for line in lines} == {"helper"}
    assert not (tmp_path / "helper.jsonl.partial").exists()


class PagesOnly(InMemoryStore):
    """A store whose whole-listing read of run records fails, and whose pages of them are noted."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: list[tuple[str, int]] = []

    def list_runs(self, agent, status=None, session_id=None):
        raise AssertionError("an export or a copy must read run records a page at a time")

    def runs_page(self, agent, after=None, limit=100, *, status=None, session_id=None, kind="run"):
        self.pages.append((kind, limit))
        return super().runs_page(agent, after, limit, status=status, session_id=session_id, kind=kind)


def test_export_and_copy_read_run_records_a_page_at_a_time(source):
    paged = PagesOnly()
    copy_store(source, paged)
    paged.pages.clear()
    for export in (lambda: export_jsonl(paged, io.StringIO()), lambda: copy_store(paged, InMemoryStore())):
        export()
        probes = {(kind, limit) for kind, limit in paged.pages if limit == 1}  # a copy asks whether the source holds data keys
        assert probes <= {(DATA_KEY, 1)}
        assert {kind for kind, _ in paged.pages} == set(RUN_KINDS) and {limit for kind, limit in paged.pages if (kind, limit) not in probes} == {500}
        paged.pages.clear()
    target = InMemoryStore()
    copy_store(paged, target)
    assert snapshot(target) == snapshot(source)
    paged.pages.clear()
    copy_store(paged, target, append=True)  # nothing to check and nobody watching: one read of each kind of each agent
    assert len([page for page in paged.pages if page[1] != 1]) == 2 * len(RUN_KINDS)  # besides the probe for data keys
    paged.pages.clear()
    copy_store(paged, target, append=True, progress=Recorded())  # counted for the bar, then read to write
    assert len([page for page in paged.pages if page[1] != 1]) == 2 * 2 * len(RUN_KINDS)


def test_a_run_record_with_no_creation_time_is_given_one_so_a_later_export_carries_it(source):
    out = io.StringIO()
    export_jsonl(source, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    undated = next(line for line in lines if line["kind"] == "run" and line["record"]["run_id"] == "run-done")
    undated["record"]["created_at"] = None
    target = InMemoryStore()
    import_export(target, read_export(io.StringIO("".join(json.dumps(line) + "\n" for line in lines)), name="edited"))
    restored = target.load_run(AGENT, "run-done")
    assert restored.created_at == restored.updated_at and restored.created_at is not None
    again = io.StringIO()
    export_jsonl(target, again)
    exported = [json.loads(line) for line in again.getvalue().splitlines()]
    assert [line["record"]["run_id"] for line in exported if line["kind"] == "run"].count("run-done") == 1


def test_copy_between_stores_and_progress_counts_every_record(source):
    target, progress = InMemoryStore(), Recorded()
    copy_store(source, target, progress=progress)
    assert snapshot(target) == snapshot(source)
    assert progress.total == progress.done == 21  # 15 messages, 3 runs and 3 records beside them

    again = Recorded()
    report = copy_store(source, target, append=True, progress=again)
    assert report.runs_already_there == 6
    assert again.done == again.total == 21  # skipped run records count too: the bar completes


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



class Recording(InMemoryStore):
    """An in-process store that records which history reads it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, ...]] = []

    def history(self, agent, session_id, include_inactive=False):
        self.calls.append(("history", agent, session_id))
        return super().history(agent, session_id, include_inactive)

    def history_page(self, agent, session_id, after_seq, limit, include_inactive=False):
        self.calls.append(("history_page", agent, session_id, after_seq, limit))
        return super().history_page(agent, session_id, after_seq, limit, include_inactive)

    def sessions(self, agent=None):
        self.calls.append(("sessions", agent))
        return super().sessions(agent)

    def sessions_page(self, agent, after, limit):
        self.calls.append(("sessions_page", agent, after, limit))
        return super().sessions_page(agent, after, limit)


def long_session(store, count: int = 1200) -> None:
    """One session longer than two pages, with a fold kept inactive in the middle of a page boundary."""
    written = []
    for start in range(0, count, 300):
        written += store.append(AGENT, "long", [user(f"m{i}") for i in range(start, min(start + 300, count))])
    store.fold(AGENT, "long", summary_of(written[450].seq, written[520].seq), first_seq=written[450].seq,
               last_seq=written[520].seq, expected_count=71, delete=False)


def summary_of(first: int, last: int):
    from helpers.transfer_helpers import summary

    return summary("a page-crossing fold", first, last, last - first)


def history_reads(store: Recording) -> tuple[int, int]:
    return sum(c[0] == "history" for c in store.calls), sum(c[0] == "history_page" for c in store.calls)


def test_export_and_copy_read_page_by_page_never_the_whole_history(tmp_path):
    source = Recording()
    fill(source)
    long_session(source)
    out = io.StringIO()
    export_jsonl(source, out)
    whole, pages = history_reads(source)
    assert whole == 0 and pages == 3 + 3  # three small sessions, one page each; the long one (1,201 stored) in three
    assert all(c[4] == 500 for c in source.calls if c[0] == "history_page")
    long_cursors = [c[3] for c in source.calls if c[2] == "long"]
    assert long_cursors[0] is None and long_cursors == sorted(long_cursors, key=lambda s: -1 if s is None else s)

    source.calls.clear()
    target = Recording()
    copy_store(source, target)
    assert history_reads(source) == (0, 6)
    assert history_reads(target)[0] == 0  # the end-of-copy check pages too
    assert snapshot(target) == snapshot(source)

    source.calls.clear()
    imported = Recording()
    import_export(imported, read_export(io.StringIO(out.getvalue())))
    assert history_reads(imported)[0] == 0 and snapshot(imported) == snapshot(source)


def test_export_and_copy_read_the_listing_a_page_at_a_time(tmp_path):
    source = Recording()
    for i in range(1100):
        source.append("b" if i % 2 else "a", f"s{i:04}", [user(str(i))])
    for agent in ("a", "b"):
        source.save_run(RunRecord(run_id=f"run-{agent}", agent=agent, session_id="s0000", created_at=utcnow()), expected_version=None)

    def listing_reads() -> list[tuple]:
        reads = [c for c in source.calls if c[0].startswith("sessions")]
        source.calls.clear()
        return reads

    out = io.StringIO()
    assert export_jsonl(source, out).sessions == 1100
    reads = listing_reads()
    assert [c[0] for c in reads] == ["sessions_page"] * 3 and {c[3] for c in reads} == {500}  # 500, 500, 100: never the whole listing
    kinds = [(line["kind"], line.get("agent") or line["record"]["agent"]) for line in map(json.loads, out.getvalue().splitlines())]
    assert kinds == [("message", "a")] * 550 + [("run", "a")] + [("message", "b")] * 550 + [("run", "b")]  # each agent's runs after its sessions

    done = export_sqlite(source, tmp_path / "all.db")
    assert (done.sessions, done.messages, done.runs) == (1100, 1100, 2)
    assert [c[0] for c in listing_reads()] == ["sessions_page"] * 3
    assert export_jsonl(source, io.StringIO(), agent="b", session_id="s0001").sessions == 1
    assert [c[1] for c in listing_reads()] == ["b", "b"]  # one agent's listing: 550 in two pages

    target = Recording()
    copy_store(source, target)
    assert [c[0] for c in listing_reads()] == ["sessions_page"] * 3
    assert not any(c[0] == "sessions" for c in target.calls)  # the destination's check pages too
    assert snapshot(target) == snapshot(source)


def test_import_reads_interleaved_sessions_and_refuses_seqs_out_of_order(source, tmp_path):
    out = io.StringIO()
    export_jsonl(source, out)
    lines = out.getvalue().splitlines()
    messages = [line for line in lines if '"kind":"message"' in line]
    s1 = [line for line in messages if '"session_id":"s1"' in line and f'"agent":"{AGENT}"' in line]
    rest = [line for line in lines if line not in s1]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(s1[:3] + rest[:2] + s1[3:] + rest[2:]) + "\n")
    target = InMemoryStore()
    import_export(target, read_export(mixed))
    assert snapshot(target) == snapshot(source)

    swapped = tmp_path / "swapped.jsonl"
    swapped.write_text("\n".join([s1[1], s1[0]] + s1[2:]) + "\n")
    with pytest.raises(TransferError, match="swapped.jsonl, line 2: seq 2 .* must be in seq order"):
        read_export(swapped)


def test_seq_map_answers_as_a_full_list_would_and_stays_small():
    import bisect
    import random

    from omnisync.stores.seq_map import SeqMap

    rng = random.Random(7)
    olds, news, old, new = [], [], 0, 0
    for _ in range(3000):
        old += rng.choice([2, 2, 2, 2, 1, 4])  # messages, now and then a summary or a gap
        new += 2 if rng.random() < 0.9 else 1
        olds.append(old)
        news.append(new)
    seqs = SeqMap()
    for pair in zip(olds, news):
        seqs.add(*pair)

    def expected(value, up):
        if up:
            i = bisect.bisect_left(olds, value)
            return news[i] if i < len(olds) else news[-1] + 2
        i = bisect.bisect_right(olds, value) - 1
        return news[i] if i >= 0 else news[0]

    for value in range(0, old + 5):
        assert seqs.new_seq(value, up=True) == expected(value, True), value
        assert seqs.new_seq(value, up=False) == expected(value, False), value
    unchanged = SeqMap()
    for value in range(2, 200_000, 2):
        unchanged.add(value, value)
    assert len(unchanged) == 1


def test_a_run_with_many_events_moves_them_all_a_bounded_page_at_a_time(source, tmp_path):
    events = [("text_delta", {"run_id": "run-wait", "text": f"piece {i}"}) for i in range(2500)]
    for start in range(0, len(events), 700):
        source.append_events(AGENT, "run-wait", events[start : start + 700])
    path = tmp_path / "many.jsonl"
    export_jsonl(source, path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    batches = [(line["first"], len(line["events"])) for line in lines if line["kind"] == "run_events" and line["run_id"] == "run-wait"]
    assert batches == [(1, 1000), (1001, 1000), (2001, 500)]  # one bounded read of the store each
    imported, copied = InMemoryStore(), InMemoryStore()
    assert import_export(imported, read_export(path)).events == 2503
    assert copy_store(source, copied).events == 2503
    assert snapshot(imported) == snapshot(copied) == snapshot(source)


def test_events_are_skipped_with_a_run_that_is_already_there(source):
    target = InMemoryStore()
    copy_store(source, target)
    report = copy_store(source, target, append=True)
    assert report.runs_already_there == 6 and report.events == 0
    assert len(target.read_events(AGENT, "run-done")) == 3  # not appended twice


RUN_LINE = '{"kind": "run", "record": {"run_id": "r", "agent": "a", "session_id": "s", "status": "completed"}}'


@pytest.mark.parametrize(
    "lines, problem",
    [
        (['{"kind": "run_events", "agent": "a", "run_id": "r", "first": 1, "events": [["x", {}]]}'], "must follow its run line"),
        ([RUN_LINE, '{"kind": "run_events", "agent": "a", "run_id": "r", "first": 2, "events": [["x", {}]]}'], "start at id 2, after 0"),
        ([RUN_LINE, '{"kind": "run_events", "agent": "a", "run_id": "r", "first": 1, "events": [["x", "text"]]}'], "each event must be \\[name, data\\]"),
        ([RUN_LINE, '{"kind": "run_events", "agent": "a", "run_id": "r", "first": 0, "events": [["x", {}]]}'], "first must be the id"),
    ],
)
def test_a_bad_events_line_is_refused_by_its_number_before_anything_is_written(tmp_path, lines, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TransferError, match=f"bad.jsonl, line {len(lines)}: .*{problem}"):
        read_export(path)



def test_undone_messages_stay_inactive_through_an_export_and_a_copy():
    source = InMemoryStore()
    source.append(AGENT, "u", [user("kept"), user("undone 1"), user("undone 2"), user("after")])
    source.deactivate(AGENT, "u", first_seq=4, last_seq=6, expected_count=2)
    source.append(AGENT, "u", [user("undone at the end")])
    source.deactivate(AGENT, "u", first_seq=10, last_seq=10, expected_count=1)
    stored = [(m.seq, m.content, m.status) for m in source.history(AGENT, "u", include_inactive=True)]
    out = io.StringIO()
    export_jsonl(source, out)
    imported = InMemoryStore()
    import_export(imported, read_export(io.StringIO(out.getvalue()), name="backup"))
    copied = InMemoryStore()
    copy_store(source, copied)
    for target in (imported, copied):
        assert [(m.seq, m.content, m.status) for m in target.history(AGENT, "u", include_inactive=True)] == stored
