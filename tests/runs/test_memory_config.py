import pytest

from omnisync import ConfigurationError
from omnisync.memory_config import MemoryConfig


def test_defaults():
    assert MemoryConfig.from_dict(None) == MemoryConfig("sliding_window", 10_000, False, "keep")


def test_a_partial_config_keeps_the_other_defaults():
    config = MemoryConfig.from_dict({"value": 50})
    assert (config.mode, config.value, config.summary_enabled) == ("sliding_window", 50, False)
    assert config.max_messages == 50 and config.max_tokens is None


def test_a_given_summary_replaces_the_default_and_missing_keys_take_the_summarizer_default():
    config = MemoryConfig.from_dict({"summary": {"enabled": True}})
    assert config.summary_enabled and config.retention_policy == "keep"
    assert MemoryConfig.from_dict({"mode": "token_budget", "value": 300}).max_tokens == 300


def test_invalid_mode_text_is_the_pages_and_always_in_the_same_order():
    with pytest.raises(ValueError) as caught:
        MemoryConfig.from_dict({"mode": "window"})
    assert str(caught.value) == "Invalid memory mode: window. Must be one of {'sliding_window', 'token_budget'}."


@pytest.mark.parametrize(
    "config,text",
    [
        ({"value": 0}, "value must be a positive whole number"),
        ({"value": "10"}, "value must be a positive whole number"),
        ({"value": True}, "value must be a positive whole number"),
        ({"size": 3}, "Unknown memory_config key(s): size. Allowed: mode, value, summary"),
        ({"summary": {"enabled": True, "policy": "keep"}}, "Allowed: enabled, retention_policy, max_tokens, model, instructions"),
        ({"summary": {"retention_policy": "archive"}}, "Invalid retention_policy: archive. Must be one of: keep, delete"),
        ({"summary": {"enabled": "yes"}}, "enabled must be True or False"),
        ({"summary": True}, "summary must be a dict"),
        ([1], "memory_config must be a dict"),
    ],
)
def test_bad_memory_config_says_what_exists(config, text):
    with pytest.raises(ConfigurationError) as caught:
        MemoryConfig.from_dict(config)
    assert text in str(caught.value)


def test_a_summary_has_its_own_limit_and_takes_a_model_and_instructions():
    assert MemoryConfig.from_dict({"summary": {"enabled": True}}).summary_max_tokens == 512
    config = MemoryConfig.from_dict({"summary": {"enabled": True, "max_tokens": 64, "model": "mini", "instructions": "Be short."}})
    assert (config.summary_max_tokens, config.summary_model, config.summary_instructions) == (64, "mini", "Be short.")


@pytest.mark.parametrize(
    "summary,text",
    [
        ({"max_tokens": 0}, "summary max_tokens must be a positive whole number of tokens a summary may take (default 512), not 0"),
        ({"max_tokens": 1.5}, "summary max_tokens must be a positive whole number"),
        ({"max_tokens": None}, "summary max_tokens must be a positive whole number"),
        ({"model": ""}, "summary model must be a non-empty string (a model name of the agent's endpoint; leave it out"),
        ({"model": 4}, "summary model must be a non-empty string"),
        ({"instructions": "  "}, "summary instructions must be a non-empty string (the summarizer's prompt; leave it out for the default)"),
        ({"temperature": 0}, "Allowed: enabled, retention_policy, max_tokens, model, instructions"),
    ],
)
def test_bad_summary_settings_say_what_to_give(summary, text):
    with pytest.raises(ConfigurationError) as caught:
        MemoryConfig.from_dict({"summary": {"enabled": True, **summary}})
    assert text in str(caught.value)
