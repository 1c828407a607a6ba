"""fork_session, undo, regenerate and search_history on every backend (docs/history.md)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest

from helpers.agent_helpers import echo, make_agent
from helpers.backend_routers import BACKENDS, open_router
from helpers.fake_http import completion, install
from omnisync.errors import ConfigurationError, SessionBusyError
from omnisync.messages import Message, utcnow
from omnisync.tools import ToolRegistry
from helpers.store_contract import summary_message, tool_exchange


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


@pytest.fixture
def name():
    return f"edit-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def agent(router, name, monkeypatch):
    install(monkeypatch, echo)
    with make_agent(name, router) as agent:
        yield agent


def chat(agent, session_id, include_inactive=False):
    return [(m["role"], m["content"]) for m in agent.get_session_history(session_id, include_inactive=include_inactive)]


def seqs(agent, session_id):
    return [(m["seq"], m["role"], m["status"]) for m in agent.get_session_history(session_id, include_inactive=True)]


# --- fork -------------------------------------------------------------------------------


def test_fork_copies_up_to_the_message_and_leaves_the_source_as_it_was(agent):
    for text in ("one", "two", "three"):
        agent.run(text, session_id="src")
    before = seqs(agent, "src")
    second_reply = before[3][0]
    fork = agent.fork_session("src", at=second_reply, new_session_id="branch")
    assert fork == "branch"
    assert chat(agent, "branch") == [("user", "one"), ("assistant", "echo: one"), ("user", "two"), ("assistant", "echo: two")]
    assert seqs(agent, "branch") == before[:4]  # same seqs
    agent.run("another way", session_id="branch")
    assert chat(agent, "branch")[-2:] == [("user", "another way"), ("assistant", "echo: another way")]
    assert seqs(agent, "src") == before and chat(agent, "src")[-1] == ("assistant", "echo: three")
    whole = agent.fork_session("src")
    assert whole != "src" and chat(agent, whole) == chat(agent, "src")


def test_fork_at_a_tool_call_moves_to_the_exchange_end(agent, router, name):
    store = router.store
    store.append(name, "tools", [Message(role="user", content="look it up")] + tool_exchange("c", results=2) + [Message(role="assistant", content="done")])
    history = seqs(agent, "tools")
    call, first_result, last_result = history[1][0], history[2][0], history[3][0]
    for at in (call, first_result):
        fork = agent.fork_session("tools", at=at)
        assert [s for s, _, _ in seqs(agent, fork)] == [history[0][0], call, first_result, last_result]


def test_fork_refuses_half_an_exchange_an_inactive_message_a_taken_id_and_an_unknown_seq(agent, router, name):
    store = router.store
    store.append(name, "half", [Message(role="user", content="go")] + tool_exchange("h", results=2)[:2])
    call = seqs(agent, "half")[1][0]
    with pytest.raises(ConfigurationError, match="does not have all its results"):
        agent.fork_session("half", at=call)
    agent.run("hi", session_id="s")
    agent.run("again", session_id="s")
    agent.undo("s")
    undone = seqs(agent, "s")[-1][0]
    with pytest.raises(ConfigurationError, match="inactive"):
        agent.fork_session("s", at=undone)
    with pytest.raises(ConfigurationError, match="already holds messages"):
        agent.fork_session("s", new_session_id="half")
    with pytest.raises(ConfigurationError, match="no message at seq 999"):
        agent.fork_session("s", at=999)
    with pytest.raises(ConfigurationError, match="no committed messages"):
        agent.fork_session("never-used")
    assert chat(agent, "half")[0] == ("user", "go")  # nothing lost


def test_fork_carries_summaries_and_inactive_messages_as_they_are(agent, router, name):
    store = router.store
    store.append(name, "long", [Message(role="user", content=f"m{i}", tokens=7) for i in range(4)])
    store.fold(name, "long", summary_message("of m0 and m1"), first_seq=2, last_seq=4, expected_count=2, delete=False)
    agent.run("after", session_id="long")
    agent.run("undone", session_id="long")
    agent.undo("long")
    fork = agent.fork_session("long")
    source = agent.get_session_history("long", include_inactive=True)
    copied = agent.get_session_history(fork, include_inactive=True)
    assert [(m["role"], m["content"], m["status"], m["summary"]) for m in copied] == [
        (m["role"], m["content"], m["status"], m["summary"]) for m in source
    ]
    assert [m.tokens for m in store.history(name, fork, include_inactive=True)] == [m.tokens for m in store.history(name, "long", include_inactive=True)]


# --- undo and regenerate ------------------------------------------------------------------


def test_undo_makes_the_last_run_inactive_and_keeps_it(agent):
    agent.run("first", session_id="u")
    agent.run("second", session_id="u")
    undone = agent.undo("u")
    assert [(m["role"], m["content"], m["status"]) for m in undone] == [("user", "second", "inactive"), ("assistant", "echo: second", "inactive")]
    assert chat(agent, "u") == [("user", "first"), ("assistant", "echo: first")]
    assert chat(agent, "u", include_inactive=True)[2:] == [("user", "second"), ("assistant", "echo: second")]
    agent.undo("u")
    assert chat(agent, "u") == []
    with pytest.raises(ConfigurationError, match="no run to undo"):
        agent.undo("u")
    agent.run("fresh", session_id="u")
    assert chat(agent, "u") == [("user", "fresh"), ("assistant", "echo: fresh")]


def test_undo_takes_a_whole_tool_exchange(agent, router, name):
    router.store.append(name, "t", [Message(role="user", content="q")] + tool_exchange("x", results=2) + [Message(role="assistant", content="a")])
    assert [m["role"] for m in agent.undo("t")] == ["user", "assistant", "tool", "tool", "assistant"]
    assert chat(agent, "t") == []


def test_undo_refuses_a_run_folded_into_a_summary(agent, router, name):
    store = router.store
    store.append(name, "f", [Message(role="user", content="a"), Message(role="assistant", content="b")])
    store.fold(name, "f", summary_message(), first_seq=2, last_seq=4, expected_count=2, delete=False)
    with pytest.raises(ConfigurationError, match="folded into a summary"):
        agent.undo("f")
    assert len(chat(agent, "f")) == 1


def test_regenerate_runs_the_same_message_again_with_a_record_of_its_own(agent, router, name, monkeypatch):
    answers = iter(["first answer", "second answer"])
    install(monkeypatch, lambda body: completion(next(answers)))
    with make_agent(name, router) as fresh:
        first = fresh.run("pick a name", session_id="r")
        second = fresh.regenerate("r")
        assert second["response"] == "second answer" and second["run_id"] != first["run_id"]
        assert chat(fresh, "r") == [("user", "pick a name"), ("assistant", "second answer")]
        stored = [(m["content"], m["status"]) for m in fresh.get_session_history("r", include_inactive=True)]
        assert stored == [("pick a name", "inactive"), ("first answer", "inactive"), ("pick a name", "active"), ("second answer", "active")]
        assert {r["run_id"] for r in fresh.list_runs(session_id="r")} == {first["run_id"], second["run_id"]}


def _approval_tools() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    return tools


def test_a_paused_run_refuses_undo_and_is_left_out_of_a_fork(router, name, monkeypatch):
    call = {"id": "call-1", "type": "function", "function": {"name": "delete_file", "arguments": json.dumps({"path": "/tmp/x"})}}
    answers = iter([completion("hello"), completion(None, tool_calls=[call])])
    install(monkeypatch, lambda body: next(answers))
    with make_agent(name, router, local_tools=_approval_tools()) as agent:
        agent.run("hi", session_id="p")
        paused = agent.run("delete it", session_id="p")
        assert paused["status"] == "awaiting_approval"
        with pytest.raises(SessionBusyError, match="awaiting_approval") as refused:
            agent.undo("p")
        assert refused.value.paused
        fork = agent.fork_session("p")
        assert chat(agent, fork) == [("user", "hi"), ("assistant", "hello")]
        everything = seqs(agent, "p")
        with pytest.raises(SessionBusyError, match="still going"):
            agent.fork_session("p", at=everything[-1][0])
        agent.cancel_run(paused["run_id"])
        assert agent.undo("p")[0]["content"] == "delete it"
        assert chat(agent, "p") == [("user", "hi"), ("assistant", "hello")]


def test_messages_added_or_deleted_outside_a_run_wait_for_no_run_and_are_refused_while_one_holds_the_session(router, name, monkeypatch):
    call = {"id": "call-1", "type": "function", "function": {"name": "delete_file", "arguments": json.dumps({"path": "/tmp/x"})}}
    answers = iter([completion("hello"), completion(None, tool_calls=[call])])
    install(monkeypatch, lambda body: next(answers))
    with make_agent(name, router, local_tools=_approval_tools()) as agent:
        agent.run("hi", session_id="a")
        added = agent.add_messages("a", [{"role": "user", "content": "a note"}, {"role": "assistant", "content": "noted"}])
        assert [(m["role"], m["content"]) for m in added] == [("user", "a note"), ("assistant", "noted")]
        assert [m["seq"] for m in added] == [s for s, _, _ in seqs(agent, "a")][-2:] and all(m["status"] == "active" for m in added)
        assert agent.delete_message("a", added[0]["seq"]) is True and agent.delete_message("a", added[0]["seq"]) is False
        assert chat(agent, "a") == [("user", "hi"), ("assistant", "hello"), ("assistant", "noted")]
        paused = agent.run("delete it", session_id="a")
        assert paused["status"] == "awaiting_approval"
        before = seqs(agent, "a")
        with pytest.raises(SessionBusyError, match="awaiting_approval"):
            agent.add_messages("a", [{"role": "user", "content": "in the middle of a tool exchange"}])
        with pytest.raises(SessionBusyError, match="awaiting_approval"):
            agent.delete_message("a", added[1]["seq"])
        assert seqs(agent, "a") == before  # nothing written, nothing deleted
        with pytest.raises(ConfigurationError, match="list of Chat Completions message dicts"):
            agent.add_messages("a", "not a list")


# --- search ---------------------------------------------------------------------------------

CORPUS = {
    "trip": [
        "We fly to Lisbon on Friday; pack the blue umbrella.",
        "Lisbon hotels near the river are cheaper in November.",
        "Remember: the umbrella is in the car.",
    ],
    "work": [
        "The quarterly report is due on Friday.",
        "Café meeting at 9: bring the report, s'il vous plaît!",
        "金曜日に会議があります",
        "ÜBER große Straße",
    ],
}


@pytest.fixture
def corpus(agent, router, name):
    for session_id, texts in CORPUS.items():
        router.store.append(name, session_id, [Message(role="user", content=t) for t in texts])
    router.store.append(f"{name}-other", "trip", [Message(role="user", content="Lisbon Lisbon Lisbon umbrella Friday report")])
    return agent


def _found(hits):
    return [(h["session_id"], h["snippet"]) for h in hits]


def test_search_finds_every_term_best_first_in_this_agent_only(corpus):
    hits = corpus.search_history("lisbon")
    assert {h["session_id"] for h in hits} == {"trip"} and len(hits) == 2
    assert hits[0]["score"] >= hits[1]["score"]
    both = corpus.search_history("Friday umbrella")
    assert _found(both) == [("trip", "We fly to Lisbon on Friday; pack the blue umbrella.")]
    assert both[0]["role"] == "user" and both[0]["created_at"] and isinstance(both[0]["seq"], int)
    report = corpus.search_history("report")
    assert [h["session_id"] for h in report] == ["work", "work"]
    assert corpus.search_history("report", session_id="trip") == []
    assert len(corpus.search_history("friday", limit=1)) == 1


def test_search_folds_case_width_and_punctuation_and_reads_unicode(corpus):
    assert _found(corpus.search_history("CAFÉ")) == [("work", "Café meeting at 9: bring the report, s'il vous plaît!")]
    assert _found(corpus.search_history("plaît!!")) == _found(corpus.search_history("café"))
    assert _found(corpus.search_history("会議")) == [("work", "金曜日に会議があります")]
    assert _found(corpus.search_history("über STRASSE")) == [("work", "ÜBER große Straße")]  # case-folded: ß is ss
    assert _found(corpus.search_history("große")) == [("work", "ÜBER große Straße")]
    assert _found(corpus.search_history("ｆｒｉｄａｙ report")) == [("work", "The quarterly report is due on Friday.")]  # full width


@pytest.mark.parametrize(
    "query",
    ["", "   ", "!!!", "*", '"', "' OR 1=1; DROP TABLE omnisync_messages; --", "NEAR(lisbon", "lisbon AND", "a\x00b", "%_", "{$ne: 1}", "x" * 5000],
)
def test_empty_and_hostile_queries_find_nothing_harmful(corpus, query):
    hits = corpus.search_history(query)
    assert all(h["session_id"] in CORPUS for h in hits)
    assert len(corpus.search_history("lisbon")) == 2  # the store still answers, nothing lost


def test_search_bounds_by_time_and_refuses_bad_arguments(corpus):
    now = utcnow()
    assert len(corpus.search_history("lisbon", before=now + timedelta(seconds=5))) == 2
    assert corpus.search_history("lisbon", after=now + timedelta(seconds=5)) == []
    with pytest.raises(ConfigurationError, match="limit"):
        corpus.search_history("lisbon", limit=0)
    with pytest.raises(ConfigurationError, match="timezone-aware"):
        corpus.search_history("lisbon", before=now.replace(tzinfo=None))


def test_undone_messages_are_not_found_and_a_fork_is_searchable(agent):
    agent.run("zebra crossing", session_id="z")
    assert len(agent.search_history("zebra")) == 2
    agent.undo("z")
    assert agent.search_history("zebra") == []
    agent.run("zebra again", session_id="z")
    fork = agent.fork_session("z")
    assert sorted(h["session_id"] for h in agent.search_history("zebra again")) == sorted(["z", "z", fork, fork])
