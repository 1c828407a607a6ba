"""The store contract, stated once. Every backend's test module subclasses StoreContract.

A subclass provides a ``store`` fixture (a fresh, empty store); a backend that several
processes can share subclasses SharedStoreContract and also provides ``store_opener``.
"""

from __future__ import annotations

import multiprocessing
import threading
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omnisync.errors import ConfigurationError, NotSerializableError, RunConflictError, StoreError
from omnisync.messages import INACTIVE, SUMMARY_PREFIX, Message, utcnow
from omnisync.run_record import AWAITING_APPROVAL, COMPLETED, FOLD, SESSION, RunRecord
from omnisync.stores.base import run_cursor

AGENT = "assistant"


def user(text: str, tokens: int = 10) -> Message:
    return Message(role="user", content=text, tokens=tokens)


def reply(text: str, tokens: int = 10) -> Message:
    return Message(role="assistant", content=text, tokens=tokens)


def tool_exchange(call_id: str, results: int = 1) -> list[Message]:
    calls = [
        {"id": f"{call_id}-{i}", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
        for i in range(results)
    ]
    exchange = [Message(role="assistant", content=None, tool_calls=calls, tokens=10)]
    exchange += [Message(role="tool", content=f"result {i}", tool_call_id=f"{call_id}-{i}", tokens=10) for i in range(results)]
    return exchange


def contents(messages: list[Message]) -> list[str | None]:
    return [m.content for m in messages]


def content_parts() -> list[dict]:
    """A user message's parts: text, an image by data URL and by URL, audio and a file."""
    return [
        {"type": "text", "text": "What is in this picture? 金曜日"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}},
        {"type": "file", "file": {"filename": "notes.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"}},
    ]


def summary_message(text: str = "the gist") -> Message:
    return Message(role="user", content=f"{SUMMARY_PREFIX} {text}", metadata={"summary": {"model": "test"}}, tokens=5)


def _record(run_id: str = "r1", session_id: str = "s", agent: str = AGENT) -> RunRecord:
    return RunRecord(run_id=run_id, agent=agent, session_id=session_id, created_at=utcnow())


BAD_ID_CALLS = {
    "append agent": ("agent", lambda store, bad: store.append(bad, "s", [user("x")])),
    "append session": ("session_id", lambda store, bad: store.append(AGENT, bad, [user("x")])),
    "append tool_call_id": ("tool_call_id", lambda store, bad: store.append(AGENT, "s", [user("x"), Message(role="tool", content="r", tool_call_id=bad)])),
    "append name": ("name", lambda store, bad: store.append(AGENT, "s", [Message(role="tool", content="r", tool_call_id="c", name=bad)])),
    "append run_id": ("run_id", lambda store, bad: store.append(AGENT, "s", [Message(role="user", content="x", run_id=bad)])),
    "latest": ("session_id", lambda store, bad: store.latest(AGENT, bad, 5)),
    "window": ("session_id", lambda store, bad: store.window(AGENT, bad, max_messages=5)),
    "history": ("session_id", lambda store, bad: store.history(AGENT, bad)),
    "history_page": ("agent", lambda store, bad: store.history_page(bad, "s", None, 5)),
    "iter_history": ("session_id", lambda store, bad: list(store.iter_history(AGENT, bad))),
    "clear": ("session_id", lambda store, bad: store.clear(AGENT, bad)),
    "clear agent": ("agent", lambda store, bad: store.clear(bad)),
    "sessions": ("agent", lambda store, bad: store.sessions(bad)),
    "sessions_page cursor": ("after", lambda store, bad: store.sessions_page(None, (AGENT, bad), 5)),
    "fold": ("session_id", lambda store, bad: store.fold(AGENT, bad, summary_message(), first_seq=1, last_seq=3, expected_count=1, delete=False)),
    "save_run": ("record.run_id", lambda store, bad: store.save_run(_record(run_id=bad), None)),
    "save_run session": ("record.session_id", lambda store, bad: store.save_run(_record(session_id=bad), None)),
    "save_runs": ("saves.agent", lambda store, bad: store.save_runs([(_record(agent=bad), None)])),
    "load_run": ("run_id", lambda store, bad: store.load_run(AGENT, bad)),
    "load_lease": ("run_id", lambda store, bad: store.load_lease(AGENT, bad)),
    "list_runs": ("session_id", lambda store, bad: store.list_runs(AGENT, session_id=bad)),
    "runs_page": ("session_id", lambda store, bad: store.runs_page(AGENT, session_id=bad)),
    "runs_page cursor": ("after run_id", lambda store, bad: store.runs_page(AGENT, (utcnow(), bad))),
    "prune_runs": ("agent", lambda store, bad: store.prune_runs(bad, utcnow())),
    "append_events": ("run_id", lambda store, bad: store.append_events(AGENT, bad, [("e", {})])),
    "read_events": ("run_id", lambda store, bad: store.read_events(AGENT, bad)),
    "load_lease_and_window": ("session_id", lambda store, bad: store.load_lease_and_window(AGENT, "lease", bad, max_messages=5)),
    "append_and_save_run": ("record.run_id", lambda store, bad: store.append_and_save_run(AGENT, "s", [user("x")], _record(run_id=bad), None)),
}
"""Each method of the contract given one bad id: the field its error names, and the call."""


class StoreContract:
    """What every MemoryStore promises. Subclasses supply the ``store`` fixture."""

    # --- ordering and windows ---------------------------------------------------------

    def test_append_assigns_increasing_seq_in_order(self, store):
        first = store.append(AGENT, "s", [user("a"), reply("b")])
        second = store.append(AGENT, "s", [user("c")])
        seqs = [m.seq for m in first + second]
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert contents(store.history(AGENT, "s")) == ["a", "b", "c"]
        assert all(m.created_at is not None and m.created_at.tzinfo is not None for m in first)

    def test_window_is_latest_n_oldest_first(self, store):
        store.append(AGENT, "s", [user(str(i)) for i in range(30)])
        assert contents(store.window(AGENT, "s", max_messages=5)) == ["25", "26", "27", "28", "29"]
        assert len(store.window(AGENT, "s", max_messages=100)) == 30

    def test_latest_pages_backwards(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(10)])
        page = store.latest(AGENT, "s", 3, before_seq=written[5].seq)
        assert contents(page) == ["4", "3", "2"]

    def test_token_window_stays_within_budget(self, store):
        store.append(AGENT, "s", [user(str(i), tokens=30) for i in range(20)])
        window = store.window(AGENT, "s", max_tokens=100)
        assert contents(window) == ["17", "18", "19"]
        assert sum(m.tokens for m in window) <= 100

    def test_token_window_reads_past_one_page(self, store):
        store.append(AGENT, "s", [user(str(i), tokens=1) for i in range(600)])
        assert len(store.window(AGENT, "s", max_tokens=550)) == 550

    def test_window_never_splits_a_tool_exchange(self, store):
        store.append(AGENT, "s", [user("q")])
        store.append(AGENT, "s", tool_exchange("call", results=3))
        store.append(AGENT, "s", [reply("done")])
        window = store.window(AGENT, "s", max_messages=3)
        assert [m.role for m in window] == ["assistant"]  # the two results without their call are left out
        assert window[0].content == "done"
        whole = store.window(AGENT, "s", max_messages=5)
        assert [m.role for m in whole] == ["assistant", "tool", "tool", "tool", "assistant"]

    def test_tool_fields_round_trip(self, store):
        store.append(AGENT, "s", tool_exchange("c1", results=2))
        call, *results = store.history(AGENT, "s")
        assert call.tool_calls[0]["function"] == {"name": "lookup", "arguments": '{"q": "x"}'}
        assert call.content is None
        assert [r.tool_call_id for r in results] == ["c1-0", "c1-1"]
        assert call.to_chat() == {"role": "assistant", "content": None, "tool_calls": call.tool_calls}

    def test_returned_messages_are_copies(self, store):
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        written = store.append("copies", "s", [Message(role="assistant", content="hi", tool_calls=[call], metadata={"tags": ["a"]})])
        written[0].metadata["tags"].append("changed")
        read = store.latest("copies", "s", 5)[0]
        read.metadata["tags"].append("changed too")
        read.tool_calls[0]["id"] = "changed"
        read.content = "changed"
        again = store.history("copies", "s")[0]
        assert (again.content, again.metadata, again.tool_calls[0]["id"]) == ("hi", {"tags": ["a"]}, "c1")

    @pytest.mark.parametrize("unstorable", [{"tags": {"a", "b"}}, {"when": object()}])
    def test_data_json_cannot_hold_is_refused_before_anything_is_written(self, store, unstorable):
        store.append("json", "s", [Message(role="user", content="kept")])
        with pytest.raises(NotSerializableError, match="must be JSON data") as refused:
            store.append("json", "s", [Message(role="user", content="first of two"), Message(role="user", content="x", metadata=unstorable)])
        assert isinstance(refused.value, StoreError)
        assert [m.content for m in store.history("json", "s")] == ["kept"]

    def test_round_trip_unicode_large_and_nested_metadata(self, store):
        big = "x" * (1024 * 1024)
        text = "Atlas ships 金曜日 🚀 — naïve \u0000 end" if self.supports_nul else "Atlas ships 金曜日 🚀 — naïve end"
        metadata = {"nested": {"list": [1, 2, {"deep": "ü"}], "flag": True, "none": None}}
        store.append(AGENT, "s", [Message(role="user", content=text, metadata=metadata, name="ada", run_id="r1", tokens=7)])
        store.append(AGENT, "s", [reply(big)])
        stored, large = store.history(AGENT, "s")
        assert (stored.content, stored.metadata, stored.name, stored.run_id, stored.tokens) == (text, metadata, "ada", "r1", 7)
        assert large.content == big

    supports_nul = True

    # --- content parts --------------------------------------------------------------------

    def test_content_parts_round_trip_exactly(self, store):
        """A user message of parts reads back as the same list, in every read, active or folded; text stays text."""
        parts = content_parts()
        looks_like_parts = '[{"type": "text", "text": "a string, not parts"}]'
        store.append(AGENT, "s", [Message(role="user", content=parts, tokens=800), reply("a cat"), user(looks_like_parts)])
        history = store.history(AGENT, "s")
        assert [m.content for m in history] == [parts, "a cat", looks_like_parts]
        assert [list(p) for p in history[0].content] == [list(p) for p in parts]  # key order kept
        assert history[0].metadata == {} and history[0].tokens == 800
        assert history[0].to_chat() == {"role": "user", "content": parts}
        assert store.latest(AGENT, "s", 3)[-1].content == parts
        assert store.window(AGENT, "s", max_messages=3)[0].content == parts
        history[0].content[0]["text"] = "changed by a reader"
        parts[1]["image_url"]["detail"] = "changed by the writer"
        store.fold(AGENT, "s", summary_message(), first_seq=history[0].seq, last_seq=history[1].seq, expected_count=2, delete=False)
        folded = store.history(AGENT, "s", include_inactive=True)
        assert [(m.status, m.content) for m in folded if not m.is_summary][0] == (INACTIVE, content_parts())


    # --- isolation and clearing ---------------------------------------------------------

    def test_agents_are_isolated(self, store):
        store.append("alpha", "s", [user("from alpha")])
        store.append("beta", "s", [user("from beta")])
        assert contents(store.history("alpha", "s")) == ["from alpha"]
        assert contents(store.window("beta", "s", max_messages=10)) == ["from beta"]

    def test_clear_one_session(self, store):
        store.append(AGENT, "one", [user("1")])
        store.append(AGENT, "two", [user("2")])
        assert store.clear(AGENT, "one") == 1
        assert store.history(AGENT, "one") == []
        assert contents(store.history(AGENT, "two")) == ["2"]

    def test_clear_all_sessions_of_one_agent_only(self, store):
        store.append(AGENT, "one", [user("1")])
        store.append(AGENT, "two", [user("2")])
        store.append("other", "one", [user("kept")])
        assert store.clear(AGENT) == 2
        assert store.sessions(AGENT) == []
        assert contents(store.history("other", "one")) == ["kept"]

    def test_clearing_an_unknown_id_clears_nothing(self, store):
        store.append(AGENT, "one", [user("1")])
        assert store.clear(AGENT, "no-such-session") == 0
        assert contents(store.history(AGENT, "one")) == ["1"]

    def test_delete_one_message_of_a_session(self, store):
        first, middle, last = store.append(AGENT, "s", [user("1"), reply("2"), user("3")])
        store.append(AGENT, "other", [user("kept")])
        assert store.delete_message(AGENT, "s", middle.seq) is True
        assert contents(store.history(AGENT, "s", include_inactive=True)) == ["1", "3"]
        assert store.delete_message(AGENT, "s", middle.seq) is False  # gone already
        assert store.delete_message(AGENT, "no-such-session", first.seq) is False
        assert store.delete_message(AGENT, "s", last.seq) is True  # the newest: its seq is not taken again
        [fresh] = store.append(AGENT, "s", [user("4")])
        assert fresh.seq > last.seq
        assert contents(store.history(AGENT, "s")) == ["1", "4"] and contents(store.history(AGENT, "other")) == ["kept"]
        assert [s.message_count for s in store.sessions(AGENT) if s.session_id == "s"] == [2]

    def test_seq_keeps_growing_after_clear(self, store):
        [old] = store.append(AGENT, "s", [user("old")])
        store.clear(AGENT, "s")
        [fresh] = store.append(AGENT, "s", [user("new")])
        store.clear(AGENT)
        [newest] = store.append(AGENT, "s", [user("newest")])
        assert contents(store.history(AGENT, "s")) == ["newest"]
        assert old.seq < fresh.seq < newest.seq  # a run record's seq range never points at newer messages

    def test_unsafe_session_ids_are_stored_as_themselves(self, store):
        ids = ["a:b", "*", "with space", "日本語", "a*b?[c]", "{$gt: ''}", "..", "%_"]
        for session_id in ids:
            store.append(AGENT, session_id, [user(session_id)])
        for session_id in ids:
            assert contents(store.history(AGENT, session_id)) == [session_id]
        assert store.clear(AGENT, "*") == 1
        assert contents(store.history(AGENT, "a*b?[c]")) == ["a*b?[c]"]
        assert sorted(s.session_id for s in store.sessions(AGENT)) == sorted(set(ids) - {"*"})

    def test_sessions_lists_counts_and_activity(self, store):
        store.append(AGENT, "one", [user("1"), reply("2")])
        store.append("other", "x", [user("3")])
        [info] = store.sessions(AGENT)
        assert (info.agent, info.session_id, info.message_count) == (AGENT, "one", 2)
        assert info.last_activity is not None
        assert {s.agent for s in store.sessions()} == {AGENT, "other"}

    # --- paging through the sessions -------------------------------------------------

    # Ids that sort differently under a case-folding or accent-aware collation, or by UTF-16
    # code units (U+FFFF after U+1F600 there): every store sorts them by code point.
    PAGED_IDS = ["b", "B", "a", "A", "a b", "ab", "é", "e", "z", "Z", "日本", "\U0001f600", "\uffff", "-x", "_x"]
    PAGED_AGENTS = ["alpha", "Alpha", "ä"]

    def _paged_sessions(self, store):
        for agent in self.PAGED_AGENTS:
            for session_id in self.PAGED_IDS:
                store.append(agent, session_id, [user(f"{agent} {session_id}")] * (1 + len(session_id) % 3))
        store.clear("alpha", "e")
        store.clear("ä", "B")
        return sorted((a, s) for a in self.PAGED_AGENTS for s in self.PAGED_IDS if (a, s) not in (("alpha", "e"), ("ä", "B")))

    def test_session_pages_concatenate_to_the_listing_in_code_point_order(self, store):
        expected = self._paged_sessions(store)
        listed = store.sessions()
        assert [(s.agent, s.session_id) for s in listed] == expected
        for agent in [None, *self.PAGED_AGENTS, "nobody"]:
            whole = store.sessions(agent)
            assert whole == [s for s in listed if agent is None or s.agent == agent]
            for size in (1, 2, 3, 7, 100):
                assert list(store.iter_sessions(agent, page_size=size)) == whole, (agent, size)

    def test_a_page_of_sessions_starts_strictly_after_its_cursor(self, store):
        expected = self._paged_sessions(store)
        for limit in (1, 2):
            pages, after = [], None
            while True:
                page = store.sessions_page(None, after, limit)
                assert 0 < len(page) <= limit or (page == [] and after == expected[-1])
                if not page:
                    break
                pages.append([(s.agent, s.session_id) for s in page])
                after = pages[-1][-1]
            assert [key for page in pages for key in page] == expected
            assert all(len(page) == limit for page in pages[:-1])
        for i, cursor in enumerate(expected):
            page = store.sessions_page(None, cursor, 3)
            assert [(s.agent, s.session_id) for s in page] == expected[i + 1 : i + 4], cursor
        alphas = [s for a, s in expected if a == "alpha"]
        paged = lambda after, limit=100: [s.session_id for s in store.sessions_page("alpha", after, limit)]
        assert paged(("alpha", alphas[2])) == alphas[3:]
        assert paged(("alpha", "a c")) == [s for s in alphas if s > "a c"]  # a cursor between two ids
        assert paged(("alpha", alphas[-1])) == []
        assert paged(("Alpha", "\U0001f600"), 2) == alphas[:2]  # a cursor in an agent before: from the start
        assert paged(("alpha ", "")) == [] and paged(("ä", "a")) == []  # a cursor in an agent after: nothing
        rest = [(s.agent, s.session_id) for s in store.sessions_page(None, ("alpha", "zz"), 100)]
        assert rest == [key for key in expected if key > ("alpha", "zz")] and rest[0] == ("alpha", "é")

    def test_sessions_with_no_messages_are_left_out_of_every_page(self, store):
        for session_id in ("s1", "s2", "s3", "s4"):
            store.append(AGENT, session_id, [user(session_id)])
        store.append("other", "kept", [user("x")])
        store.clear(AGENT, "s2")
        store.clear(AGENT, "s3")
        for limit in (1, 2):
            assert [s.session_id for s in store.iter_sessions(AGENT, page_size=limit)] == ["s1", "s4"]
            assert [s.session_id for s in store.sessions_page(AGENT, (AGENT, "s1"), limit)] == ["s4"]
        store.clear(AGENT)
        assert store.sessions_page(AGENT, None, 1) == [] and list(store.iter_sessions(AGENT, page_size=1)) == []
        assert [(s.agent, s.session_id) for s in store.iter_sessions(page_size=1)] == [("other", "kept")]

    def test_a_session_appended_between_pages_is_listed_once(self, store):
        for session_id in ("b", "d", "f"):
            store.append(AGENT, session_id, [user(session_id)])
        seen = []
        for info in store.iter_sessions(AGENT, page_size=2):
            seen.append(info.session_id)
            if len(seen) == 1:  # inside the first page
                store.append(AGENT, "c", [user("c")])
            if len(seen) == 2:  # at its end: after the cursor, before it, and one already seen
                store.append(AGENT, "e", [user("e")])
                store.append(AGENT, "a", [user("a")])
                store.append(AGENT, "b", [user("b again")])
        assert seen == ["b", "d", "e", "f"]
        assert [s.session_id for s in store.sessions(AGENT)] == ["a", "b", "c", "d", "e", "f"]

    def test_a_page_of_fewer_than_one_session_is_refused(self, store):
        store.append(AGENT, "s", [user("x")])
        for limit in (0, -1):
            with pytest.raises(ValueError, match=r"limit must be .*at least 1.*pass the page size"):
                store.sessions_page(AGENT, None, limit)
        with pytest.raises(ValueError, match="page_size must be at least 1"):
            list(store.iter_sessions(AGENT, page_size=0))

    # --- summaries ----------------------------------------------------------------------

    def test_fold_keep_marks_originals_inactive_and_sorts_summary_first(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(6)])
        folded = store.fold(
            AGENT, "s", summary_message(), first_seq=written[0].seq, last_seq=written[3].seq, expected_count=4, delete=False
        )
        assert folded is not None and written[3].seq < folded.seq < written[4].seq
        assert contents(store.history(AGENT, "s")) == [folded.content, "4", "5"]
        everything = store.history(AGENT, "s", include_inactive=True)
        assert len(everything) == 7
        assert [m.status for m in everything if not m.is_summary] == [INACTIVE] * 4 + ["active"] * 2
        assert contents(store.window(AGENT, "s", max_messages=3)) == [folded.content, "4", "5"]

    def test_fold_delete_removes_originals(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(5)])
        store.fold(AGENT, "s", summary_message(), first_seq=written[0].seq, last_seq=written[2].seq, expected_count=3, delete=True)
        assert len(store.history(AGENT, "s", include_inactive=True)) == 3

    def test_fold_of_nothing_is_refused(self, store):
        store.append(AGENT, "s", [user("a")])
        assert store.fold(AGENT, "s", summary_message(), first_seq=100, last_seq=200, expected_count=0, delete=False) is None
        assert contents(store.history(AGENT, "s")) == ["a"]

    def test_fold_is_compare_and_set(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(5)])
        args = dict(first_seq=written[0].seq, last_seq=written[2].seq, expected_count=3, delete=False)
        assert store.fold(AGENT, "s", summary_message("one"), **args) is not None
        assert store.fold(AGENT, "s", summary_message("two"), **args) is None
        summaries = [m for m in store.history(AGENT, "s", include_inactive=True) if m.is_summary]
        assert contents(summaries) == [f"{SUMMARY_PREFIX} one"]

    def test_refold_absorbs_the_earlier_summary(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(4)])
        first = store.fold(AGENT, "s", summary_message("one"), first_seq=written[0].seq, last_seq=written[1].seq, expected_count=2, delete=False)
        more = store.append(AGENT, "s", [user("4"), user("5")])
        second = store.fold(AGENT, "s", summary_message("two"), first_seq=first.seq, last_seq=written[3].seq, expected_count=3, delete=False)
        assert second is not None
        active = store.history(AGENT, "s")
        assert contents(active) == [f"{SUMMARY_PREFIX} two", "4", "5"] and more[0].seq > second.seq

    # --- paging through a whole history -----------------------------------------------

    def test_history_page_reads_forward_from_a_cursor(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(7)])
        assert contents(store.history_page(AGENT, "s", None, 3)) == ["0", "1", "2"]
        assert contents(store.history_page(AGENT, "s", written[2].seq, 3)) == ["3", "4", "5"]
        assert contents(store.history_page(AGENT, "s", written[5].seq, 3)) == ["6"]
        assert store.history_page(AGENT, "s", written[6].seq, 3) == []
        assert contents(store.history_page(AGENT, "s", written[2].seq - 1, 2)) == ["2", "3"]  # a cursor between seqs

    def test_iter_history_matches_history_across_page_boundaries(self, store):
        store.append(AGENT, "s", [user(str(i)) for i in range(12)])
        for size in (1, 4, 5, 12, 13):
            paged = list(store.iter_history(AGENT, "s", page_size=size))
            assert contents(paged) == [str(i) for i in range(12)], size
            assert [m.seq for m in paged] == [m.seq for m in store.history(AGENT, "s")]

    def test_paging_with_and_without_inactive_messages(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(8)])
        summary = store.fold(AGENT, "s", summary_message(), first_seq=written[1].seq, last_seq=written[4].seq, expected_count=4, delete=False)
        everything = store.history(AGENT, "s", include_inactive=True)
        for size in (1, 2, 3, 9):
            paged = list(store.iter_history(AGENT, "s", include_inactive=True, page_size=size))
            assert [(m.seq, m.status, m.content) for m in paged] == [(m.seq, m.status, m.content) for m in everything], size
            active = list(store.iter_history(AGENT, "s", page_size=size))
            assert contents(active) == ["0", summary.content, "5", "6", "7"], size
        page = store.history_page(AGENT, "s", written[0].seq, 3, include_inactive=True)
        assert [(m.content, m.status) for m in page] == [("1", INACTIVE), ("2", INACTIVE), ("3", INACTIVE)]
        assert all(m.agent == AGENT and m.session_id == "s" and m.created_at is not None for m in page)

    def test_paging_an_empty_or_unknown_session(self, store):
        assert store.history_page(AGENT, "nobody", None, 10) == []
        assert store.history_page(AGENT, "nobody", 4, 10, include_inactive=True) == []
        assert list(store.iter_history(AGENT, "nobody", include_inactive=True)) == []
        store.append(AGENT, "s", [user("a")])
        store.clear(AGENT, "s")
        assert list(store.iter_history(AGENT, "s")) == []
        with pytest.raises(ValueError, match="page_size"):
            list(store.iter_history(AGENT, "s", page_size=0))

    def test_appending_while_paging_reads_nothing_twice(self, store):
        store.append(AGENT, "s", [user(str(i)) for i in range(6)])
        seen = []
        for message in store.iter_history(AGENT, "s", include_inactive=True, page_size=2):
            seen.append(message)
            if len(seen) in (1, 3, 5):  # between and inside pages, the writer adds two
                store.append(AGENT, "s", [user(f"late {len(seen)}a"), user(f"late {len(seen)}b")])
        seqs = [m.seq for m in seen]
        assert len(seqs) == len(set(seqs)) and seqs == sorted(seqs)
        assert contents(seen) == contents(store.history(AGENT, "s", include_inactive=True))
        assert len(seen) == 12

    # --- runs ---------------------------------------------------------------------------

    def _run(self, run_id="r1", session_id="s", **changes):
        return RunRecord(run_id=run_id, agent=AGENT, session_id=session_id, **{"created_at": utcnow(), **changes})

    def test_run_create_load_and_compare_and_set(self, store):
        saved = store.save_run(self._run(), expected_version=None)
        assert saved.version == 1 and store.load_run(AGENT, "r1") == saved
        with pytest.raises(RunConflictError):
            store.save_run(self._run(), expected_version=None)
        updated = store.save_run(saved.evolve(status=AWAITING_APPROVAL, step=2), expected_version=1)
        assert updated.version == 2
        with pytest.raises(RunConflictError):
            store.save_run(saved.evolve(step=9), expected_version=1)
        assert store.load_run(AGENT, "r1").step == 2
        assert store.load_run("other-agent", "r1") is None

    def test_run_fields_round_trip(self, store):
        record = self._run(
            pending_calls=[{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
            decisions={"c1": {"approved": False, "reason": "no"}},
            usage={"prompt_tokens": 3},
            loaded_seq=(2, 40),
            budget={"max_tool_calls": 2, "max_tokens": None},
        )
        loaded = store.load_run(AGENT, store.save_run(record, None).run_id)
        assert loaded.pending_calls == record.pending_calls and loaded.decisions == record.decisions
        assert loaded.loaded_seq == (2, 40) and loaded.budget == record.budget and loaded.created_at == record.created_at

    def test_list_runs_filters(self, store):
        store.save_run(self._run("a", status=COMPLETED), None)
        store.save_run(self._run("b", status=AWAITING_APPROVAL), None)
        store.save_run(self._run("c", session_id="other", status=AWAITING_APPROVAL), None)
        assert {r.run_id for r in store.list_runs(AGENT)} == {"a", "b", "c"}
        assert {r.run_id for r in store.list_runs(AGENT, status=AWAITING_APPROVAL)} == {"b", "c"}
        assert {r.run_id for r in store.list_runs(AGENT, session_id="other")} == {"c"}
        assert store.list_runs("nobody") == []

    def test_run_agents_lists_every_agent_with_runs_sessions_or_not(self, store):
        assert store.run_agents() == []
        store.append("talker", "s", [user("no runs")])
        store.save_run(self._run("a", status=COMPLETED), None)
        failed = RunRecord(run_id="down", agent="silent {*} ü", session_id="s", status="failed", created_at=utcnow())
        store.save_run(failed, None)  # a run whose model was down: no message, so no session
        assert store.run_agents() == sorted([AGENT, "silent {*} ü"])

    def test_prune_removes_only_old_finished_runs_of_this_agent(self, store):
        old = utcnow() - timedelta(days=40)
        store.save_run(self._run("old-done", status=COMPLETED, finished_at=old), None)
        store.save_run(self._run("new-done", status=COMPLETED, finished_at=utcnow()), None)
        store.save_run(self._run("paused", status=AWAITING_APPROVAL), None)
        other = RunRecord(run_id="theirs", agent="other", session_id="s", status=COMPLETED, finished_at=old, created_at=old)
        store.save_run(other, None)
        assert store.prune_runs(AGENT, utcnow() - timedelta(days=30)) == 1
        assert {r.run_id for r in store.list_runs(AGENT)} == {"new-done", "paused"}
        assert store.load_run("other", "theirs") is not None

    def test_a_lease_is_read_with_the_run_it_names_as_holder(self, store):
        assert store.load_lease(AGENT, "lease") == (None, None)
        free = store.save_run(self._run("lease"), None)
        assert store.load_lease(AGENT, "lease") == (free, None)
        held = store.save_run(free.evolve(lease_owner="holder"), free.version)
        assert store.load_lease(AGENT, "lease") == (held, None)  # its holder has no record yet
        holder = store.save_run(self._run("holder"), None)
        assert store.load_lease(AGENT, "lease") == (held, holder)
        theirs = RunRecord(run_id="holder", agent="other", session_id="s", created_at=utcnow())
        store.save_run(theirs, None)
        assert store.load_lease(AGENT, "lease")[1] == holder  # never another agent's run of that id
        assert store.load_lease("other", "lease") == (None, None)

    # --- pages of runs -----------------------------------------------------------------------

    def _paged_runs(self, store):
        """Runs of two sessions and statuses, ties in created_at among them, and between them
        many records of other kinds (leases, claims): what a page must skip."""
        start = utcnow().replace(microsecond=0) - timedelta(days=1)
        at = lambda i: start + timedelta(milliseconds=10 * i)
        runs = []
        for i in range(12):
            created = at(i // 3 * 3)  # three runs to each creation time
            run_id = f"run-{'cab'[i % 3]}{i:02}"
            record = self._run(run_id, session_id="s1" if i % 2 else "s2", status=AWAITING_APPROVAL if i % 4 == 0 else COMPLETED, created_at=created)
            runs.append(store.save_run(record, None))
            for k, kind in enumerate((SESSION, FOLD, "idempotency")):
                store.save_run(self._run(f"{kind}-{i:02}-{k}", session_id="s1", kind=kind, created_at=created), None)
        store.save_run(self._run("theirs", created_at=at(4)).evolve(agent="other"), None)
        return sorted(runs, key=lambda r: (r.created_at, r.run_id))

    def assert_every_filter_pages_alike(self, store, runs, sizes=(1, 2, 5, 100)):
        """Pages of every size, of each status and session, join up to ``runs`` filtered alike."""
        for status in (None, AWAITING_APPROVAL, COMPLETED, "failed"):
            for session_id in (None, "s1", "s2", "nowhere"):
                expected = [r.run_id for r in runs if status in (None, r.status) and session_id in (None, r.session_id)]
                for size in sizes:
                    paged = store.iter_runs(AGENT, status=status, session_id=session_id, page_size=size)
                    assert [r.run_id for r in paged] == expected, (status, session_id, size)

    def test_run_pages_concatenate_to_the_runs_oldest_first(self, store):
        runs = self._paged_runs(store)
        self.assert_every_filter_pages_alike(store, runs)
        assert [r.run_id for r in store.runs_page(AGENT)] == [r.run_id for r in runs]
        assert store.runs_page(AGENT, limit=3) == runs[:3]  # whole records, as saved
        assert store.runs_page("nobody") == []

    def test_a_page_of_runs_starts_strictly_after_its_cursor(self, store):
        runs = self._paged_runs(store)
        ids = [r.run_id for r in runs]
        for i, run in enumerate(runs):
            assert [r.run_id for r in store.runs_page(AGENT, run_cursor(run), 2)] == ids[i + 1 : i + 3], run.run_id
        first = runs[0]
        between = (first.created_at, first.run_id + "~")  # a cursor between two runs of one creation time
        assert [r.run_id for r in store.runs_page(AGENT, between)] == [r.run_id for r in runs if run_cursor(r) > between]
        before_all = (first.created_at - timedelta(seconds=1), "zzz")
        assert [r.run_id for r in store.runs_page(AGENT, before_all)] == ids
        assert store.runs_page(AGENT, (runs[-1].created_at + timedelta(seconds=1), "")) == []
        for i, run in enumerate(runs):
            awaiting = [r.run_id for r in runs[i + 1 :] if r.status == AWAITING_APPROVAL and r.session_id == "s2"]
            assert [r.run_id for r in store.runs_page(AGENT, run_cursor(run), 1, status=AWAITING_APPROVAL, session_id="s2")] == awaiting[:1]

    def test_a_run_created_between_pages_is_listed_once(self, store):
        early = utcnow() - timedelta(hours=1)
        for i, run_id in enumerate(("r1", "r2", "r3")):
            store.save_run(self._run(run_id, created_at=early + timedelta(seconds=i)), None)
        seen = []
        for record in store.iter_runs(AGENT, page_size=2):
            seen.append(record.run_id)
            if len(seen) == 2:  # at the end of the first page: a new run, and one before the cursor
                store.save_run(self._run("r4", created_at=utcnow()), None)
                store.save_run(self._run("r0", created_at=early - timedelta(seconds=1)), None)
                store.save_run(store.load_run(AGENT, "r1").evolve(status=COMPLETED), 1)  # an update keeps its place
        assert seen == ["r1", "r2", "r3", "r4"]
        assert [r.run_id for r in store.runs_page(AGENT)] == ["r0", "r1", "r2", "r3", "r4"]

    def test_every_record_beside_the_messages_is_read_in_pages_of_each_kind(self, store):
        self._paged_runs(store)
        store.save_run(self._run("idempotency-1", kind="idempotency"), None)
        held = lambda session_id=None: sorted(r.run_id for r in store.list_runs(AGENT, session_id=session_id))
        for size in (1, 7, 500):
            for session_id in (None, "s1", "s2"):
                records = [r.run_id for r in store.iter_records(AGENT, session_id=session_id, page_size=size)]
                assert sorted(records) == held(session_id) and len(records) == len(set(records)), (size, session_id)
        assert len(held()) == 12 * 4 + 1 and list(store.iter_records("nobody")) == []

    def test_a_page_of_fewer_than_one_run_is_refused(self, store):
        store.save_run(self._run(), None)
        for limit in (0, -1, True):
            with pytest.raises(ValueError, match=r"limit must be a whole number of runs, at least 1.*pass the page size"):
                store.runs_page(AGENT, None, limit)
        assert store.load_run(AGENT, "r1") is not None

    # --- what one run does, in few round trips ---------------------------------------------

    def test_lease_and_window_are_read_together_as_apart(self, store):
        store.append(AGENT, "s", [user("old"), *tool_exchange("c1"), reply("after the tool"), user("newest")])
        assert store.load_lease_and_window(AGENT, "lease", "s", max_messages=3) == (None, None, store.window(AGENT, "s", max_messages=3))
        assert contents(store.load_lease_and_window(AGENT, "lease", "s", max_messages=3)[2]) == ["after the tool", "newest"]  # no orphan result
        lease = store.save_run(self._run("lease", lease_owner="holder"), None)
        holder = store.save_run(self._run("holder"), None)
        read = store.load_lease_and_window(AGENT, "lease", "s", max_tokens=25)
        assert read == (lease, holder, store.window(AGENT, "s", max_tokens=25))
        assert store.load_lease_and_window(AGENT, "lease", "empty", max_messages=5) == (lease, holder, [])

    def test_save_runs_saves_each_in_order_or_raises_at_the_first_that_does_not_fit(self, store):
        lease = store.save_run(self._run("lease"), None)
        saved = store.save_runs([(lease.evolve(lease_owner="r1"), lease.version), (self._run("r1"), None)])
        assert [(r.run_id, r.version) for r in saved] == [("lease", 2), ("r1", 1)]
        assert store.load_run(AGENT, "lease") == saved[0] and store.load_run(AGENT, "r1") == saved[1]
        with pytest.raises(RunConflictError):
            store.save_runs([(saved[0].evolve(lease_owner="r2"), lease.version), (self._run("r2"), None)])
        assert store.load_run(AGENT, "lease") == saved[0] and store.load_run(AGENT, "r2") is None  # the first did not fit: nothing

    def test_append_and_save_run_writes_the_messages_and_fills_the_first_written_seq(self, store):
        store.append(AGENT, "s", [user("before")])
        record = store.save_run(self._run(), None)
        written, saved = store.append_and_save_run(AGENT, "s", [user("hi"), reply("hello")], record.evolve(status=COMPLETED), record.version)
        assert [m.seq for m in written] == [4, 6] and contents(store.history(AGENT, "s")) == ["before", "hi", "hello"]
        assert saved.first_written_seq == 4 and saved.version == 2 and store.load_run(AGENT, "r1") == saved
        _, again = store.append_and_save_run(AGENT, "s", [user("more")], saved.evolve(step=3), saved.version)
        assert again.first_written_seq == 4 and store.load_run(AGENT, "r1").step == 3  # a seq already known stays
        _, fresh = store.append_and_save_run(AGENT, "new session", [user("first")], self._run("r2", session_id="new session"), None)
        assert fresh.first_written_seq == 2 and [s.session_id for s in store.sessions(AGENT)] == ["new session", "s"]

    def test_append_and_save_run_with_a_stale_version_raises(self, store):
        record = store.save_run(self._run(), None)
        with pytest.raises(RunConflictError):
            store.append_and_save_run(AGENT, "s", [user("late")], record.evolve(status=COMPLETED), record.version + 5)
        assert store.load_run(AGENT, "r1") == record

    # --- a run's events -------------------------------------------------------------------

    def test_events_take_consecutive_ids_and_read_from_a_cursor(self, store):
        assert store.read_events(AGENT, "r1") == [] and store.append_events(AGENT, "r1", []) == 0
        assert store.append_events(AGENT, "r1", [("text_delta", {"text": "héllo"}), ("tool_call", {"args": {"n": [1, None]}})]) == 2
        assert store.append_events(AGENT, "r1", [("run_finished", {"result": {"status": "completed"}})]) == 3
        assert store.append_events(AGENT, "r1", []) == 3
        events = store.read_events(AGENT, "r1")
        assert [(e.id, e.name) for e in events] == [(1, "text_delta"), (2, "tool_call"), (3, "run_finished")]
        assert events[0].data == {"text": "héllo"} and events[1].data == {"args": {"n": [1, None]}}
        assert [e.id for e in store.read_events(AGENT, "r1", after=1, limit=1)] == [2]
        assert [e.id for e in store.read_events(AGENT, "r1", after=1)] == [2, 3]
        assert store.read_events(AGENT, "r1", after=3) == []
        assert store.read_events("other-agent", "r1") == [] and store.read_events(AGENT, "r2") == []
        assert store.append_events("other-agent", "r1", [("x", {})]) == 1

    def test_events_are_read_a_bounded_page_at_a_time(self, store):
        for batch in range(5):
            store.append_events(AGENT, "r1", [("text_delta", {"i": batch * 3 + i}) for i in range(3)])
        seen, after = [], 0
        while page := store.read_events(AGENT, "r1", after=after, limit=4):
            assert len(page) <= 4
            seen += [e.data["i"] for e in page]
            after = page[-1].id
        assert seen == list(range(15))
        with pytest.raises(ValueError):
            store.read_events(AGENT, "r1", after=-1)
        with pytest.raises(NotSerializableError):
            store.append_events(AGENT, "r1", [("x", {"bad": object()})])
        assert len(store.read_events(AGENT, "r1")) == 15

    def test_pruning_a_run_deletes_its_events(self, store):
        old = utcnow() - timedelta(days=40)
        store.save_run(self._run("old-done", status=COMPLETED, finished_at=old), None)
        store.save_run(self._run("paused", status=AWAITING_APPROVAL), None)
        for run_id in ("old-done", "paused"):
            store.append_events(AGENT, run_id, [("text_delta", {"text": run_id})])
        assert store.prune_runs(AGENT, utcnow() - timedelta(days=30)) == 1
        assert store.read_events(AGENT, "old-done") == []
        assert [e.data for e in store.read_events(AGENT, "paused")] == [{"text": "paused"}]

    def test_threads_appending_messages_to_one_session_lose_nothing(self, store):
        """Two drivers in one process race as two processes do (SharedStoreContract holds those)."""

        def work(name):
            for i in range(50):
                store.append(AGENT, "s", [user(f"{name}-{i}")])

        threads = [threading.Thread(target=work, args=(n,)) for n in "abcd"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = store.history(AGENT, "s")
        seqs = [m.seq for m in stored]
        assert len(seqs) == 200 and seqs == sorted(set(seqs))
        for name in "abcd":  # each writer's messages in the order it sent them
            assert [c for c in contents(stored) if c.startswith(f"{name}-")] == [f"{name}-{i}" for i in range(50)]

    def test_threads_appending_events_to_one_run_share_no_id(self, store):
        def work(name):
            for i in range(25):
                store.append_events(AGENT, "r1", [(name, {"i": i}), (name, {"i": i, "second": True})])

        threads = [threading.Thread(target=work, args=(n,)) for n in "abc"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        events = store.read_events(AGENT, "r1")
        assert [e.id for e in events] == list(range(1, 151))
        for name in "abc":  # each append's two events are consecutive, and a writer's appends in order
            mine = [e for e in events if e.name == name]
            assert [e.data["i"] for e in mine] == [i for i in range(25) for _ in (0, 1)]
        for first, second in zip(events[::2], events[1::2]):
            assert first.name == second.name and second.data.get("second")

    def test_clearing_history_keeps_run_records(self, store):
        store.append(AGENT, "s", [user("x")])
        store.save_run(self._run(), None)
        store.clear(AGENT)
        assert store.load_run(AGENT, "r1") is not None


    # --- identifiers ------------------------------------------------------------------

    @pytest.mark.parametrize("bad", ["nul\x00id", "lone \ud800 surrogate", "x" * 256, 7], ids=["nul", "surrogate", "too-long", "not-a-string"])
    @pytest.mark.parametrize("call", list(BAD_ID_CALLS))
    def test_an_id_no_store_can_keep_is_a_configuration_error_naming_it_before_anything_is_written(self, store, call, bad):
        field, use = BAD_ID_CALLS[call]
        store.append(AGENT, "s", [user("kept")])
        with pytest.raises(ConfigurationError, match=field) as refused:
            use(store, bad)
        assert isinstance(refused.value, ValueError)
        assert contents(store.history(AGENT, "s")) == ["kept"]
        assert [(i.agent, i.session_id, i.message_count) for i in store.sessions()] == [(AGENT, "s", 1)]
        assert store.list_runs(AGENT) == [] and store.read_events(AGENT, "r1") == []

    # Each backend's subclass runs it (differing executors by design); the store fixture is only read.
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors])
    @given(session_id=st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=300))
    def test_any_string_as_a_session_id_is_kept_as_itself_or_refused_typed(self, store, session_id):
        try:
            store.append("ids", session_id, [user("hello")])
        except ConfigurationError as refused:
            assert "session_id" in str(refused)
            return
        assert [(m.content, m.session_id) for m in store.history("ids", session_id)] == [("hello", session_id)]
        store.clear("ids", session_id)



    # --- fork, undo and search (omnisync/history_edit.py) -----------------------------------

    def test_copy_session_copies_up_to_a_seq_with_statuses_and_leaves_the_source(self, store):
        store.append(AGENT, "src", [user("a", tokens=3), reply("b", tokens=4), user("c"), reply("d")])
        store.fold(AGENT, "src", summary_message(), first_seq=2, last_seq=4, expected_count=2, delete=False)
        before = store.history(AGENT, "src", include_inactive=True)
        assert store.copy_session(AGENT, "src", "dst", last_seq=6) == 4
        copied = store.history(AGENT, "dst", include_inactive=True)
        assert [(m.seq, m.content, m.status, m.tokens, m.is_summary) for m in copied] == [
            (m.seq, m.content, m.status, m.tokens, m.is_summary) for m in before if m.seq <= 6
        ]
        assert {m.session_id for m in copied} == {"dst"}
        assert store.history(AGENT, "src", include_inactive=True) == before
        assert [m.seq for m in store.append(AGENT, "dst", [user("e")])] == [8]  # after the copy's seqs
        with pytest.raises(ConfigurationError, match="already holds messages"):
            store.copy_session(AGENT, "src", "dst", last_seq=6)
        assert contents(store.history(AGENT, "dst")) == ["[CONVERSATION SUMMARY] the gist", "c", "e"]

    def test_deactivate_is_a_compare_and_set(self, store):
        store.append(AGENT, "s", [user("a"), reply("b"), user("c")])
        assert not store.deactivate(AGENT, "s", first_seq=4, last_seq=6, expected_count=3)
        assert contents(store.history(AGENT, "s")) == ["a", "b", "c"]
        assert store.deactivate(AGENT, "s", first_seq=4, last_seq=6, expected_count=2)
        assert contents(store.history(AGENT, "s")) == ["a"]
        assert [m.status for m in store.history(AGENT, "s", include_inactive=True)] == ["active", INACTIVE, INACTIVE]
        assert not store.deactivate(AGENT, "s", first_seq=4, last_seq=6, expected_count=2)
        assert store.window(AGENT, "s", max_messages=5)[-1].content == "a"

    def test_search_finds_active_messages_of_one_agent_holding_every_term(self, store):
        store.append(AGENT, "s1", [user("red apples and green pears"), reply("apples apples apples")])
        store.append(AGENT, "s2", [user("green tea")])
        store.append("other-agent", "s1", [user("apples green")])
        found = store.search_messages(AGENT, ["apples"])
        assert [(f.message.session_id, f.message.content) for f in found] == [("s1", "apples apples apples"), ("s1", "red apples and green pears")]
        assert found[0].score > found[1].score
        assert [f.message.content for f in store.search_messages(AGENT, ["green", "apples"])] == ["red apples and green pears"]
        assert [f.message.content for f in store.search_messages(AGENT, ["green"], session_id="s2")] == ["green tea"]
        assert store.search_messages(AGENT, ["nothing"]) == [] and store.search_messages(AGENT, []) == []
        store.deactivate(AGENT, "s2", first_seq=2, last_seq=2, expected_count=1)
        assert store.search_messages(AGENT, ["tea"]) == []
        store.clear(AGENT, "s1")
        assert store.search_messages(AGENT, ["apples"]) == []
        assert store.reindex(AGENT) >= 0
        assert [f.message.content for f in store.search_messages("other-agent", ["apples"])] == ["apples green"]

class SharedStoreContract(StoreContract):
    """A store other processes can open too: subclasses also supply ``store_opener``,
    a picklable callable that opens the same store in another process."""

    def test_two_processes_appending_lose_nothing(self, store, store_opener):
        context = multiprocessing.get_context("spawn")
        workers = [context.Process(target=_append_many, args=(store_opener, name, 200)) for name in ("p1", "p2")]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=180)
            assert worker.exitcode == 0
        stored = store.history(AGENT, "shared")
        assert len(stored) == 400
        seqs = [m.seq for m in stored]
        assert seqs == sorted(seqs) and len(set(seqs)) == 400
        assert sorted(contents(stored)) == sorted(f"{p}-{i}" for p in ("p1", "p2") for i in range(200))


    def test_two_processes_appending_events_to_one_run_share_no_id(self, store, store_opener):
        context = multiprocessing.get_context("spawn")
        workers = [context.Process(target=_append_events_many, args=(store_opener, name, 50)) for name in ("p1", "p2")]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=180)
            assert worker.exitcode == 0
        events = store.read_events(AGENT, "shared")
        assert [e.id for e in events] == list(range(1, 201))
        for first, second in zip(events[::2], events[1::2]):  # an append's events stay together
            assert first.name == second.name and first.data["i"] == second.data["i"]
        for name in ("p1", "p2"):
            assert [e.data["i"] for e in events[::2] if e.name == name] == list(range(50))


    def test_two_processes_forking_and_appending_at_once_copy_whole_turns(self, store, store_opener):
        store.append(AGENT, "source", [user("q-start"), reply("a-start")])
        context = multiprocessing.get_context("spawn")
        appender = context.Process(target=_append_turns, args=(store_opener, 60))
        forker = context.Process(target=_fork_many, args=(store_opener, 12))
        for worker in (appender, forker):
            worker.start()
        for worker in (appender, forker):
            worker.join(timeout=300)
            assert worker.exitcode == 0
        source = contents(store.history(AGENT, "source"))
        assert len(source) == 122
        for i in range(12):
            forked = contents(store.history(AGENT, f"fork-{i}"))
            assert len(forked) % 2 == 0 and forked == source[: len(forked)], forked[-3:]  # whole turns, in order
        assert contents(store.history(AGENT, "source")) == source


def _append_turns(opener, count: int) -> None:
    store = opener()
    try:
        for i in range(count):
            store.append(AGENT, "source", [user(f"q{i}"), reply(f"a{i}")])
    finally:
        store.close()


def _fork_many(opener, count: int) -> None:
    from omnisync import history_edit

    store = opener()
    try:
        for i in range(count):
            history_edit.fork(store, AGENT, "source", None, f"fork-{i}")
    finally:
        store.close()


def _append_events_many(opener, name: str, count: int) -> None:
    store = opener()
    try:
        for i in range(count):
            store.append_events(AGENT, "shared", [(name, {"i": i}), (name, {"i": i, "second": True})])
    finally:
        store.close()


def _append_many(opener, name: str, count: int) -> None:
    store = opener()
    try:
        for i in range(count):
            store.append(AGENT, "shared", [user(f"{name}-{i}")])
    finally:
        store.close()


def make_old_schema(url: str, version: int) -> None:
    """The tables of schema ``version`` (1, 2 or 3) at ``url``, as those releases made them."""
    import sqlalchemy as sa

    from omnisync.stores.sql import schema as sql_schema

    old = sa.MetaData()
    for table in (sql_schema.schema_info, sql_schema.sessions) + ((sql_schema.run_events,) if version >= 2 else ()) + ((sql_schema.runs,) if version >= 3 else ()):
        table.to_metadata(old)
    sa.Table(  # before 4: no terms
        "omnisync_messages",
        old,
        *(column._copy() for column in sql_schema.messages.columns if column.name != "terms"),
        sa.PrimaryKeyConstraint("agent", "session_id", "seq"),
        sa.Index("ix_omnisync_messages_window", "agent", "session_id", "status", "seq"),
    )
    if version < 3:
        sa.Table(
            "omnisync_runs",
            old,
            sa.Column("agent", sa.String(255), nullable=False),
            sa.Column("run_id", sa.String(64), nullable=False),
            sa.Column("session_id", sa.String(255), nullable=False),
            sa.Column("status", sa.String(32), nullable=False),
            sa.Column("version", sa.Integer, nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True)),
            sa.Column("finished_at", sa.DateTime(timezone=True)),
            sa.Column("data", sa.Text, nullable=False),
            sa.PrimaryKeyConstraint("agent", "run_id"),
            sa.Index("ix_omnisync_runs_status", "agent", "status", "created_at"),
            sa.Index("ix_omnisync_runs_finished", "agent", "finished_at"),
        )
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            old.create_all(conn)
            conn.execute(old.tables["omnisync_schema"].insert().values(id=1, version=version))
    finally:
        engine.dispose()


def assert_upgrades(open_store, url: str, version: int) -> None:
    """``url`` holds a SQL schema of ``version`` (:func:`make_old_schema`): data written there
    is kept, and opening it with this release upgrades it and records the new version."""
    import sqlalchemy as sa

    from omnisync.stores.sql import schema as sql_schema

    made = utcnow() - timedelta(minutes=5)
    old_records = [
        RunRecord(run_id="r-old", agent=AGENT, session_id="s", status=COMPLETED, created_at=made),
        RunRecord(run_id="session-1", agent=AGENT, session_id="s", kind=SESSION, lease_owner="r-old", created_at=made),
        RunRecord(run_id="fold-1", agent=AGENT, session_id="s", kind=FOLD, status=COMPLETED, created_at=made),
    ]
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            assert conn.execute(sa.text("SELECT version FROM omnisync_schema")).scalar() == version
            assert sa.inspect(conn).has_table(sql_schema.run_events.name) == (version >= 2)
            conn.execute(sql_schema.messages.insert().values(
                agent=AGENT, session_id="s", seq=2, role="user", content="kept", status="active", tokens=1, created_at_us=0
            ))
            conn.execute(sql_schema.sessions.insert().values(agent=AGENT, session_id="s", last_seq=2, updated_at_us=0))
            for record in old_records:
                values = {"agent": AGENT, "run_id": record.run_id, "session_id": "s", "status": record.status, "version": 1}
                kind = ("kind, ", ":kind, ") if version >= 3 else ("", "")  # schema 3 wrote each record's kind
                if version >= 3:
                    values["kind"] = record.kind
                conn.execute(sa.text(
                    f"INSERT INTO omnisync_runs (agent, run_id, session_id, {kind[0]}status, version, created_at, data)"
                    f" VALUES (:agent, :run_id, :session_id, {kind[1]}:status, :version, :created_at, :data)"
                ).bindparams(sa.bindparam("created_at", type_=sa.DateTime(timezone=True))), {**values, "created_at": made, "data": record.evolve(version=1).to_json()})
        with open_store(url) as store:
            assert contents(store.history(AGENT, "s")) == ["kept"]
            assert [m.seq for m in store.append(AGENT, "s", [user("new")])] == [4]
            assert store.append_events(AGENT, "r1", [("text_delta", {"text": "x"})]) == 1
            assert [e.data for e in store.read_events(AGENT, "r1")] == [{"text": "x"}]
            assert [r.run_id for r in store.runs_page(AGENT)] == ["r-old"]  # the lease and the claim are not runs
            assert store.load_lease(AGENT, "session-1")[1].run_id == "r-old"
            store.save_run(RunRecord(run_id="r-new", agent=AGENT, session_id="s", created_at=utcnow()), None)
            assert [r.run_id for r in store.runs_page(AGENT)] == ["r-old", "r-new"]
            assert sorted(r.run_id for r in store.list_runs(AGENT)) == ["fold-1", "r-new", "r-old", "session-1"]
        with engine.begin() as conn:
            assert conn.execute(sa.select(sql_schema.schema_info.c.version)).scalar() == sql_schema.SCHEMA_VERSION == 4
            kinds = dict(conn.execute(sa.text("SELECT run_id, kind FROM omnisync_runs")).all())
            assert kinds == {"r-old": "run", "session-1": SESSION, "fold-1": FOLD, "r-new": "run"}
            indexes = {ix["name"] for ix in sa.inspect(conn).get_indexes("omnisync_runs")}
            assert indexes == {ix.name for ix in sql_schema.runs.indexes}, indexes
        with open_store(url) as store:  # opening it again changes nothing
            assert contents(store.history(AGENT, "s")) == ["kept", "new"]
            assert [f.message.content for f in store.search_messages(AGENT, ["kept"])] == ["kept"]  # indexed by the upgrade
            assert [r.run_id for r in store.runs_page(AGENT)] == ["r-old", "r-new"]
    finally:
        engine.dispose()
