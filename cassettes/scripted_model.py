"""A scripted Chat Completions server: the hand-written answers behind cassettes/handwritten/.

Every answer is written by hand from OpenAI's CreateChatCompletionResponse (all required
fields present), chosen by fixed rules from the request:

- a summary request (system prompt starts "You write the running summary") -> "Summary: ..."
- the last message is a tool result -> "Done: " + the results of the last tool turn
- the last user message holds ``use name({...json...})`` directives and no tool turn has
  followed it yet -> one tool call per directive, in one turn (several = a parallel call)
- anything else -> "echo: <last user message>"

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
    directives = DIRECTIVE.findall(messages[user_index]["content"])
    if directives and body.get("tools") and user_index == len(messages) - 1:
        calls = [
            {"id": f"call_{user_index}_{n}", "type": "function", "function": {"name": name, "arguments": arguments}}
            for n, (name, arguments) in enumerate(directives)
        ]
        return _completion(body, None, calls)
    return _completion(body, f"echo: {messages[user_index]['content']}")


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


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length))
        payload = json.dumps(answer(body)).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8081)
    options = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", options.port), _Handler).serve_forever()


if __name__ == "__main__":
    main()
