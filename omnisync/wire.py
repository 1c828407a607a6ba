"""What crosses HTTP: stream events and errors as JSON, the same both ways.

The server writes them, :mod:`omnisync.remote` reads them back into the very classes a local
agent yields and raises, so code moves between a local and a remote agent unchanged. Needs
no web framework.
"""

from __future__ import annotations

from typing import Any, cast

from . import errors
from .errors import OmnisyncError, RemoteError
from .results import RunResult
from .run_events import RunFailed, RunFinished, RunPaused, RunStarted, TextDelta, ToolCall, ToolResult
from .streaming import StreamEvent

EVENT_NAMES: dict[type, str] = {
    RunStarted: "run_started",
    TextDelta: "text_delta",
    ToolCall: "tool_call",
    ToolResult: "tool_result",
    RunPaused: "run_paused",
    RunFinished: "run_finished",
    RunFailed: "run_failed",
}
ENDING_EVENTS = ("run_paused", "run_finished", "run_failed")

# An error's HTTP status, by the first class of its MRO found here.
STATUSES: dict[type[BaseException], int] = {
    errors.RunNotFoundError: 404,
    errors.SessionBusyError: 409,
    errors.RunConflictError: 409,
    errors.RunStateError: 409,
    errors.ConfigurationError: 422,
    errors.StoreError: 503,
    errors.ModelError: 502,
    errors.RemoteError: 502,
    errors.OmnisyncError: 500,
}


def http_status(error: BaseException) -> int:
    for klass in type(error).__mro__:
        if klass in STATUSES:
            return STATUSES[klass]
    return 500


def error_to_wire(error: BaseException) -> dict[str, Any]:
    """``{"type", "message"}`` and the error's context attributes; errors not omnisync's, and a
    store's (which may quote SQL, parameters, hosts or paths), are not described."""
    if not isinstance(error, OmnisyncError):
        return {"type": "InternalError", "message": "the server failed; its log says why"}
    if isinstance(error, errors.StoreError) and not isinstance(error, errors.NotSerializableError):
        return {"type": type(error).__name__, "message": "the store failed; the server's log says why"}
    wire: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    for name in ("run_id", "paused", "status_code", "request_id", "request_sent", "text", "problems"):
        if hasattr(error, name):
            wire[name] = getattr(error, name)
    return wire


def error_from_wire(wire: Any, http_status: int) -> OmnisyncError:
    """The omnisync error a server described, as its own class when omnisync has it."""
    if not isinstance(wire, dict):
        return RemoteError(f"the server answered {http_status} without an omnisync error body", status_code=http_status, body=wire)
    message = str(wire.get("message", ""))
    klass = getattr(errors, str(wire.get("type")), None)
    if not (isinstance(klass, type) and issubclass(klass, OmnisyncError)) or klass is RemoteError:
        return RemoteError(f"{http_status}: {message}", status_code=http_status, body=wire)
    if issubclass(klass, errors.ModelStatusError):
        return klass(message, status_code=int(wire.get("status_code") or 0), request_id=wire.get("request_id"), body=wire)
    if issubclass(klass, errors.ModelStreamError):
        return klass(message, body=wire)
    if issubclass(klass, errors.OutputValidationError):
        problems = wire.get("problems")
        return klass(message, text=wire.get("text"), problems=list(problems) if isinstance(problems, list) else [], run_id=wire.get("run_id"))
    if issubclass(klass, errors.SessionBusyError):
        return klass(message, run_id=wire.get("run_id"), paused=bool(wire.get("paused")))
    error = klass(message)
    if issubclass(klass, errors.ModelTimeoutError):
        error.request_sent = bool(wire.get("request_sent"))  # type: ignore[attr-defined]
    return error


def event_to_wire(event: StreamEvent) -> tuple[str, dict[str, Any]]:
    """The SSE event name and JSON data of a stream event."""
    name = EVENT_NAMES[type(event)]
    if isinstance(event, (RunPaused, RunFinished)):
        return name, {"run_id": event.result["run_id"], "result": event.result}
    if isinstance(event, RunFailed):
        return name, {"run_id": event.run_id, "error": error_to_wire(event.error)}
    return name, dict(event.__dict__)


def event_from_wire(name: str, data: dict[str, Any]) -> StreamEvent:
    if name == "run_started":
        return RunStarted(data["run_id"], data["session_id"], bool(data.get("resumed")))
    if name == "text_delta":
        return TextDelta(data["run_id"], data["text"])
    if name == "tool_call":
        return ToolCall(data["run_id"], data["call_id"], data["name"], data["arguments"])
    if name == "tool_result":
        return ToolResult(data["run_id"], data["call_id"], data["name"], data["content"])
    if name == "run_paused":
        return RunPaused(cast(RunResult, data["result"]))
    if name == "run_finished":
        return RunFinished(cast(RunResult, data["result"]))
    if name == "run_failed":
        return RunFailed(data.get("run_id"), error_from_wire(data.get("error"), 200))
    raise RemoteError(f"the server sent an event this client does not know: {name!r}; upgrade omnisync", status_code=200, body=data)


def run_id_of(event: StreamEvent) -> str | None:
    if isinstance(event, (RunPaused, RunFinished)):
        return event.result["run_id"]
    return event.run_id
