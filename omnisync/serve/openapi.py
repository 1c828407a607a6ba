"""``GET /openapi.json``: the routes of the app, their parameters, bodies and answers, declared by hand.

Declared here rather than read from docstrings, so the description needs no YAML parser and
each shape is written once. tests/test_serve_schema.py runs schemathesis against a live server
with it: no 5xx, every answer in its declared shape. The result and record objects list the
keys every one has and allow more, so a key added to a result does not break old clients.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
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

SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "object", "required": ["type", "message"], "properties": {"type": STRING, "message": STRING}}},
    },
    "Usage": {"type": "object", "additionalProperties": {"anyOf": [COUNT, {"type": "object"}, {"type": "boolean"}]}},
    "Approval": {"type": "object", "required": ["id", "tool", "arguments"], "properties": {"id": STRING, "tool": STRING, "arguments": STRING}},
    "RunResult": {
        "type": "object",
        "required": ["response", "session_id", "run_id", "status", "usage", "steps", "truncated"],
        "properties": {
            "response": nullable(STRING),
            "session_id": STRING,
            "run_id": STRING,
            "status": {"enum": STATUSES},
            "usage": ref("Usage"),
            "steps": COUNT,
            "truncated": {"type": "boolean"},
            "approvals": {"type": "array", "items": ref("Approval")},
            "budget_request": nullable({"type": "object", "required": ["limit", "used", "allowed"]}),
            "error": STRING,
        },
    },
    "RunRecord": {
        "type": "object",
        "required": ["run_id", "agent", "session_id", "kind", "status", "step", "usage", "created_at", "updated_at"],
        "properties": {
            "run_id": STRING,
            "agent": STRING,
            "session_id": STRING,
            "kind": {"enum": ["run", "fold", "session"]},
            "status": {"enum": STATUSES},
            "step": COUNT,
            "usage": ref("Usage"),
            "created_at": nullable(STRING),
            "updated_at": nullable(STRING),
        },
    },
    "RunAccepted": {
        "type": "object",
        "required": ["run_id", "run", "events"],
        "properties": {"run_id": STRING, "run": STRING, "events": STRING},
    },
    "Message": {
        "type": "object",
        "required": ["role", "content"],
        "properties": {
            "role": {"enum": ["system", "user", "assistant", "tool"]},
            "content": {"anyOf": [STRING, {"type": "array", "items": {"type": "object", "required": ["type"]}}, {"type": "null"}]},
            "tool_calls": {"type": "array", "items": {"type": "object"}},
        },
    },
}


def _body(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {"required": False, "content": {JSON: {"schema": schema}}}


RUN_ID_HEADER: dict[str, Any] = {"description": "the run's id, sent before its result or first event", "schema": STRING}


def _answer(description: str, schema: dict[str, Any], *errors: int, events: bool = False) -> dict[str, Any]:
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


def _path(name: str, description: str, max_length: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": 1, **({"maxLength": max_length} if max_length else {})}
    return {"name": name, "in": "path", "required": True, "description": description, "schema": schema}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


AGENT = _path("agent", "the agent's name (GET /agents lists them)")
SESSION = _path("session", "the session's id", MAX_ID_LENGTH)
RUN = _path("run_id", "the run's id", MAX_ID_LENGTH)
PREFER: dict[str, Any] = {"name": "Prefer", "in": "header", "required": False, "description": "respond-async: answer 202 once the run has started", "schema": STRING}
PAGE = [
    _query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}, "how many on a page (default 50)"),
    _query("cursor", STRING, "the next_cursor of the previous page"),
]


def _page_of(key: str, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [key, "next_cursor"],
        "properties": {key: {"type": "array", "items": item}, "next_cursor": nullable(STRING)},
    }


def _op(summary: str, responses: dict[str, Any], parameters: Sequence[dict[str, Any]] = (), body: dict[str, Any] | None = None, open_: bool = False) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": summary, "parameters": list(parameters), "responses": responses}
    if body is not None:
        operation["requestBody"] = body
    if open_:
        operation["security"] = []
    return operation


def _version() -> str:
    try:
        return version("omnisync")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


# A user message: text, or content parts as Chat Completions takes them (checked by the server).
MESSAGE: dict[str, Any] = {"oneOf": [STRING, {"type": "array", "minItems": 1, "items": {"type": "object"}}]}
# A JSON schema, or a whole response_format object; null for none.
OUTPUT_TYPE: dict[str, Any] = {"oneOf": [{"type": "object"}, {"type": "null"}]}
# A server's own request options for this run's model calls (checked as model_config's extra_body).
EXTRA_BODY: dict[str, Any] = nullable({"type": "object"})
_TOTALS: dict[str, Any] = {"type": "object", "additionalProperties": True}
USAGE_TOTALS: dict[str, Any] = {
    "type": "object",
    "required": ["usage", "by_kind", "model_calls", "runs"],
    "properties": {"usage": _TOTALS, "by_kind": _TOTALS, "model_calls": _TOTALS, "runs": COUNT},
}


@lru_cache(maxsize=1)
def describe() -> dict[str, Any]:
    """The OpenAPI 3.1 description of the app's JSON and event routes."""
    from . import history_routes

    run, session = "/agents/{agent}/runs/{run_id}", "/agents/{agent}/sessions/{session}"
    status_object = {"type": "object", "required": ["status"], "properties": {"status": STRING}}
    paths = {
        "/healthz": {"get": _op("the process is up", _answer("up", status_object), open_=True)},
        "/readyz": {"get": _op("every agent's store answers", {**_answer("ready", status_object), "503": {"description": "a store did not answer", "content": {JSON: {"schema": status_object}}}}, open_=True)},
        "/agents": {"get": _op("the agents this token may use", _answer("their names", {"type": "object", "required": ["agents"], "properties": {"agents": {"type": "array", "items": STRING}}}, 401))},
        session + "/runs": {
            "post": _op(
                "start a run: its result as JSON, or its events with Accept: text/event-stream",
                _answer("the run's result, or its events", ref("RunResult"), *WRITE, events=True),
                [AGENT, SESSION, {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string", "minLength": 1, "maxLength": 255}}, PREFER],
                {**_body({"message": MESSAGE, "on_busy": {"enum": ["wait", "raise"]}, "output_type": OUTPUT_TYPE, "extra_body": EXTRA_BODY}, ["message"]), "required": True},
            )
        },
        "/agents/{agent}/sessions": {
            "get": _op(
                "the agent's sessions, a page at a time",
                _answer("a page of sessions", _page_of("sessions", {"type": "object", "required": ["session_id", "message_count", "last_activity"], "properties": {"session_id": STRING, "message_count": COUNT, "last_activity": nullable(STRING)}}), *READ),
                [AGENT, *PAGE],
            )
        },
        session + "/messages": {
            "get": _op(
                "a session's history, oldest first, a page at a time",
                _answer("a page of messages", _page_of("messages", ref("Message")), *READ),
                [AGENT, SESSION, _query("include_inactive", {"type": "boolean"}, "also the messages a summary replaced"), *PAGE],
            )
        },
        session + "/usage": {"get": _op("a session's usage: every model call of its runs, summaries included", _answer("the totals", USAGE_TOTALS, *READ), [AGENT, SESSION])},
        session: {"delete": _op("forget a session", _answer("how many messages were deleted", {"type": "object", "required": ["deleted"], "properties": {"deleted": COUNT}}, *READ), [AGENT, SESSION])},
        "/agents/{agent}/runs": {
            "get": _op(
                "the agent's runs, a page at a time",
                _answer("a page of run records", _page_of("runs", ref("RunRecord")), *READ),
                [AGENT, _query("status", {"enum": STATUSES}, "only runs in this state"), _query("session", STRING, "only this session's runs"), *PAGE],
            )
        },
        run: {"get": _op("a run's record", _answer("the record", ref("RunRecord"), *READ), [AGENT, RUN])},
        run + "/events": {
            "get": _op(
                "a run's events: replayed from the start or after Last-Event-ID (or ?after=), then live until it ends",
                {"200": {"description": "server-sent events", "content": {SSE: {"schema": STRING}}}, **{str(s): {"description": ERRORS[s], "content": {JSON: {"schema": ref("Error")}}} for s in (400, *READ)}},
                [AGENT, RUN, _query("after", STRING, "an event id this server sent"), {"name": "Last-Event-ID", "in": "header", "required": False, "schema": STRING}],
            )
        },
        run + "/approvals": {
            "post": _op(
                "approve or deny one paused tool call; then resume",
                _answer("the run as it stands", ref("RunResult"), *WRITE),
                [AGENT, RUN],
                {**_body({"call_id": STRING, "approved": {"type": "boolean"}, "reason": nullable(STRING)}, ["call_id", "approved"]), "required": True},
            )
        },
        run + "/budget": {
            "post": _op(
                "raise a paused run's limits; then resume",
                _answer("the run as it stands", ref("RunResult"), *WRITE),
                [AGENT, RUN],
                {**_body({name: COUNT for name in ("extra_tool_calls", "extra_tokens", "extra_steps")}, []), "required": True},
            )
        },
        run + "/resume": {"post": _op("resume a paused run (JSON, or SSE with Accept: text/event-stream)", _answer("its result, or its events", ref("RunResult"), *WRITE, events=True), [AGENT, RUN, PREFER], _body({"output_type": OUTPUT_TYPE}, []))},
        run + "/cancel": {
            "post": _op(
                "stop a run; its text so far is kept",
                {
                    **_answer("the run as it ended", ref("RunResult"), *WRITE),
                    "202": {"description": "the cancel is asked of the run's driver (elsewhere), which stops it at its next step", "content": {JSON: {"schema": ref("RunResult")}}},
                },
                [AGENT, RUN],
                _body({"reason": nullable(STRING)}, []),
            )
        },
    }
    from .openai_api.described import openai_paths  # it uses this module's helpers

    paths.update(openai_paths())
    paths.update(history_routes.paths(session, sys.modules[__name__]))
    return {
        "openapi": "3.1.0",
        "info": {"title": "omnisync serve", "version": _version(), "description": "An omnisync agent's sessions and runs over JSON and server-sent events. GET / is a page to try it."},
        "paths": paths,
        "components": {"schemas": SCHEMAS, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
    }
