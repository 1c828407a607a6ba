"""Windows and summaries: the page's example shape, policies, failures that lose nothing."""

import logging

import pytest

from omnisync import MemoryRouter
from omnisync.messages import SUMMARY_PREFIX
from helpers.agent_helpers import echo, make_agent
from helpers.fake_http import completion, install

PAGE_MESSAGES = [
    "My project is called Atlas.",
    "It ships on Friday.",
    "The team is Ada, Grace and Linus.",
    "Who is on the team, and what is the project called?",
]


def window_agent(value=4, policy="keep", router=None, mode="sliding_window", name="assistant", enabled=True):
    config = {"memory_config": {"mode": mode, "value": value, "summary": {"enabled": enabled, "retention_policy": policy}}}
    return make_agent(name, router, agent_config=config)


def test_the_pages_example_ends_with_the_summary_then_the_three_latest(monkeypatch):
    http = install(monkeypatch, echo)
    agent = window_agent()
    for message in PAGE_MESSAGES:
        result = agent.run(message, session_id="user_123")
    history = agent.get_session_history("user_123")  # waits for the pending fold: no sleep
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[0]["content"].startswith(f"{SUMMARY_PREFIX} ")
    assert [m["content"] for m in history[1:]] == [
        "echo: The team is Ada, Grace and Linus.",
        "Who is on the team, and what is the project called?",
        "echo: Who is on the team, and what is the project called?",
    ]
    assert result["response"] == history[-1]["content"]
    summary_calls = [b for b in http.sent if b["messages"][0]["content"].startswith("You write the running summary")]
    assert len(summary_calls) == 2  # one fold after run 3, one after run 4 (which folded the first summary in)
    assert "[CONVERSATION SUMMARY]" in summary_calls[1]["messages"][1]["content"]
    # The last run was given summary + 3 kept messages + its question: the window of 4 plus the new message.
    last_run = [b for b in http.sent if b not in summary_calls][-1]
    assert len(last_run["messages"]) == 1 + 4 + 1 and last_run["messages"][1]["content"].startswith(SUMMARY_PREFIX)
    agent.cleanup()


def test_keep_leaves_the_originals_inactive_and_readable(monkeypatch):
    install(monkeypatch, echo)
    agent = window_agent(policy="keep")
    for message in PAGE_MESSAGES:
        agent.run(message, session_id="s")
    everything = agent.get_session_history("s", include_inactive=True)
    originals = [m for m in everything if not m["summary"]]
    assert len(originals) == 8 and sum(m["status"] == "inactive" for m in originals) == 5
    assert [m["summary"] for m in everything if m["status"] == "active"] == [True, False, False, False]
    assert [m["seq"] for m in everything] == sorted(m["seq"] for m in everything)


def test_delete_removes_the_originals_in_the_fold(monkeypatch):
    install(monkeypatch, echo)
    agent = window_agent(policy="delete")
    for message in PAGE_MESSAGES:
        agent.run(message, session_id="s")
    everything = agent.get_session_history("s", include_inactive=True)
    assert len(everything) == 4 and everything[0]["summary"] and all(m["status"] == "active" for m in everything)


def cut_off(text):
    body = completion(text)
    body["choices"][0]["finish_reason"] = "length"
    return body


FAILED_SUMMARIES = {
    "error": lambda: (500, {"error": {"message": "summary down"}}, {}),
    "empty": lambda: completion("   "),
    "only the prefix": lambda: completion(f"{SUMMARY_PREFIX}  "),
    "cut off by the output limit": lambda: cut_off("The user said one and"),
}


@pytest.mark.parametrize("failure", list(FAILED_SUMMARIES))
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # KNOWN LEAK, open: at the lowest floors a summary thread's pooled socket is collected unclosed (CI, session 8)
def test_a_failed_summary_changes_nothing_and_the_next_run_retries(monkeypatch, caplog, failure):
    state = {"fail": True}

    def model(body):
        if body["messages"][0]["content"].startswith("You write the running summary") and state["fail"]:
            return FAILED_SUMMARIES[failure]()
        return echo(body)

    install(monkeypatch, model)
    agent = window_agent(value=2)
    with caplog.at_level(logging.WARNING, logger="omnisync"):
        agent.run("one", session_id="s")
        agent.run("two", session_id="s")
        history = agent.get_session_history("s", include_inactive=True)
    assert len(history) == 4 and all(m["status"] == "active" and not m["summary"] for m in history)
    assert any("summary of session 's'" in r.getMessage() and "nothing changed" in r.getMessage() for r in caplog.records)
    state["fail"] = False
    agent.run("three", session_id="s")
    active = agent.get_session_history("s")
    assert active[0]["content"].startswith(SUMMARY_PREFIX) and len(active) == 2
    assert len(agent.get_session_history("s", include_inactive=True)) == 7  # 6 originals + 1 summary


def test_a_store_failing_mid_fold_loses_nothing(monkeypatch, caplog):
    install(monkeypatch, echo)
    with MemoryRouter("sql", url="sqlite://") as router:
        agent = window_agent(value=2, router=router)

        def broken_fold(*args, **kwargs):
            raise RuntimeError("disk full")

        monkeypatch.setattr(router.store, "fold", broken_fold)
        with caplog.at_level(logging.WARNING, logger="omnisync"):
            for message in ("one", "two", "three"):
                agent.run(message, session_id="s")
            history = agent.get_session_history("s", include_inactive=True)
        assert [m["content"] for m in history if m["role"] == "user"] == ["one", "two", "three"]
        assert all(m["status"] == "active" for m in history)
        assert "disk full" in caplog.text


def test_without_summary_older_messages_are_left_out_and_nothing_is_written(monkeypatch):
    http = install(monkeypatch, echo)
    agent = window_agent(value=2, enabled=False)
    for message in ("one", "two", "three"):
        agent.run(message, session_id="s")
    assert [m["content"] for m in http.sent[-1]["messages"]] == ["You are a test.", "two", "echo: two", "three"]
    assert len(agent.get_session_history("s", include_inactive=True)) == 6
    assert len(http.sent) == 3


def test_token_budget_window_and_summary(monkeypatch):
    http = install(monkeypatch, echo)
    agent = window_agent(mode="token_budget", value=60)
    for i in range(6):
        agent.run(f"message {i} " + "word " * 10, session_id="s")
    active = agent.get_session_history("s")
    assert active[0]["content"].startswith(SUMMARY_PREFIX)
    run_calls = [b for b in http.sent if not b["messages"][0]["content"].startswith("You write")]
    from omnisync.tokens import estimate_tokens, message_tokens

    for body in run_calls:
        history = body["messages"][1:-1]
        assert sum(message_tokens(estimate_tokens, m) for m in history) <= 60


def test_agents_sharing_a_router_keep_their_own_windows(monkeypatch):
    http = install(monkeypatch, echo)
    with MemoryRouter("sql", url="sqlite://") as router:
        small = window_agent(value=2, router=router, name="small", enabled=False)
        large = window_agent(value=100, router=router, name="large", enabled=False)
        for message in ("a", "b", "c"):
            small.run(message, session_id="s")
            large.run(message, session_id="s")
        assert len(http.sent[-2]["messages"]) == 1 + 2 + 1
        assert len(http.sent[-1]["messages"]) == 1 + 4 + 1


def test_cleanup_waits_for_a_pending_fold(monkeypatch):
    install(monkeypatch, echo)
    with MemoryRouter("sql", url="sqlite://") as router:
        agent = window_agent(value=2, router=router)
        for message in ("one", "two"):
            agent.run(message, session_id="s")
        agent.cleanup()
        summaries = [m for m in router.store.history("assistant", "s") if m.is_summary]
        assert len(summaries) == 1


# --- the summary's own settings ---------------------------------------------------------------


def summary_calls(http):
    return [b for b in http.sent if b["messages"][0]["content"] != "You are a test."]


def test_a_summary_call_sends_a_limit_that_fits_a_summary_by_default(monkeypatch):
    http = install(monkeypatch, echo)
    agent = window_agent(value=2)
    for message in ("one", "two"):
        agent.run(message, session_id="s")
    agent.get_session_history("s")
    (call,) = summary_calls(http)
    assert call["max_tokens"] == 512 and call["model"] == "test-model"
    assert all("max_tokens" not in body for body in http.sent if body is not call)  # the runs' own limit stays unset
    agent.cleanup()


def test_a_summary_takes_its_own_limit_model_and_instructions(monkeypatch):
    def model(body):
        if body["messages"][0]["content"] == "Sum it up in one line.":
            return completion("one and two were said")
        return echo(body)

    http = install(monkeypatch, model)
    summary = {"enabled": True, "max_tokens": 96, "model": "small-summarizer", "instructions": "Sum it up in one line."}
    agent = make_agent(agent_config={"memory_config": {"mode": "sliding_window", "value": 2, "summary": summary}})
    for message in ("one", "two"):
        agent.run(message, session_id="s")
    history = agent.get_session_history("s")
    (call,) = summary_calls(http)
    assert (call["model"], call["max_tokens"], call["messages"][0]["content"]) == ("small-summarizer", 96, "Sum it up in one line.")
    assert history[0]["content"] == f"{SUMMARY_PREFIX} one and two were said"
    assert all(body["model"] == "test-model" for body in http.sent if body is not call)
    agent.cleanup()
