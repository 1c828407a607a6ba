"""A scripted Chat Completions server: the hand-written answers behind cassettes/handwritten/.

Every answer is written by hand from OpenAI's CreateChatCompletionResponse (all required
fields present), chosen by fixed rules from the request:

- a summary request (system prompt starts "You write the running summary") -> "Summary: ..."
- the last message is a tool result -> "Done: " + the results of the last tool turn
- a ``json_schema`` response_format -> the JSON of an ``answer {...json...}`` directive in the
  last user message, or ``{}`` without one, as the answer's text (with usage detail fields, as
  OpenAI sends them)
- the last user message holds ``use name({...json...})`` directives and no tool turn has
  followed it yet -> one tool call per directive, in one turn (several = a parallel call)
- anything else -> "echo: <last user message>" (of a message of content parts, its text
  parts, each other part as ``[image_url]``, ``[input_audio]`` or ``[file]``)

With ``"stream": true`` the same answer goes out as server-sent events, one chunk per HTTP
chunk, written from CreateChatCompletionStreamResponse: a role chunk, the text a few words a
chunk, each tool call as a first fragment (id, type, name) and then its arguments in three
pieces (parallel calls interleaved), a finish_reason chunk, a usage chunk when
``stream_options.include_usage`` asks for it, then ``data: [DONE]``.

Run it, then record with the tests pointed at it (see cassettes/README.md):

    python cassettes/scripted_model.py --port 8081
"""

from __future__ import annotations

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIRECTIVE = re.compile(r"use (\w+)\((\{.*?\})\)")
ANSWER = re.compile(r"answer (\{.*\})")


def answer(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    last = messages[-1]
    if messages[0]["role"] == "system" and messages[0]["content"].startswith("You write the running summary"):
        return _completion(body, f"Summary: {len(last['content'].splitlines())} lines, last: {last['content'].splitlines()[-1][:80]}")
    if last["role"] == "tool":
        results = []
        for message in reversed(messages):
            if message["role"] != "tool":
                break
            results.insert(0, message["content"])
        return _completion(body, "Done: " + " | ".join(results))
    user_index = max(i for i, m in enumerate(messages) if m["role"] == "user")
    structured = ANSWER.search(_text(messages[user_index]["content"]))
    if (body.get("response_format") or {}).get("type") == "json_schema":  # JSON, as a server honouring it gives
        answered = _completion(body, structured.group(1) if structured else "{}")
        answered["usage"]["prompt_tokens_details"] = {"cached_tokens": 0, "audio_tokens": 0}
        answered["usage"]["completion_tokens_details"] = {"reasoning_tokens": 0, "audio_tokens": 0}
        return answered
    directives = DIRECTIVE.findall(_text(messages[user_index]["content"]))
    if directives and body.get("tools") and user_index == len(messages) - 1:
        calls = [
            {"id": f"call_{user_index}_{n}", "type": "function", "function": {"name": name, "arguments": arguments}}
            for n, (name, arguments) in enumerate(directives)
        ]
        return _completion(body, None, calls)
    return _completion(body, f"echo: {_text(messages[user_index]['content'])}")


def _text(content: str | list[dict[str, Any]]) -> str:
    """A user message's text; a part other than text as its kind in brackets (``[image_url]``)."""
    if isinstance(content, str):
        return content
    return " ".join(part["text"] if part["type"] == "text" else f"[{part['type']}]" for part in content)


def _completion(body: dict[str, Any], content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt = sum(len(str(m.get("content") or "")) // 4 + 4 for m in body["messages"])
    completion_tokens = len(content or json.dumps(tool_calls)) // 4 + 1
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": body["model"],
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": prompt + completion_tokens},
    }


def stream_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer to ``body`` as the chunks of a stream."""
    whole = answer(body)
    choice = whole["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": whole["id"],
            "object": "chat.completion.chunk",
            "created": whole["created"],
            "model": whole["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        }

    chunks = [chunk({"role": "assistant", "content": "" if message["content"] is not None else None})]
    words = re.findall(r"\S+\s*", message["content"] or "")
    chunks += [chunk({"content": "".join(words[i : i + 3])}) for i in range(0, len(words), 3)]
    calls = message.get("tool_calls") or []
    for index, call in enumerate(calls):
        first = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
        chunks.append(chunk({"tool_calls": [first]}))
    for piece in range(3):
        for index, call in enumerate(calls):
            arguments = call["function"]["arguments"]
            size = -(-len(arguments) // 3)
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[piece * size : (piece + 1) * size]}}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**chunk({}), "choices": [], "usage": whole["usage"]})
    return chunks


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length))
        if body.get("stream"):
            self._stream(body)
            return
        payload = json.dumps(answer(body)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in stream_chunks(body)] + [b"data: [DONE]\n\n"]
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8081)
    options = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", options.port), _Handler).serve_forever()


if __name__ == "__main__":
    main()
