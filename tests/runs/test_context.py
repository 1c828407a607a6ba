from omnisync.agent_config import AgentConfig, ContextConfig
from omnisync.context import SHORTENED_NOTE, fit_context, price
from omnisync.tokens import estimate_tokens, message_tokens

import pytest
from omnisync import ConfigurationError

SYSTEM = {"role": "system", "content": "be brief"}


def exchange(call_id, result):
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def total(messages):
    return sum(message_tokens(estimate_tokens, m) for m in messages)


def fit(system, history, current, config):
    """fit_context on plain chat messages, each counted by the estimator."""
    priced = [[price(estimate_tokens, m) for m in messages] for messages in (history, current)]
    fitted = fit_context(price(estimate_tokens, system), *priced, config, estimate_tokens)
    assert all(m.tokens == message_tokens(estimate_tokens, m.chat) for m in fitted)  # every count is the message's own
    return [m.chat for m in fitted]


def test_under_budget_nothing_changes():
    history = [{"role": "user", "content": "hi"}]
    current = [{"role": "user", "content": "again"}]
    assert fit(SYSTEM, history, current, ContextConfig()) == [SYSTEM, *history, *current]


def test_old_tool_results_are_shortened_first():
    config = ContextConfig(max_context_tokens=400, reserve_output_tokens=100, min_tool_result_chars=20)
    current = [{"role": "user", "content": "go"}, *exchange("a", "word " * 200), *exchange("b", "small")]
    history = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}]
    fitted = fit(SYSTEM, history, current, config)
    assert fitted[1:3] == history  # history kept: shortening was enough
    assert fitted[-3]["content"].endswith(SHORTENED_NOTE) and len(fitted[-3]["content"]) < 100
    assert fitted[-1]["content"] == "small" and total(fitted) <= config.budget


def test_then_the_oldest_history_goes_never_splitting_an_exchange():
    config = ContextConfig(max_context_tokens=120, reserve_output_tokens=20)
    history = [{"role": "user", "content": "old " * 30}, *exchange("x", "r " * 30), {"role": "user", "content": "recent"}]
    current = [{"role": "user", "content": "newest question"}]
    fitted = fit(SYSTEM, history, current, config)
    assert fitted[0] == SYSTEM and fitted[-1] == current[0]
    assert fitted[1]["role"] != "tool"
    kept = fitted[1:-1]
    assert kept == history[len(history) - len(kept):] and total(fitted) <= config.budget


def test_system_and_newest_user_message_survive_even_over_budget():
    config = ContextConfig(max_context_tokens=20, reserve_output_tokens=10)
    current = [{"role": "user", "content": "x " * 100}]
    assert fit(SYSTEM, [{"role": "user", "content": "a"}], current, config) == [SYSTEM, *current]


def test_context_management_is_validated():
    assert AgentConfig.from_dict({"context_management": {"max_context_tokens": 32000}}).context.budget == 24000
    with pytest.raises(ConfigurationError, match="reserve_output_tokens must be smaller"):
        AgentConfig.from_dict({"context_management": {"max_context_tokens": 1000, "reserve_output_tokens": 1000}})
    with pytest.raises(ConfigurationError, match="Unknown context_management key"):
        AgentConfig.from_dict({"context_management": {"limit": 3}})


def test_estimator_counts_every_script_sensibly():
    assert estimate_tokens("我的项目叫阿特拉斯") == 9  # a CJK character is about a token
    assert 8 <= estimate_tokens("My project is called Atlas and it ships on Friday.") <= 16
    assert estimate_tokens("") == 0


def test_default_counter_never_downloads(monkeypatch, tmp_path):
    from omnisync import tokens

    tokens._offline_tiktoken.cache_clear()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache: tiktoken would have to download
    tiktoken = pytest.importorskip("tiktoken")  # installed by the test extra
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: pytest.fail("tried to load an encoding"))
    assert tokens.default_counter("gpt-4o") is tokens.estimate_tokens
    tokens._offline_tiktoken.cache_clear()


def test_without_tiktoken_the_estimator_counts(monkeypatch):
    import sys

    from omnisync import tokens

    tokens._offline_tiktoken.cache_clear()
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # as if it were not installed
    assert tokens.default_counter("gpt-4o") is tokens.estimate_tokens
    tokens._offline_tiktoken.cache_clear()
