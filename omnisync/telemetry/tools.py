"""The ``execute_tool {tool}`` span: one per tool the run loop runs."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from . import api, attributes as attr, content
from .spans import current_scope, record_error

if TYPE_CHECKING:
    from ..tools.registry import Tool

_RAISED = re.compile(r"Error: .+? raised (\w+):")  # how Tool.call reports a tool that raised


def run_tool(tool: Tool, call: dict[str, Any]) -> str:
    """``tool.call`` on the model's tool call ``call``, inside its span."""
    arguments = call["function"].get("arguments") or "{}"
    if not api.tracing():
        return tool.call(arguments)
    from opentelemetry import context, trace

    name = call["function"]["name"]
    scope = current_scope()
    attributes: dict[str, Any] = {
        attr.OPERATION: attr.EXECUTE_TOOL,
        attr.TOOL_NAME: name,
        attr.TOOL_CALL_ID: call["id"],
        attr.TOOL_TYPE: "function",
        **(scope.attributes() if scope else {}),
    }
    capture = scope.capture_content if scope is not None else content.capturing()
    if capture:
        attributes[attr.TOOL_ARGUMENTS] = content.redacted(arguments if isinstance(arguments, str) else content.as_json(arguments))
    span = api.tracer().start_span(f"{attr.EXECUTE_TOOL} {name}", kind=trace.SpanKind.INTERNAL, attributes=attributes)
    token = context.attach(trace.set_span_in_context(span))  # the tool's own spans are its children
    try:
        result = tool.call(arguments)
    except BaseException as error:
        record_error(span, error)
        raise
    else:
        raised = _RAISED.match(result)
        if raised:  # the tool raised; the model is told, the span says which type only
            record_error(span, raised[1])
        if capture:
            span.set_attribute(attr.TOOL_RESULT, content.redacted(result))
        return result
    finally:
        context.detach(token)
        span.end()
