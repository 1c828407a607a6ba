"""OpenTelemetry spans and metrics of runs, as the GenAI semantic conventions name them (``omnisync[otel]``).

Spans: ``invoke_agent {agent}`` per run, resume or stream (:mod:`.run`); ``chat {model}`` per
model call, summaries marked (:mod:`.chat`, :mod:`.summary`); ``execute_tool {tool}`` per tool
(:mod:`.tools`); ``omnisync.store.{operation}`` per store round trip (:mod:`.stores`); each
with ``gen_ai.conversation.id``. Metrics in :mod:`.metrics`; traces across processes in
:mod:`.propagation`; content only when asked for (:mod:`.content`).

Without ``opentelemetry-api`` installed nothing here imports it and every hook returns what it
was given (:mod:`.api`). This package's hooks are called from a few lines of the run loop, the
model client, the router, the summarizer, ``omnisync serve`` and RemoteAgent; it has no public
names of its own: the application configures OpenTelemetry's SDK as it likes.
"""

from .chat import ChatCall
from .propagation import ContinueTrace, current_traceparent, link_to, trace_headers
from .run import RunEventTypes, traced_run, traced_wait, within_run
from .stores import traced_store
from .summary import summarizing
from .tools import run_tool

__all__ = [
    "ChatCall",
    "ContinueTrace",
    "RunEventTypes",
    "current_traceparent",
    "link_to",
    "run_tool",
    "summarizing",
    "trace_headers",
    "traced_run",
    "traced_store",
    "traced_wait",
    "within_run",
]
