"""The model client's transport: the environment's proxy and CA settings honoured, read once when the client is built."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from helpers.fake_http import ScriptedAdapter, completion, install
from omnisync.model.client import ChatClient
from omnisync.model.config import ModelConfig
from helpers.serve_servers import scripted_model_server

PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy")
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def clean_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def chat(base_url: str) -> ChatClient:
    return ChatClient(ModelConfig.from_dict({"model": "m", "base_url": base_url, "api_key": None, "max_retries": 0}))


def test_an_http_proxy_in_the_environment_carries_the_model_call(clean_proxy_environment):
    with scripted_model_server() as proxy:  # answers any path, so it serves as a forwarding proxy here
        clean_proxy_environment.setenv("HTTP_PROXY", proxy.removesuffix("/v1"))
        client = chat("http://model.invalid/v1")  # a name that never resolves: only the proxy can answer
        clean_proxy_environment.delenv("HTTP_PROXY")  # read when the client was built, not per call
        try:
            assert client.complete(HELLO).content
        finally:
            client.close()


def test_no_proxy_sends_its_hosts_direct(clean_proxy_environment):
    with scripted_model_server() as model:
        clean_proxy_environment.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
        clean_proxy_environment.setenv("NO_PROXY", "127.0.0.1")
        client = chat(model)
        try:
            assert client.complete(HELLO).content
        finally:
            client.close()


class _KeepsSendOptions(ScriptedAdapter):
    def __init__(self) -> None:
        super().__init__(lambda body: completion())
        self.options: list[dict[str, Any]] = []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        self.options.append(kwargs)
        return super().send(request, **kwargs)


def test_a_ca_bundle_from_the_environment_verifies_every_request(clean_proxy_environment, tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("not read by the scripted adapter")
    clean_proxy_environment.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    adapter = install(clean_proxy_environment, [], adapter=_KeepsSendOptions())
    client = chat("https://models.example/v1")
    client.complete(HELLO)
    client.complete(HELLO)
    assert [options["verify"] for options in adapter.options] == [str(bundle)] * 2
    assert adapter.headers[0]["Content-Type"] == "application/json" and adapter.headers[0]["Accept"] == "*/*"


def test_cookies_the_session_keeps_go_back_with_the_next_request(clean_proxy_environment):
    """Session.send keeps a response's Set-Cookie in the session's jar (a load balancer's affinity, say)."""
    adapter = install(clean_proxy_environment, [completion(), completion()])
    client = chat("https://models.example/v1")
    client.complete(HELLO)
    client._transport._session().cookies.set("affinity", "node-2")
    client.complete(HELLO)
    assert "Cookie" not in adapter.headers[0] and adapter.headers[1]["Cookie"] == "affinity=node-2"
