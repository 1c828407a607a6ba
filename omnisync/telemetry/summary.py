"""The span of one summary (a fold of a session's oldest messages), written off the caller's thread.

Its store calls and its model call (``chat {model}``, marked ``omnisync.chat.purpose =
"summary"``, with the summary's own usage) are its children; it carries the session as
``gen_ai.conversation.id``, names the run whose end asked for it and links to that run's span.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from . import api, attributes as attr, content
from .propagation import link_to
from .spans import RunScope, record_error, with_scope


@contextmanager
def summarizing(
    agent: str, session_id: str, run_id: str | None, *, capture_content: bool = False, run_trace: Callable[[], str | None] | None = None
) -> Iterator[None]:
    """Everything inside is the summary's: spans of it carry the session and the summary purpose.

    ``run_trace`` gives the ``traceparent`` of the run that asked for the summary (read only when
    tracing): the summary's span, a trace of its own, links to that run's.
    """
    if not api.tracing():
        yield
        return
    from opentelemetry import context, trace

    scope = RunScope(agent, session_id, capture_content=content.capturing(capture_content), purpose=attr.SUMMARY)
    attributes = {**scope.attributes(), **({attr.RUN_ID: run_id} if run_id else {})}
    with api.tracer().start_as_current_span(
        f"summarize {agent}", kind=trace.SpanKind.INTERNAL, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        scope.span = span
        token = context.attach(with_scope(scope, context.get_current()))
        try:
            if run_trace is not None:  # its store read is the summary's first child
                link_to(run_trace(), why="summarizes")
            yield
        except BaseException as error:
            record_error(span, error)
            raise
        finally:
            context.detach(token)
            scope.told_to_span()
