"""A ``POST /v1/responses`` body, checked: what omnisync does with each field, and a 400 naming any it does not support.

A field sent as null is the field left out (OpenAI's clients send some that way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..bodies import checked_id
from .errors import OpenAIError, unsupported
from .items import chat_messages

SUPPORTED = (
    "model", "input", "instructions", "conversation", "previous_response_id", "store", "max_output_tokens", "temperature",
    "top_p", "text", "stream", "background", "metadata", "tools", "tool_choice", "parallel_tool_calls", "include", "stream_options",
)
MAX_METADATA = 16


@dataclass(frozen=True)
class CreateResponse:
    """What a response is asked for; ``messages`` are the input as chat messages, the run's own message (or tool results) last."""

    model: str
    messages: list[dict[str, Any]]
    input_items: list[dict[str, Any]]
    instructions: str | None = None
    conversation: str | None = None
    previous_response_id: str | None = None
    store: bool = True
    stream: bool = False
    background: bool = False
    sampling: dict[str, Any] = field(default_factory=dict)  # temperature, top_p, max_tokens, for the upstream model
    max_output_tokens: int | None = None
    text_format: dict[str, Any] | None = None  # text.format when it is json_schema
    metadata: dict[str, str] = field(default_factory=dict)
    parallel_tool_calls: bool = True
    tools: list[Any] = field(default_factory=list)  # as sent: checked against the agent's own (client_tools.declared_tools)

    @property
    def message(self) -> Any:
        """The run's message: the last user message's content, or None when the input ends with tool results (the run continues the session)."""
        return self.messages[-1]["content"] if self.messages[-1]["role"] == "user" else None

    @property
    def output_type(self) -> dict[str, Any] | None:
        """The run's output_type: the response_format Chat Completions takes for ``text.format``."""
        if self.text_format is None:
            return None
        schema = {k: self.text_format[k] for k in ("name", "schema", "strict", "description") if k in self.text_format}
        return {"type": "json_schema", "json_schema": schema}

    def echo(self) -> dict[str, Any]:
        """What the Response object repeats of the request."""
        return {
            "instructions": self.instructions,
            "previous_response_id": self.previous_response_id,
            "conversation": {"id": self.conversation} if self.conversation else None,
            "store": self.store,
            "background": self.background,
            "temperature": self.sampling.get("temperature"),
            "top_p": self.sampling.get("top_p"),
            "max_output_tokens": self.max_output_tokens,
            "text": {"format": {"type": "json_schema", **self.text_format} if self.text_format else {"type": "text"}},
            "metadata": self.metadata,
            "parallel_tool_calls": self.parallel_tool_calls,
        }


def parse(body: Any) -> CreateResponse:
    if not isinstance(body, dict):
        raise OpenAIError(400, "the body must be a JSON object (CreateResponse)", None, "invalid_type")
    given = {key: value for key, value in body.items() if value is not None}
    for key in given:
        if key not in SUPPORTED:
            raise unsupported(key)
    model = given.get("model")
    if not isinstance(model, str) or not model:
        raise OpenAIError(400, "model is required: the name of an agent (GET /v1/models lists them)", "model", "missing_required_parameter")
    if "input" not in given:
        raise OpenAIError(400, "input is required: a string or a list of items", "input", "missing_required_parameter")
    messages = chat_messages(given["input"], "input")
    if not messages or messages[-1]["role"] not in ("user", "tool"):
        raise unsupported("input", "input that ends with an assistant message (end it with a user message, or with function_call_output items)")
    if given.get("tool_choice") not in (None, "auto"):
        raise unsupported("tool_choice", "only 'auto'")
    if given.get("include"):
        raise unsupported("include")
    if "stream_options" in given and not given.get("stream"):
        raise OpenAIError(400, "stream_options needs stream: true", "stream_options", "invalid_value")
    conversation = _conversation(given.get("conversation"))
    previous = given.get("previous_response_id")
    if previous is not None:
        previous = checked_id(_string(previous, "previous_response_id"), "previous_response_id")
    if conversation and previous:
        raise OpenAIError(400, "send conversation or previous_response_id, not both", "previous_response_id", "invalid_value")
    store = _bool(given.get("store", True), "store")
    background = _bool(given.get("background", False), "background")
    if not store and (conversation or background):
        raise OpenAIError(400, "store: false cannot go with a conversation or background (the response is not kept)", "store", "invalid_value")
    sampling: dict[str, Any] = {}
    tools = given.get("tools") or []
    if tools and given.get("parallel_tool_calls") is False:
        sampling["parallel_tool_calls"] = False
    for name, low, high in (("temperature", 0.0, 2.0), ("top_p", 0.0, 1.0)):
        if name in given:
            sampling[name] = _number(given[name], name, low, high)
    max_output_tokens = given.get("max_output_tokens")
    if max_output_tokens is not None:
        if isinstance(max_output_tokens, bool) or not isinstance(max_output_tokens, int) or max_output_tokens < 16:
            raise OpenAIError(400, "max_output_tokens must be a whole number of at least 16", "max_output_tokens", "invalid_value")
        sampling["max_tokens"] = max_output_tokens
    instructions = given.get("instructions")
    if instructions is not None:
        instructions = _string(instructions, "instructions")
    return CreateResponse(
        model=model,
        messages=messages,
        input_items=given["input"] if isinstance(given["input"], list) else [{"type": "message", "role": "user", "content": given["input"]}],
        instructions=instructions or None,
        conversation=conversation,
        previous_response_id=previous,
        store=store,
        stream=_bool(given.get("stream", False), "stream"),
        background=background,
        sampling=sampling,
        max_output_tokens=max_output_tokens,
        text_format=_text_format(given.get("text")),
        metadata=metadata(given.get("metadata"), "metadata"),
        parallel_tool_calls=_bool(given.get("parallel_tool_calls", True), "parallel_tool_calls"),
        tools=tools,
    )


def metadata(value: Any, param: str) -> dict[str, str]:
    """Up to 16 string pairs, keys up to 64 characters, values up to 512, as OpenAI takes them."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_METADATA:
        raise OpenAIError(400, f"{param} must be an object of at most {MAX_METADATA} string pairs", param, "invalid_value")
    for key, item in value.items():
        if not isinstance(item, str) or len(key) > 64 or len(item) > 512:
            raise OpenAIError(400, f"{param}: keys are strings up to 64 characters, values strings up to 512", f"{param}.{key}", "invalid_value")
    return dict(value)


def _conversation(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("id")
    return checked_id(_string(value, "conversation"), "conversation")


def _text_format(text: Any) -> dict[str, Any] | None:
    if text is None:
        return None
    if not isinstance(text, dict):
        raise OpenAIError(400, "text must be an object with a format", "text", "invalid_type")
    for key in text:
        if key != "format" and text[key] is not None:
            raise unsupported(f"text.{key}")
    form = text.get("format") or {"type": "text"}
    kind = form.get("type") if isinstance(form, dict) else None
    if kind == "text":
        return None
    if kind != "json_schema" or not isinstance(form.get("schema"), dict) or not isinstance(form.get("name"), str):
        raise unsupported("text.format", "a format of type 'text', or 'json_schema' with a name and a schema")
    return {k: form[k] for k in ("name", "schema", "strict", "description") if form.get(k) is not None}


def _string(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise OpenAIError(400, f"{param} must be a string", param, "invalid_type")
    return value


def _bool(value: Any, param: str) -> bool:
    if not isinstance(value, bool):
        raise OpenAIError(400, f"{param} must be true or false", param, "invalid_type")
    return value


def _number(value: Any, param: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not low <= value <= high:
        raise OpenAIError(400, f"{param} must be a number from {low:g} to {high:g}", param, "invalid_value")
    return float(value)
