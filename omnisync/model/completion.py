"""A chat completion as the run loop reads it, and reading one from a response body.

No HTTP library here, so the run loop that reads a Completion does not load ``requests``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import ModelResponseError
from ..usage import read_usage


@dataclass(frozen=True)
class Completion:
    """What the agent needs from a chat completion."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # as omnisync.usage reads it
    model: str | None = None
    id: str | None = None

    def message(self) -> dict[str, Any]:
        """The assistant message as it goes back into the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message



def parse_completion(body: Any) -> Completion:
    """Read a CreateChatCompletionResponse, accepting servers that leave optional fields out.

    Tool call arguments sent as a JSON object rather than a string are kept as a JSON string,
    so the reply can be sent back as it is.
    """
    try:
        choice = body["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
        tool_calls = [_tool_call(call) for call in message.get("tool_calls") or []]
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelResponseError(f"the response is not a chat completion ({exc}): {str(body)[:200]}") from exc
    return Completion(
        content=message.get("content"),
        tool_calls=tool_calls,
        finish_reason=choice.get("finish_reason"),
        usage=read_usage(body.get("usage")),
        model=body.get("model"),
        id=body.get("id"),
    )


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call["function"]
    if not call.get("id") or not isinstance(call["id"], str) or not function.get("name") or not isinstance(function["name"], str):
        raise KeyError("a tool call without an id or a function name")
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call["id"], "type": call.get("type", "function"), "function": {"name": function["name"], "arguments": arguments or "{}"}}
