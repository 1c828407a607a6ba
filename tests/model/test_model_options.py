"""Client options in model_config: headers, query, key, session, derived configs; the endpoint recipes of docs/models.md."""

from __future__ import annotations

import gc
import json
import logging
import re
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest
import requests

from omnisync import ConfigurationError, OmniCoreAgent
from omnisync.errors import AuthenticationError, NotFoundError
from omnisync.model.client import USER_AGENT, ChatClient
from omnisync.model.config import CLIENT_OPTIONS, SAMPLING_OPTIONS, ModelConfig
from omnisync.summaries import SUMMARY_INSTRUCTION
from helpers.agent_helpers import LOCAL_MODEL, echo, make_agent
from helpers.fake_http import ScriptedAdapter, completion, install
from helpers.openapi import OpenAPI

MODELS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "models.md"
REQUESTS_OWN = {name: value for name, value in requests.utils.default_headers().items() if name != "User-Agent"}
HELLO = {"role": "user", "content": "hello"}


class RecordingAdapter(ScriptedAdapter):
    """A ScriptedAdapter that also keeps each request's URL and raw body."""

    def __init__(self, answers: Any) -> None:
        super().__init__(answers)
        self.urls: list[str] = []
        self.raw: list[bytes] = []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        self.urls.append(request.url or "")
        self.raw.append(request.body if isinstance(request.body, bytes) else (request.body or "").encode())
        return super().send(request, **kwargs)


def recording(monkeypatch: pytest.MonkeyPatch, answers: Any) -> RecordingAdapter:
    adapter = RecordingAdapter(answers)
    install(monkeypatch, answers, adapter=adapter)
    return adapter


def our_headers(http: RecordingAdapter, index: int = 0) -> dict[str, str]:
    """The headers of one request beyond requests' own defaults, with Content-Length checked against the body."""
    headers = dict(http.headers[index])
    assert headers.pop("Content-Length") == str(len(http.raw[index]))
    for name, value in REQUESTS_OWN.items():
        assert headers.pop(name) == value
    assert headers.pop("Content-Type") == "application/json"
    return headers


def chat(**config: Any) -> ChatClient:
    return ChatClient(ModelConfig.from_dict({**LOCAL_MODEL, **config}), sleep=lambda seconds: None)


# --- what is allowed -------------------------------------------------------------------------


def test_an_unknown_key_is_refused_naming_every_allowed_one():
    with pytest.raises(ConfigurationError) as error:
        ModelConfig.from_dict({**LOCAL_MODEL, "extra_headers": {"a": "b"}})
    message = str(error.value)
    assert message.startswith("Unknown model_config key(s): extra_headers. Allowed: ")
    allowed = message.split("Allowed: ", 1)[1].split(", ")
    assert allowed == list(CLIENT_OPTIONS + SAMPLING_OPTIONS)
    assert {"default_headers", "default_query", "organization", "project", "http_session"} <= set(allowed)


@pytest.mark.parametrize(
    "option,message",
    [
        ({"default_headers": "api-key: x"}, r"default_headers must be a dict of names to strings such as .*, not str"),
        ({"default_headers": {"bad name": "x"}}, r"'bad name' is not an HTTP header name"),
        ({"default_headers": {"X-Count": 3}}, r"default_headers\['X-Count'\] must be a string on one line, not int"),
        ({"default_headers": {"X-Evil": "a\r\nInjected: yes"}}, r"default_headers\['X-Evil'\] must be a string on one line"),
        ({"default_headers": {"": "x"}}, r"default_headers names must be non-empty strings"),
        ({"default_query": {"api-version": True}}, r"default_query\['api-version'\] must be a string or a number, not bool"),
        ({"default_query": ["api-version"]}, r"default_query must be a dict .*, not list"),
        ({"organization": ""}, r"organization must be a non-empty string on one line, or None"),
        ({"project": 7}, r"project must be a non-empty string"),
        ({"http_session": object()}, r"http_session must be a requests.Session \(yours to close\), not object"),
        ({"api_key": ""}, r"api_key must be a non-empty string, a callable that returns one .* or None to send no key; not str"),
        ({"api_key": 42}, r"api_key must be .*; not int"),
    ],
)
def test_bad_client_options_fail_when_built_saying_what_is_allowed(option, message):
    with pytest.raises(ConfigurationError, match=message):
        ModelConfig.from_dict({**LOCAL_MODEL, **option})


def test_a_bad_header_value_is_not_echoed_in_the_error():
    with pytest.raises(ConfigurationError) as error:
        ModelConfig.from_dict({**LOCAL_MODEL, "default_headers": {"api-key": "multi\nline-secret-value"}})
    assert "line-secret-value" not in str(error.value)


# --- what every request carries ------------------------------------------------------------------


def test_headers_query_organization_and_project_go_with_every_request(monkeypatch):
    http = recording(monkeypatch, [completion("a"), completion("b")])
    client = chat(
        api_key="local-key-123",
        organization="org-abc",
        project="proj_xyz",
        default_headers={"X-Team": "search", "X-Trace": "on"},
        default_query={"api-version": "2024-10-21", "n": 2},
    )
    client.complete([HELLO])
    client.complete([HELLO], temperature=0)
    assert http.urls == ["http://127.0.0.1:9/v1/chat/completions?api-version=2024-10-21&n=2"] * 2
    expected = {
        "User-Agent": USER_AGENT,
        "Authorization": "Bearer local-key-123",
        "OpenAI-Organization": "org-abc",
        "OpenAI-Project": "proj_xyz",
        "X-Team": "search",
        "X-Trace": "on",
    }
    assert our_headers(http, 0) == expected and our_headers(http, 1) == expected
    assert http.sent == [
        {"model": "test-model", "messages": [HELLO]},
        {"model": "test-model", "messages": [HELLO], "temperature": 0},
    ]


def test_a_default_header_replaces_ours_of_the_same_name_in_any_case(monkeypatch):
    http = recording(monkeypatch, [completion()])
    chat(api_key="replaced-key-123", default_headers={"user-agent": "my-app/2", "authorization": "Token abc"}).complete([HELLO])
    assert our_headers(http) == {"user-agent": "my-app/2", "authorization": "Token abc"}


def test_a_streamed_call_carries_the_same_headers_and_query(monkeypatch):
    from helpers.fake_stream import Streamed, chunk, sse
    from helpers.fake_stream import install as install_stream

    http = install_stream(monkeypatch, [Streamed(sse([chunk("hi", role="assistant"), chunk(finish_reason="stop")]))])
    client = chat(api_key=lambda: "stream-token-123", project="proj_1", default_headers={"X-Team": "s"}, default_query={"v": "1"})
    with client.stream([HELLO]) as reply:
        assert "".join(delta.text for delta in reply) == "hi"
    headers = http.headers[0]
    assert headers["Authorization"] == "Bearer stream-token-123" and headers["OpenAI-Project"] == "proj_1" and headers["X-Team"] == "s"
    assert http.sent[0]["stream"] is True


# --- the key --------------------------------------------------------------------------------------


def test_a_callable_key_is_called_for_every_request_retries_included(monkeypatch):
    http = recording(monkeypatch, [(503, {"error": {"message": "busy"}}, {}), completion("a"), completion("b")])
    tokens = iter(["token-one-1234", "token-two-1234", "token-three-1234"])
    client = chat(api_key=lambda: next(tokens), max_retries=1)
    client.complete([HELLO])
    client.complete([HELLO])
    assert [h["Authorization"] for h in http.headers] == ["Bearer token-one-1234", "Bearer token-two-1234", "Bearer token-three-1234"]


def test_a_callable_key_that_returns_no_string_fails_clearly_without_a_request(monkeypatch):
    http = recording(monkeypatch, [completion()])
    with pytest.raises(ConfigurationError, match="api_key callable must return a non-empty string, not NoneType"):
        chat(api_key=lambda: None).complete([HELLO])
    assert http.sent == []


def test_a_callable_keys_token_is_never_shown_logged_or_stored(monkeypatch, caplog):
    token = "entra-token-abcdef-98765"
    body = {"error": {"message": f"Access token {token} has expired", "code": "invalid_token"}}
    install(monkeypatch, [(401, body, {})])
    agent = make_agent(model_config={**LOCAL_MODEL, "api_key": lambda: token})
    with caplog.at_level(logging.DEBUG), pytest.raises(AuthenticationError) as error:
        agent.run("hello", session_id="s")
    [failed] = agent.list_runs(status="failed")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    shown = [str(error.value), repr(error.value.body), json.dumps(failed, default=str), logged, repr(agent.model_config), repr(agent)]
    assert all(token not in text for text in shown)
    assert "Access token *** has expired" in str(error.value)
    assert "api_key=<callable>" in repr(agent.model_config)
    agent.cleanup()


def test_a_callable_minting_a_token_per_request_keeps_only_the_latest_few_redacted(monkeypatch):
    from omnisync.model.client import MINTED_TOKENS_KEPT
    from omnisync.redact import _all_known, redact_text

    count = MINTED_TOKENS_KEPT + 40
    recording(monkeypatch, [completion()] * count)
    tokens = (f"minted-token-{n:04d}" for n in range(count))
    client = chat(api_key=lambda: next(tokens))
    for _ in range(count):
        client.complete([HELLO])
    minted = {secret for secret in _all_known() if secret.startswith("minted-token-")}
    assert minted == {f"minted-token-{n:04d}" for n in range(count - MINTED_TOKENS_KEPT, count)}
    assert redact_text(f"saw minted-token-{count - 1:04d}") == "saw ***"
    del client  # a client's tokens go with it
    gc.collect()
    assert not {secret for secret in _all_known() if secret.startswith("minted-token-")}


def test_a_token_used_again_is_kept_once():
    from omnisync.redact import RecentSecrets

    recent = RecentSecrets(2)
    for token in ["cached-token-a", "cached-token-a", "cached-token-b", "cached-token-a", "cached-token-c"]:
        recent.add(token)
    assert list(recent) == ["cached-token-a", "cached-token-c"]


def test_a_key_callable_that_raises_fails_the_run_clearly_without_its_message_or_a_request(monkeypatch):
    from omnisync.errors import ApiKeyError

    secret = "leaked-refresh-token-5555"

    def failing() -> str:
        raise RuntimeError(f"token endpoint refused refresh token {secret}")

    http = recording(monkeypatch, [completion()])
    agent = make_agent(model_config={**LOCAL_MODEL, "api_key": failing})
    with pytest.raises(ApiKeyError, match="api_key callable failed with RuntimeError") as error:
        agent.run("hello", session_id="s")
    assert isinstance(error.value, ConfigurationError) and isinstance(error.value.__cause__, RuntimeError)
    assert http.sent == []
    [failed] = agent.list_runs(status="failed")
    assert "api_key callable failed" in failed["error"] and secret not in json.dumps(failed, default=str)
    assert secret not in str(error.value)
    agent.cleanup()


def test_api_key_none_sends_no_authorization_even_with_openai_api_key_set(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "openai-env-key-123")
    http = recording(monkeypatch, [completion(), completion()])
    chat(api_key=None).complete([HELLO])
    chat().complete([HELLO])  # left out: the environment's key
    assert "Authorization" not in http.headers[0]
    assert http.headers[1]["Authorization"] == "Bearer openai-env-key-123"


def test_organization_and_project_come_from_the_environment_when_left_out(monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-from-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_from_env")
    http = recording(monkeypatch, [completion(), completion(), completion()])
    chat().complete([HELLO])
    chat(organization="org-given", project=None).complete([HELLO])  # given wins; None sends none
    derived = ModelConfig.from_dict(LOCAL_MODEL)
    monkeypatch.delenv("OPENAI_ORG_ID")
    ChatClient(derived.with_options(model="other")).complete([HELLO])  # a copy keeps what the environment gave
    sent = [(h.get("OpenAI-Organization"), h.get("OpenAI-Project")) for h in http.headers]
    assert sent == [("org-from-env", "proj_from_env"), ("org-given", None), ("org-from-env", "proj_from_env")]


def test_a_bad_organization_in_the_environment_is_named_as_the_variable(monkeypatch):
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj\nX-Injected: 1")
    with pytest.raises(ConfigurationError, match=r"^OPENAI_PROJECT_ID \(read because model_config has no project\) must be"):
        ModelConfig.from_dict(LOCAL_MODEL)
    assert ModelConfig.from_dict({**LOCAL_MODEL, "project": "proj_ok"}).project == "proj_ok"


def test_openai_itself_refuses_api_key_none_unless_a_header_authorizes(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match=r"needs a key: .* \(api_key=None sends none\)"):
        ModelConfig.from_dict({"model": "gpt-5.4-mini", "api_key": None})
    config = ModelConfig.from_dict({"model": "gpt-5.4-mini", "api_key": None, "default_headers": {"Authorization": "Bearer gateway-1234"}})
    assert config.api_key is None and config.base_url == "https://api.openai.com/v1"


def test_secret_looking_header_and_query_values_are_redacted_and_no_value_shows_in_a_repr(monkeypatch, caplog):
    header_secret, query_secret = "azure-header-key-0042", "query-token-0042"
    body = {"error": {"message": f"key {header_secret} is not valid"}}
    install(monkeypatch, [(401, body, {})])
    config = ModelConfig.from_dict(
        {**LOCAL_MODEL, "api_key": None, "default_headers": {"api-key": header_secret, "X-Title": "Shown app"}, "default_query": {"token": query_secret}}
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(AuthenticationError) as error:
        ChatClient(config).complete([HELLO])
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for text in (str(error.value), repr(error.value.body), logged):
        assert header_secret not in text and query_secret not in text
    assert "token=***" in str(error.value)  # the URL in the message, its query redacted
    assert repr(config).endswith("default_headers={'api-key': '***', 'X-Title': '***'}, default_query={'token': '***'})")


# --- the user's session ---------------------------------------------------------------------------


class OwnSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    def close(self) -> None:
        self.closed += 1
        super().close()


def test_a_users_session_is_used_from_every_thread_unchanged_and_never_closed():
    session = OwnSession()
    session.headers["X-Corp-Proxy"] = "yes"
    http = RecordingAdapter(lambda body: completion())
    session.mount("http://", http)
    before = dict(session.headers)
    agent = make_agent(model_config={**LOCAL_MODEL, "api_key": "own-session-key", "http_session": session})
    agent.run("one", session_id="a")
    thread = threading.Thread(target=agent.run, args=("two",), kwargs={"session_id": "b"})
    thread.start()
    thread.join()
    agent.cleanup()
    assert len(http.sent) == 2 and session.closed == 0
    assert dict(session.headers) == before  # nothing of ours was set on it
    for headers in http.headers:
        assert headers["X-Corp-Proxy"] == "yes" and headers["Authorization"] == "Bearer own-session-key"
    assert "http_session=<" in repr(agent.model_config)


def test_sessions_omnisync_opens_are_closed_by_cleanup(monkeypatch):
    closed: list[requests.Session] = []
    install(monkeypatch, [completion()])
    original = requests.Session.close
    monkeypatch.setattr(requests.Session, "close", lambda self: (closed.append(self), original(self))[1])
    agent = make_agent()
    agent.run("one")
    agent.cleanup()
    assert len(closed) == 1


# --- a config with a few options changed --------------------------------------------------------


def test_with_options_derives_a_checked_copy_and_leaves_the_original(monkeypatch):
    key = lambda: "derived-token-123"  # noqa: E731
    base = ModelConfig.from_dict(
        {**LOCAL_MODEL, "api_key": key, "default_headers": {"X-A": "1", "X-B": "2"}, "default_query": {"v": "1"}, "temperature": 0.2, "response_format": {"type": "json_object"}}
    )
    derived = base.with_options(model="bigger", default_headers={"X-B": None, "X-C": "3"}, response_format=None, timeout=5)
    assert derived.model == "bigger" and derived.timeout == 5.0 and derived.api_key is key
    assert derived.default_headers == {"X-A": "1", "X-C": "3"} and derived.default_query == {"v": "1"}
    assert derived.sampling == {"temperature": 0.2}
    assert base.model == "test-model" and base.default_headers == {"X-A": "1", "X-B": "2"}
    assert base.sampling == {"temperature": 0.2, "response_format": {"type": "json_object"}}
    assert base.with_options(default_headers=None).default_headers == {}
    with pytest.raises(ConfigurationError, match="timeout must be a positive number"):
        base.with_options(timeout=-1)
    with pytest.raises(ConfigurationError, match="Unknown model_config key"):
        base.with_options(extra_query={})
    http = recording(monkeypatch, [completion()])
    agent = OmniCoreAgent(name="derived", system_instruction="s", model_config=derived)
    agent.run("hello")
    assert http.urls == ["http://127.0.0.1:9/v1/chat/completions?v=1"]
    assert our_headers(http)["X-C"] == "3" and http.headers[0]["Authorization"] == "Bearer derived-token-123"
    assert http.sent[0] == {"model": "bigger", "messages": [{"role": "system", "content": "s"}, HELLO], "temperature": 0.2}
    agent.cleanup()


def test_with_options_keeps_the_key_the_environment_gave(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "env-key-for-copy")
    base = ModelConfig.from_dict(LOCAL_MODEL)
    monkeypatch.delenv("OPENAI_API_KEY")
    assert base.with_options(model="other").api_key == "env-key-for-copy"


# --- summary calls ----------------------------------------------------------------------------


def test_a_summary_call_carries_the_agents_sampling_but_none_of_its_output_settings(monkeypatch):
    """Only the summary's own limit, in the field the agent's config uses."""
    http = install(monkeypatch, echo)
    output = {"response_format": {"type": "json_object"}, "max_tokens": 50, "max_completion_tokens": 60, "stop": ["END"]}
    model = {**LOCAL_MODEL, "temperature": 0.3, "seed": 7, **output}
    agent = make_agent(model_config=model, agent_config={"memory_config": {"mode": "sliding_window", "value": 2, "summary": {"enabled": True}}})
    for message in ("one", "two"):
        agent.run(message, session_id="s")
    agent.get_session_history("s")  # waits for the fold
    runs = [body for body in http.sent if body["messages"][0]["content"] == "You are a test."]
    summaries = [body for body in http.sent if body not in runs]
    assert summaries == [
        {
            "model": "test-model",
            "messages": [{"role": "system", "content": SUMMARY_INSTRUCTION}, {"role": "user", "content": "user: one\nassistant: echo: one\nuser: two"}],
            "temperature": 0.3,
            "seed": 7,
            "max_completion_tokens": 512,
        }
    ]
    assert all(body[key] == value for body in runs for key, value in output.items())
    OpenAPI().check_request(summaries[0])
    agent.cleanup()


# --- the recipes of docs/models.md ---------------------------------------------------------


def readme_blocks() -> list[str]:
    section = MODELS_PAGE.read_text(encoding="utf-8").split("## Other endpoints\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.fixture
def recipes(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The recipes of docs/models.md, run as written, with keys in the environment and azure.identity stood in for."""
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key-never-sent-elsewhere")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key-0123456789")
    monkeypatch.setenv("OPENROUTER_API_KEY", "openrouter-key-0123456789")
    monkeypatch.setenv("VLLM_API_KEY", "vllm-token-0123")
    identity = types.ModuleType("azure.identity")
    scopes: list[str] = []

    def get_bearer_token_provider(credential: object, *wanted: str) -> Any:
        scopes.extend(wanted)
        tokens = iter(["entra-token-1-abcdef", "entra-token-2-abcdef"])
        return lambda: next(tokens)

    identity.DefaultAzureCredential = object  # type: ignore[attr-defined]
    identity.get_bearer_token_provider = get_bearer_token_provider  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "azure", types.ModuleType("azure"))
    monkeypatch.setitem(sys.modules, "azure.identity", identity)
    namespace: dict[str, Any] = {}
    blocks = readme_blocks()
    for block in blocks[:2]:
        exec(block, namespace)
    namespace["entra_scopes"] = scopes
    return namespace


AZURE_URL = "https://my-resource.openai.azure.com/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
RECIPES = {
    "azure": ("gpt-4o-mini", AZURE_URL, {"api-key": "azure-key-0123456789"}),
    "openrouter": (
        "openai/gpt-4o-mini",
        "https://openrouter.ai/api/v1/chat/completions",
        {"Authorization": "Bearer openrouter-key-0123456789", "HTTP-Referer": "https://example.org", "X-Title": "Example app"},
    ),
    "ollama": ("llama3.2", "http://127.0.0.1:11434/v1/chat/completions", {}),
    "vllm": ("Qwen/Qwen2.5-1.5B-Instruct", "http://127.0.0.1:8000/v1/chat/completions", {"Authorization": "Bearer vllm-token-0123"}),
    "llama_cpp": ("local", "http://127.0.0.1:8080/v1/chat/completions", {}),
}


@pytest.mark.parametrize("name", RECIPES)
def test_each_recipe_sends_exactly_the_request_its_server_expects(monkeypatch, recipes, name):
    model, url, headers = RECIPES[name]
    http = recording(monkeypatch, [completion("hi"), completion("again")])
    with OmniCoreAgent(name="assistant", system_instruction="Be brief.", model_config=recipes[name]) as agent:
        first = agent.run("hello", session_id="s")
        agent.run("and again", session_id="s")
    assert first["response"] == "hi"
    assert http.urls == [url, url]
    assert our_headers(http, 0) == {"User-Agent": USER_AGENT, **headers} == our_headers(http, 1)
    system = {"role": "system", "content": "Be brief."}
    assert http.sent == [
        {"model": model, "messages": [system, HELLO]},
        {"model": model, "messages": [system, HELLO, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "and again"}]},
    ]
    for body in http.sent:
        OpenAPI().check_request(body)


def test_the_azure_entra_recipe_sends_a_fresh_bearer_token_and_no_api_key(monkeypatch, recipes):
    http = recording(monkeypatch, [completion(), completion()])
    with OmniCoreAgent(name="assistant", system_instruction="Be brief.", model_config=recipes["azure_entra"]) as agent:
        agent.run("hello", session_id="s")
        agent.run("hello", session_id="t")
    assert recipes["entra_scopes"] == ["https://cognitiveservices.azure.com/.default"]
    assert http.urls == [AZURE_URL, AZURE_URL]
    assert [our_headers(http, i) for i in (0, 1)] == [
        {"User-Agent": USER_AGENT, "Authorization": "Bearer entra-token-1-abcdef"},
        {"User-Agent": USER_AGENT, "Authorization": "Bearer entra-token-2-abcdef"},
    ]
    OpenAPI().check_request(http.sent[0])


def test_an_azure_404_does_not_suggest_adding_v1(monkeypatch, recipes):
    install(monkeypatch, [(404, {"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist."}}, {})])
    with pytest.raises(NotFoundError) as error:
        ChatClient(ModelConfig.from_dict(recipes["azure"])).complete([HELLO])
    assert "answered 404: The API deployment for this resource does not exist." in str(error.value)
    assert "/v1" not in str(error.value) and "Hint" not in str(error.value)
