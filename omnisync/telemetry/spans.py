"""What every omnisync span shares: the run it belongs to, and errors recorded without their text.

A run's scope (:class:`RunScope`: its agent, its session) travels in the OpenTelemetry
context beside the span, so a model call, a tool or a store call made inside the run carries
``gen_ai.conversation.id`` and ``gen_ai.agent.name`` without being told them.

An error on a span says its type only (``error.type``, an ``exception`` event with
``exception.type``): an exception's message can quote a prompt, a tool's arguments or a
server's answer, so it never leaves the process this way.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from . import attributes as attr


@dataclass
class RunScope:
    """What the spans made inside one run (or one summary) inherit."""

    agent: str
    session_id: str | None
    span: Any = None  # the run's own span, told the model it calls by its first chat span
    capture_content: bool = False
    purpose: str = attr.STEP
    told: dict[str, Any] = field(default_factory=dict)  # the span's attributes learned while it runs

    def attributes(self) -> dict[str, Any]:
        found: dict[str, Any] = {attr.AGENT_NAME: self.agent}
        if self.session_id is not None:
            found[attr.CONVERSATION] = self.session_id
        return found

    def describe(self, name: str, value: Any) -> None:
        """Tell the run's span an attribute it learned (the first value named holds: the model of its first call)."""
        if value is not None:
            self.told.setdefault(name, value)

    def tell(self, name: str, value: Any) -> None:
        """Tell the run's span an attribute, replacing what it held (its status as the run goes on)."""
        self.told[name] = value

    def told_to_span(self) -> None:
        """Set what the span learned, in one call, just before it ends (the SDK takes a lock and
        checks the span for each call: one call instead of one per attribute)."""
        if self.told and self.span is not None:
            self.span.set_attributes(self.told)


@functools.cache
def _scope_key() -> Any:
    from opentelemetry.context import create_key

    return create_key("omnisync-run-scope")


def with_scope(scope: RunScope, context: Any) -> Any:
    """``context`` carrying ``scope``."""
    from opentelemetry.context import set_value

    return set_value(_scope_key(), scope, context)


def current_scope() -> RunScope | None:
    """The scope of the run this code runs in, if any."""
    from opentelemetry.context import get_value

    scope = get_value(_scope_key())
    return scope if isinstance(scope, RunScope) else None


def error_type(error: BaseException) -> str:
    """``error.type``: the exception's fully qualified class name."""
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def record_error(span: Any, error: BaseException | str) -> None:
    """Mark ``span`` failed with ``error``'s type: never its message (see the module's docstring)."""
    from opentelemetry.trace import Status, StatusCode

    kind = error if isinstance(error, str) else error_type(error)
    span.set_attribute(attr.ERROR_TYPE, kind)
    if not isinstance(error, str):
        span.add_event("exception", {"exception.type": kind})
    span.set_status(Status(StatusCode.ERROR, kind))
