"""The ``invoke_agent`` span: one per run, resume or stream, around the run loop's generator.

:func:`traced_run` decorates :meth:`Runner.start <omnisync.runner.Runner.start>` and
``resume``: the loop they return is wrapped so that each step of it runs with the run's span
current (its store calls and tools become children), and the events it yields tell the span
the run's id, its status and its usage. The runner names those events' types
(:class:`RunEventTypes`): the events' module imports the model package, which imports this one. :func:`within_run` gives the driver's model call the
same context, so a ``chat`` span is a child too. The context is attached for each step and
detached before each event leaves, so a caller iterating a stream in turns, from threads, or
with spans of its own, never sees it left behind.

Approval and budget waits are events on the span (``omnisync.run.awaiting_approval``), not
open spans: the run's span ends when it pauses, and the span of its resume links back to it
(the span context is kept in the run record, see :mod:`.propagation`).
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from . import api, attributes as attr, content, metrics
from .spans import RunScope, error_type, record_error, with_scope

_Yield = TypeVar("_Yield")
_Method = TypeVar("_Method", bound=Callable[..., Any])


@dataclass(frozen=True)
class RunEventTypes:
    """The run loop's events a run's span reads: ``started`` (with ``run_id`` and ``session_id``),
    ``paused`` and ``finished`` (each with the run's ``result``)."""

    started: type[Any]
    paused: type[Any]
    finished: type[Any]


def traced_run(events: RunEventTypes) -> Callable[[_Method], _Method]:
    """A decorator: the run loop a Runner method returns, wrapped in its ``invoke_agent`` span
    (a no-op without opentelemetry)."""

    def decorate(method: _Method) -> _Method:
        parameters = list(inspect.signature(method).parameters)[1:]  # after the runner
        session_at = parameters.index("session_id") if "session_id" in parameters else None

        @functools.wraps(method)
        def traced(runner: Any, *args: Any, **kwargs: Any) -> Any:
            steps = method(runner, *args, **kwargs)
            if not api.active():
                return steps
            session_id = kwargs.get("session_id", args[session_at] if session_at is not None and session_at < len(args) else None)
            capture = content.capturing(getattr(runner.config, "capture_message_content", False))
            return TracedSteps(steps, events, runner.agent, session_id, resumed=method.__name__ == "resume", capture_content=capture)

        return traced  # type: ignore[return-value]

    return decorate


def traced_wait(method: _Method) -> _Method:
    """Time a Runner's wait for a busy session (``omnisync.session.wait.duration``)."""

    @functools.wraps(method)
    def timed(runner: Any, *args: Any, **kwargs: Any) -> Any:
        if not api.metering():
            return method(runner, *args, **kwargs)
        started = time.perf_counter()
        try:
            return method(runner, *args, **kwargs)
        finally:
            metrics.session_waited(runner.agent, time.perf_counter() - started)

    return timed  # type: ignore[return-value]


class TracedSteps(Generator[Any, Any, Any]):
    """The run loop, stepped inside its ``invoke_agent`` span's context."""

    def __init__(
        self,
        steps: Generator[Any, Any, Any],
        events: RunEventTypes,
        agent: str,
        session_id: str | None,
        *,
        resumed: bool,
        capture_content: bool,
    ) -> None:
        from opentelemetry import context, trace

        self._steps = steps
        self._events = events
        self.scope: RunScope = RunScope(agent, session_id, capture_content=capture_content)
        self._metric_attributes = {attr.OPERATION: attr.INVOKE_AGENT, attr.AGENT_NAME: agent}
        self.span: Any = api.tracer().start_span(
            f"{attr.INVOKE_AGENT} {agent}",
            kind=trace.SpanKind.INTERNAL,
            attributes={**self._metric_attributes, **self.scope.attributes(), attr.RUN_RESUMED: resumed},
        )
        self.scope.span = self.span
        self.context: Any = with_scope(self.scope, trace.set_span_in_context(self.span, context.get_current()))
        self._started = time.perf_counter()
        self._status: str | None = None
        self._ended = False

    # --- the generator protocol, each step in the run's context ----------------------------

    def send(self, value: Any) -> Any:
        return self._step(self._steps.send, value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:  # noqa: ARG002 - the one-argument form is what drivers use
        return self._step(self._steps.throw, typ if val is None else val)

    def close(self) -> None:
        from opentelemetry import context

        token = context.attach(self.context)
        try:
            self._steps.close()
        finally:
            context.detach(token)
            self._end()

    def _step(self, step: Callable[[Any], Any], value: Any) -> Any:
        from opentelemetry import context

        token = context.attach(self.context)
        try:
            event = step(value)
        except StopIteration:
            self._end()
            raise
        except BaseException as error:
            self._end(error)
            raise
        finally:
            context.detach(token)
        self._saw(event)
        return event

    # --- what the events tell the span -------------------------------------------------------

    def _saw(self, event: Any) -> None:
        events = self._events
        if isinstance(event, events.started):
            self.scope.tell(attr.RUN_ID, event.run_id)
            if self.scope.session_id is None:
                self.scope.session_id = event.session_id
                self.scope.tell(attr.CONVERSATION, event.session_id)
        elif isinstance(event, (events.paused, events.finished)):
            self._ending(event.result, paused=isinstance(event, events.paused))

    def _ending(self, result: Any, *, paused: bool) -> None:
        status = result["status"]
        self._status = status
        span = self.span
        usage = result.get("usage") or {}
        if isinstance(usage.get("prompt_tokens"), int):
            self.scope.tell(attr.INPUT_TOKENS, usage["prompt_tokens"])
        if isinstance(usage.get("completion_tokens"), int):
            self.scope.tell(attr.OUTPUT_TOKENS, usage["completion_tokens"])
        if paused:
            for approval in result.get("approvals") or ():
                span.add_event("omnisync.run.awaiting_approval", {attr.TOOL_NAME: approval["tool"], attr.TOOL_CALL_ID: approval["id"]})
            if result.get("budget_request"):
                span.add_event("omnisync.run.awaiting_budget", {"omnisync.budget.limit": str(result["budget_request"].get("limit"))})
        elif status == "failed":
            record_error(span, "omnisync.run_failed")
        elif self.scope.capture_content and result.get("response"):
            self.scope.tell(attr.OUTPUT_MESSAGES, content.as_json([{"role": "assistant", "parts": [{"type": "text", "content": result["response"]}]}]))

    def _end(self, error: BaseException | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        if error is not None and not isinstance(error, GeneratorExit):
            record_error(self.span, error)
            self._status = self._status or "failed"
        status = self._status or "cancelled"
        self.scope.tell(attr.RUN_STATUS, status)
        self.scope.told_to_span()
        attributes = dict(self._metric_attributes)
        if error is not None and not isinstance(error, GeneratorExit):
            attributes[attr.ERROR_TYPE] = error_type(error)
        metrics.run_ended(attributes, time.perf_counter() - self._started, status)
        self.span.end()


def within_run(steps: Any, reply: Generator[_Yield, None, Any]) -> Generator[_Yield, None, Any]:
    """``reply`` (a driver's answer to a model call) run in the context of ``steps``' run, if it is traced."""
    if not isinstance(steps, TracedSteps):
        return reply
    return _in_context(steps.context, reply)


def _in_context(run_context: Any, inner: Generator[_Yield, None, Any]) -> Generator[_Yield, None, Any]:
    from opentelemetry import context

    while True:
        token = context.attach(run_context)
        try:
            item = inner.send(None)
        except StopIteration as stop:
            return stop.value
        finally:
            context.detach(token)
        try:
            yield item
        except GeneratorExit:
            inner.close()
            raise
