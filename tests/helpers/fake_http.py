"""Mocked HTTP for the model client: a requests adapter that answers from a script."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import requests
from requests.adapters import BaseAdapter

from helpers.openapi import OpenAPI, spec_path

Answer = Any  # a dict (200 JSON), a (status, body, headers) tuple, or an exception to raise


def completion(content: str | None = "ok", tool_calls: list[dict[str, Any]] | None = None, **usage: int) -> dict[str, Any]:
    """A CreateChatCompletionResponse with every required field, as OpenAI's description has it."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop", "logprobs": None}],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
        }
    return body


def tool_sequence_problem(messages: list[dict[str, Any]]) -> str | None:
    """Why a server that checks tool sequences as OpenAI's does would refuse these messages, or None.

    Every assistant message with tool_calls is followed directly by one tool message for each
    call; a tool message answers a call of the assistant message right before its run of results.
    """
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message["role"] == "tool":
            return f"messages[{index - 1}]: a 'tool' message must answer a preceding message with 'tool_calls'"
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        wanted = [call["id"] for call in message["tool_calls"]]
        answered = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answered.append(messages[index]["tool_call_id"])
            index += 1
        if sorted(answered) != sorted(wanted):
            missing = sorted(set(wanted) - set(answered))
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(missing) or sorted(answered)}"
            )
    return None


class ScriptedAdapter(BaseAdapter):
    """Answers each request with the next scripted answer, and keeps what was sent."""

    def __init__(self, answers: list[Answer] | Callable[[dict[str, Any]], Answer]) -> None:
        super().__init__()
        self.answers = answers
        self.sent: list[dict[str, Any]] = []
        self.refused: list[str] = []  # why requests were refused as invalid tool sequences
        self.headers: list[dict[str, str]] = []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        body = json.loads(request.body) if request.body else None
        if spec_path() is not None:  # every request omnisync sends must fit OpenAI's description
            OpenAPI().check_request(body)
        self.sent.append(body)
        self.headers.append(dict(request.headers))
        problem = tool_sequence_problem(body["messages"]) if body and "messages" in body else None
        if problem:  # refused as OpenAI refuses it, before any scripted answer is used up
            self.refused.append(problem)
            answer: Answer = (400, {"error": {"message": problem, "type": "invalid_request_error", "param": "messages", "code": None}}, {})
        else:
            answer = self.answers(body) if callable(self.answers) else self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        status, payload, headers = (200, answer, {}) if isinstance(answer, dict) else answer
        response = requests.Response()
        response.status_code = status
        response.headers.update({"content-type": "application/json", **headers})
        response._content = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        response._content_consumed = True  # read as a whole, also by a caller that asked for stream=True
        response.request = request
        response.url = request.url or ""
        return response

    def close(self) -> None:
        pass


def install(
    monkeypatch: Any, answers: list[Answer] | Callable[[dict[str, Any]], Answer], adapter: ScriptedAdapter | None = None
) -> ScriptedAdapter:
    """Route every requests.Session the model client makes through a ScriptedAdapter (or ``adapter``)."""
    adapter = adapter or ScriptedAdapter(answers)
    original = requests.Session.__init__

    def session_init(self: requests.Session, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.mount("http://", adapter)
        self.mount("https://", adapter)

    monkeypatch.setattr(requests.Session, "__init__", session_init)
    return adapter
