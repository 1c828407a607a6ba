"""Mocked streamed HTTP for the model client: server-sent event bodies delivered in scripted pieces."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import requests

from helpers.fake_http import ScriptedAdapter
from helpers.fake_http import install as install_adapter
from helpers.openapi import OpenAPI, spec_path, stream_chunk_errors

STREAM_ID = "chatcmpl-test"  # as fake_http.completion, so a streamed and a whole reply compare equal


def chunk(
    content: str | None = None,
    *,
    role: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
    choices: bool = True,
) -> dict[str, Any]:
    """A CreateChatCompletionStreamResponse chunk (choice 0), checked against OpenAI's description."""
    delta: dict[str, Any] = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if tool_calls:
        delta["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": STREAM_ID,
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}] if choices else [],
    }
    if usage is not None:
        body["usage"] = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
    if spec_path() is not None:
        problems = stream_chunk_errors(body)
        assert not problems, problems
    return body


def tool_fragment(index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None) -> dict[str, Any]:
    """One ChatCompletionMessageToolCallChunk: id, type and name on the first, arguments in pieces after."""
    fragment: dict[str, Any] = {"index": index}
    if id:
        fragment.update(id=id, type="function")
    function = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    if function:
        fragment["function"] = function
    return fragment


def sse(events: Iterable[dict[str, Any] | str], *, done: bool = True, newline: str = "\n") -> bytes:
    """An event-stream body: each event as one ``data:`` line, then ``[DONE]`` unless told not to."""
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}{newline}{newline}" for e in events]
    if done:
        lines.append(f"data: [DONE]{newline}{newline}")
    return "".join(lines).encode()


class PiecedBody:
    """Stands in for urllib3's response: read1 hands out the scripted pieces one by one."""

    def __init__(self, pieces: Iterable[bytes | BaseException]) -> None:
        self.pieces = list(pieces)
        self.reads = 0
        self.closed = False

    def read1(self, amt: int | None = None) -> bytes:
        assert not self.closed, "read after close"
        if not self.pieces:
            return b""
        piece = self.pieces.pop(0)
        self.reads += 1
        if isinstance(piece, BaseException):
            raise piece
        return piece

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


class Streamed:
    """A scripted answer whose body arrives in pieces: bytes (split as given) or an exception mid-body."""

    def __init__(self, *pieces: bytes | BaseException, headers: dict[str, str] | None = None) -> None:
        self.body = PiecedBody(pieces)
        self.headers = {"content-type": "text/event-stream", **(headers or {})}


class StreamingAdapter(ScriptedAdapter):
    """A ScriptedAdapter whose list of answers may also hold Streamed bodies."""

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        if not (isinstance(self.answers, list) and self.answers and isinstance(self.answers[0], Streamed)):
            return super().send(request, **kwargs)
        answer = self.answers.pop(0)
        body = json.loads(request.body) if request.body else None
        if spec_path() is not None:  # every request omnisync sends must fit OpenAI's description
            OpenAPI().check_request(body)
        self.sent.append(body)
        self.headers.append(dict(request.headers))
        response = requests.Response()
        response.status_code = 200
        response.headers.update(answer.headers)
        response.raw = answer.body
        response.request = request
        response.url = request.url or ""
        return response


def install(monkeypatch: Any, answers: list[Any] | Callable[[dict[str, Any]], Any]) -> StreamingAdapter:
    """Route every requests.Session the model client makes through a StreamingAdapter."""
    adapter = StreamingAdapter(answers)
    install_adapter(monkeypatch, answers, adapter=adapter)
    return adapter
