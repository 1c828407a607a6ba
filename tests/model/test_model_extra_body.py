"""extra_body: a server's own options merged into every request body, checked when the config is built."""

from __future__ import annotations

import json

import pytest

from omnisync import ConfigurationError, OmniCoreAgent
from omnisync.model.client import ChatClient
from omnisync.model.config import SAMPLING_OPTIONS, ModelConfig
from omnisync.model.extra_body import SET_BY_OMNISYNC
from helpers.agent_helpers import LOCAL_MODEL
from helpers.fake_http import completion, install
from helpers.fake_stream import install as install_streaming
from helpers.openapi import VENDORED_PATH, OpenAPI

LLAMA_CPP = {"top_k": 40, "min_p": 0.05, "grammar": 'root ::= "yes" | "no"', "cache_prompt": True}
HELLO = [{"role": "user", "content": "hello"}]


def named_fields() -> set[str]:
    """The request fields OpenAI's description names (CreateChatCompletionRequest and what it is built from)."""
    schemas = json.loads(VENDORED_PATH.read_text())["components"]["schemas"]

    def fields(schema: dict) -> set[str]:
        found = set(schema.get("properties", {}))
        for part in schema.get("allOf", []):
            found |= fields(schemas[part["$ref"].rsplit("/", 1)[1]] if "$ref" in part else part)
        return found

    return fields(schemas["CreateChatCompletionRequest"])


def test_extra_body_goes_into_every_request_and_the_request_still_fits_openais_description(monkeypatch):
    http = install(monkeypatch, [completion()])  # the adapter validates each body against the vendored description
    agent = OmniCoreAgent(name="local", system_instruction="s", model_config={**LOCAL_MODEL, "extra_body": LLAMA_CPP, "temperature": 0.1})
    agent.run("hello")
    agent.cleanup()
    (body,) = http.sent
    assert {name: body[name] for name in LLAMA_CPP} == LLAMA_CPP and body["temperature"] == 0.1 and body["model"] == "test-model"
    # the description allows fields it does not name (no additionalProperties: false); these four are the extra ones
    assert set(body) - named_fields() == set(LLAMA_CPP)
    assert OpenAPI().errors("CreateChatCompletionRequest", body) == []


def test_a_call_adds_its_own_extra_body_to_the_configs_streamed_too(monkeypatch):
    from helpers.fake_stream import Streamed, chunk, sse

    http = install_streaming(monkeypatch, [completion(), Streamed(sse([chunk("hi"), chunk(finish_reason="stop")]))])
    chat = ChatClient(ModelConfig.from_dict({**LOCAL_MODEL, "extra_body": {"top_k": 40, "min_p": 0.05}}))
    chat.complete(HELLO, extra_body={"top_k": 5, "cache_prompt": True})
    with chat.stream(HELLO, extra_body={"grammar": "root ::= [a-z]+"}) as stream:
        list(stream)
    assert [{k: body.get(k) for k in ("top_k", "min_p", "cache_prompt", "grammar")} for body in http.sent] == [
        {"top_k": 5, "min_p": 0.05, "cache_prompt": True, "grammar": None},
        {"top_k": 40, "min_p": 0.05, "cache_prompt": None, "grammar": "root ::= [a-z]+"},
    ]
    assert http.sent[1]["stream"] is True
    with pytest.raises(ConfigurationError, match="extra_body cannot set 'messages'"):
        chat.complete(HELLO, extra_body={"messages": []})
    assert len(http.sent) == 2  # refused before anything was sent


@pytest.mark.parametrize("name", sorted(SET_BY_OMNISYNC))
def test_a_field_omnisync_sets_is_refused_when_built_naming_it_and_what_to_do(name):
    with pytest.raises(ConfigurationError, match=rf"model_config extra_body cannot set '{name}': omnisync sets it on every request \(.+\)"):
        ModelConfig.from_dict({**LOCAL_MODEL, "extra_body": {name: "x"}})


@pytest.mark.parametrize("name", SAMPLING_OPTIONS)
def test_a_sampling_option_is_refused_pointing_at_its_own_model_config_key(name):
    with pytest.raises(ConfigurationError, match=rf"cannot set '{name}': it is a model_config option of its own; pass model_config '{name}' instead"):
        ModelConfig.from_dict({**LOCAL_MODEL, "extra_body": {name: 1}})


@pytest.mark.parametrize(
    "value,message",
    [
        (["top_k"], "must be a dict of a server's own options"),
        ({"": 1}, "names must be non-empty strings"),
        ({"top_k": float("nan")}, "must hold JSON values"),
        ({"grammar": object()}, "must hold JSON values"),
    ],
)
def test_extra_body_that_is_not_a_dict_of_json_is_refused(value, message):
    with pytest.raises(ConfigurationError, match=message):
        ModelConfig.from_dict({**LOCAL_MODEL, "extra_body": value})


def test_with_options_adds_to_extra_body_and_none_removes_a_name():
    base = ModelConfig.from_dict({**LOCAL_MODEL, "extra_body": {"top_k": 40, "min_p": 0.05}})
    derived = base.with_options(extra_body={"min_p": None, "cache_prompt": True})
    assert derived.extra_body == {"top_k": 40, "cache_prompt": True} and base.extra_body == {"top_k": 40, "min_p": 0.05}
    assert "extra_body={'top_k': '***', 'min_p': '***'}" in repr(base)
    with pytest.raises(ConfigurationError, match="cannot set 'stream'"):
        base.with_options(extra_body={"stream": False})
