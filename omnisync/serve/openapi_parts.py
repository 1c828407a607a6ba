"""The pieces every part of ``GET /openapi.json`` is built from: media types, references,
parameters, answers with their error statuses, and operations. ``openapi.py`` describes the
app's own routes with them, ``history_routes.py`` and ``openai_api/described.py`` theirs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..storable import MAX_ID_LENGTH
from .bodies import MAX_PAGE

JSON = "application/json"
SSE = "text/event-stream"
STATUSES = ["running", "awaiting_approval", "awaiting_budget", "completed", "failed", "cancelled"]


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


STRING: dict[str, Any] = {"type": "string"}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}

def json_body(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {"required": False, "content": {JSON: {"schema": schema}}}


RUN_ID_HEADER: dict[str, Any] = {"description": "the run's id, sent before its result or first event", "schema": STRING}


def answer(description: str, schema: dict[str, Any], *errors: int, events: bool = False) -> dict[str, Any]:
    content: dict[str, Any] = {JSON: {"schema": schema}}
    if events:
        content[SSE] = {"schema": STRING}
    responses: dict[str, Any] = {"200": {"description": description, "content": content}}
    if events:  # a start or resume: it names its run, and answers 202 at once when asked to
        responses["200"]["headers"] = {"Omnisync-Run-Id": RUN_ID_HEADER}
        responses["202"] = {
            "description": "with Prefer: respond-async, the run started and goes on: where its record and events are",
            "headers": {"Omnisync-Run-Id": RUN_ID_HEADER, "Location": {"description": "the run's record", "schema": STRING}},
            "content": {JSON: {"schema": ref("RunAccepted")}},
        }
    for status in errors:
        responses[str(status)] = {"description": ERRORS[status], "content": {JSON: {"schema": ref("Error")}}}
    return responses


ERRORS = {
    400: "the body is not JSON, or nests too deep",
    401: "no token, or one this server does not know",
    404: "no such agent for this token, or no such run",
    408: "the body did not arrive in time",
    409: "the session is busy, or the run is in another state",
    413: "the body is over the server's limit",
    415: "a server without tokens: the body is not sent as JSON",
    421: "a server without tokens: the Host is not loopback",
    422: "a field, id or query parameter is not valid (or holds what no store keeps: a NUL, a lone surrogate, too many characters)",
    502: "the model failed",
    503: "the store did not answer (the error names a request id the server's log has)",
}
READ = (401, 404, 421, 422, 503)
WRITE = (400, 401, 404, 408, 409, 413, 415, 421, 422, 502, 503)


def path_parameter(name: str, description: str, max_length: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": 1, **({"maxLength": max_length} if max_length else {})}
    return {"name": name, "in": "path", "required": True, "description": description, "schema": schema}


def query_parameter(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


def page_of(key: str, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [key, "next_cursor"],
        "properties": {key: {"type": "array", "items": item}, "next_cursor": nullable(STRING)},
    }


def operation(summary: str, responses: dict[str, Any], parameters: Sequence[dict[str, Any]] = (), body: dict[str, Any] | None = None, open_: bool = False) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": summary, "parameters": list(parameters), "responses": responses}
    if body is not None:
        operation["requestBody"] = body
    if open_:
        operation["security"] = []
    return operation


AGENT = path_parameter("agent", "the agent's name (GET /agents lists them)")
SESSION = path_parameter("session", "the session's id", MAX_ID_LENGTH)
RUN = path_parameter("run_id", "the run's id", MAX_ID_LENGTH)
PREFER: dict[str, Any] = {"name": "Prefer", "in": "header", "required": False, "description": "respond-async: answer 202 once the run has started", "schema": STRING}
PAGE = [
    query_parameter("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}, "how many on a page (default 50)"),
    query_parameter("cursor", STRING, "the next_cursor of the previous page"),
]
OUTPUT_TYPE: dict[str, Any] = {"oneOf": [{"type": "object"}, {"type": "null"}]}
