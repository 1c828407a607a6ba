"""Agents for tests, talking to mocked HTTP."""

from __future__ import annotations

from typing import Any

from omnisync import MemoryRouter, OmniCoreAgent
from helpers.fake_http import completion

LOCAL_MODEL = {"provider": "openai", "model": "test-model", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0}


def echo(body: dict[str, Any]) -> dict[str, Any]:
    """Answers 'echo: <last user message>' (and, for a summary request, a short summary)."""
    last = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if body["messages"][0]["content"].startswith("You write the running summary"):
        return completion(f"summary of {last.count(chr(10)) + 1} lines")
    return completion(f"echo: {last}", prompt_tokens=10, completion_tokens=2)


def make_agent(name: str = "assistant", router: MemoryRouter | None = None, **kwargs: Any) -> OmniCoreAgent:
    return OmniCoreAgent(
        name=name,
        system_instruction="You are a test.",
        model_config=kwargs.pop("model_config", LOCAL_MODEL),
        memory_router=router,
        **kwargs,
    )
