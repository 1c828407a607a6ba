"""The ``chat {model}`` span: one per model call, a run's steps and summaries alike.

:class:`ChatCall` is opened by :class:`~omnisync.model.client.ChatClient` before the request
and told how it ended: the completion (response model, finish reason, usage) or the error.
A streamed call's span ends when its stream does. Inside a run it is a child of the run's
``invoke_agent`` span and tells that span the model it called; inside a summary it is marked
``omnisync.chat.purpose = "summary"`` and carries the summary's own usage.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from . import api, attributes as attr, content, metrics
from .spans import current_scope, error_type, record_error



class CalledModel(Protocol):
    """What a span reads of the model's settings (a :class:`~omnisync.model.config.ModelConfig`;
    described, not imported: the model package imports this one)."""

    @property
    def model(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def base_url(self) -> str: ...


class Answer(Protocol):
    """What a span reads of a completion (a :class:`~omnisync.model.completion.Completion`)."""

    @property
    def model(self) -> str | None: ...
    @property
    def id(self) -> str | None: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def usage(self) -> dict[str, Any]: ...
    def message(self) -> dict[str, Any]: ...


_Answer = TypeVar("_Answer", bound=Answer)


class ChatCall:
    """One model call's span and metrics; every method does nothing when telemetry is off."""

    def __init__(self, config: CalledModel, messages: Sequence[dict[str, Any]], *, streaming: bool = False) -> None:
        self._span: Any = None
        if not api.active():
            return
        from opentelemetry import trace

        scope = current_scope()
        self._attributes: dict[str, Any] = {attr.OPERATION: attr.CHAT, attr.PROVIDER: config.provider, attr.REQUEST_MODEL: config.model, **_server(config.base_url)}
        span_attributes = {**self._attributes, attr.CHAT_PURPOSE: scope.purpose if scope else attr.STEP, **(scope.attributes() if scope else {})}
        if streaming:
            span_attributes["omnisync.chat.streamed"] = True
        self._capture = scope.capture_content if scope is not None else content.capturing()
        if self._capture:
            span_attributes[attr.INPUT_MESSAGES] = content.messages(messages)
        self._span = api.tracer().start_span(f"{attr.CHAT} {config.model}", kind=trace.SpanKind.CLIENT, attributes=span_attributes)
        if scope is not None:
            scope.describe(attr.PROVIDER, config.provider)
            scope.describe(attr.REQUEST_MODEL, config.model)
        self._started = time.perf_counter()

    def finished(self, completion: _Answer) -> _Answer:
        """End the span with the call's answer; returns it."""
        span = self._span
        if span is None:
            return completion
        self._span = None
        answer: dict[str, Any] = {}  # set in one call: the SDK locks and checks the span for each
        if completion.model:
            answer[attr.RESPONSE_MODEL] = completion.model
        if completion.id:
            answer[attr.RESPONSE_ID] = completion.id
        if completion.finish_reason:
            answer[attr.FINISH_REASONS] = (completion.finish_reason,)
        usage = completion.usage or {}
        if isinstance(usage.get("prompt_tokens"), int):
            answer[attr.INPUT_TOKENS] = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            answer[attr.OUTPUT_TOKENS] = usage["completion_tokens"]
        if self._capture:
            answer[attr.OUTPUT_MESSAGES] = content.messages([completion.message()])
        span.set_attributes(answer)
        span.end()
        measured = {**self._attributes, **({attr.RESPONSE_MODEL: completion.model} if completion.model else {})}
        metrics.model_call(measured, time.perf_counter() - self._started, usage)
        return completion

    def failed(self, error: BaseException) -> None:
        """End the span with the call's error (its type only)."""
        span = self._span
        if span is None:
            return
        self._span = None
        record_error(span, error)
        span.end()
        metrics.model_call({**self._attributes, attr.ERROR_TYPE: error_type(error)}, time.perf_counter() - self._started, None)

    def stopped(self) -> None:
        """End the span of a streamed call its caller stopped midway (neither an answer nor an error)."""
        span = self._span
        if span is None:
            return
        self._span = None
        span.set_attribute("omnisync.chat.stopped", True)
        span.end()


@functools.lru_cache(maxsize=64)
def _server(base_url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of a model's URL (parsed once per URL; read only)."""
    address = urlsplit(base_url)
    if not address.hostname:
        return {}
    return {attr.SERVER_ADDRESS: address.hostname, attr.SERVER_PORT: address.port or (443 if address.scheme == "https" else 80)}
