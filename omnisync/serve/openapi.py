"""``GET /openapi.json``: the routes of the app, their parameters, bodies and answers, declared by hand.

Declared here rather than read from docstrings, so the description needs no YAML parser and
each shape is written once. tests/serve/test_serve_schema.py runs schemathesis against a live server
with it: no 5xx, every answer in its declared shape. The result and record objects list the
keys every one has and allow more, so a key added to a result does not break old clients.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .openapi_parts import (
    AGENT,
    SESSION,
    RUN,
    PREFER,
    PAGE,
    OUTPUT_TYPE,
    COUNT,
    ERRORS,
    JSON,
    READ,
    SSE,
    STATUSES,
    STRING,
    WRITE,
    answer,
    json_body,
    nullable,
    operation,
    page_of,
    query_parameter,
    ref,
)

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


def _version() -> str:
    try:
        return version("omnisync")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


# A user message: text, or content parts as Chat Completions takes them (checked by the server).
MESSAGE: dict[str, Any] = {"oneOf": [STRING, {"type": "array", "minItems": 1, "items": {"type": "object"}}]}
# A JSON schema, or a whole response_format object; null for none.
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
        "/healthz": {"get": operation("the process is up", answer("up", status_object), open_=True)},
        "/readyz": {"get": operation("every agent's store answers", {**answer("ready", status_object), "503": {"description": "a store did not answer", "content": {JSON: {"schema": status_object}}}}, open_=True)},
        "/agents": {"get": operation("the agents this token may use", answer("their names", {"type": "object", "required": ["agents"], "properties": {"agents": {"type": "array", "items": STRING}}}, 401))},
        session + "/runs": {
            "post": operation(
                "start a run: its result as JSON, or its events with Accept: text/event-stream",
                answer("the run's result, or its events", ref("RunResult"), *WRITE, events=True),
                [AGENT, SESSION, {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string", "minLength": 1, "maxLength": 255}}, PREFER],
                {**json_body({"message": MESSAGE, "on_busy": {"enum": ["wait", "raise"]}, "output_type": OUTPUT_TYPE, "extra_body": EXTRA_BODY}, ["message"]), "required": True},
            )
        },
        "/agents/{agent}/sessions": {
            "get": operation(
                "the agent's sessions, a page at a time",
                answer("a page of sessions", page_of("sessions", {"type": "object", "required": ["session_id", "message_count", "last_activity"], "properties": {"session_id": STRING, "message_count": COUNT, "last_activity": nullable(STRING)}}), *READ),
                [AGENT, *PAGE],
            )
        },
        session + "/messages": {
            "get": operation(
                "a session's history, oldest first, a page at a time",
                answer("a page of messages", page_of("messages", ref("Message")), *READ),
                [AGENT, SESSION, query_parameter("include_inactive", {"type": "boolean"}, "also the messages a summary replaced"), *PAGE],
            )
        },
        session + "/usage": {"get": operation("a session's usage: every model call of its runs, summaries included", answer("the totals", USAGE_TOTALS, *READ), [AGENT, SESSION])},
        session: {"delete": operation("forget a session", answer("how many messages were deleted", {"type": "object", "required": ["deleted"], "properties": {"deleted": COUNT}}, *READ), [AGENT, SESSION])},
        "/agents/{agent}/runs": {
            "get": operation(
                "the agent's runs, a page at a time",
                answer("a page of run records", page_of("runs", ref("RunRecord")), *READ),
                [AGENT, query_parameter("status", {"enum": STATUSES}, "only runs in this state"), query_parameter("session", STRING, "only this session's runs"), *PAGE],
            )
        },
        run: {"get": operation("a run's record", answer("the record", ref("RunRecord"), *READ), [AGENT, RUN])},
        run + "/events": {
            "get": operation(
                "a run's events: replayed from the start or after Last-Event-ID (or ?after=), then live until it ends",
                {"200": {"description": "server-sent events", "content": {SSE: {"schema": STRING}}}, **{str(s): {"description": ERRORS[s], "content": {JSON: {"schema": ref("Error")}}} for s in (400, *READ)}},
                [AGENT, RUN, query_parameter("after", STRING, "an event id this server sent"), {"name": "Last-Event-ID", "in": "header", "required": False, "schema": STRING}],
            )
        },
        run + "/approvals": {
            "post": operation(
                "approve or deny one paused tool call; then resume",
                answer("the run as it stands", ref("RunResult"), *WRITE),
                [AGENT, RUN],
                {**json_body({"call_id": STRING, "approved": {"type": "boolean"}, "reason": nullable(STRING)}, ["call_id", "approved"]), "required": True},
            )
        },
        run + "/budget": {
            "post": operation(
                "raise a paused run's limits; then resume",
                answer("the run as it stands", ref("RunResult"), *WRITE),
                [AGENT, RUN],
                {**json_body({name: COUNT for name in ("extra_tool_calls", "extra_tokens", "extra_steps")}, []), "required": True},
            )
        },
        run + "/resume": {"post": operation("resume a paused run (JSON, or SSE with Accept: text/event-stream)", answer("its result, or its events", ref("RunResult"), *WRITE, events=True), [AGENT, RUN, PREFER], json_body({"output_type": OUTPUT_TYPE}, []))},
        run + "/cancel": {
            "post": operation(
                "stop a run; its text so far is kept",
                {
                    **answer("the run as it ended", ref("RunResult"), *WRITE),
                    "202": {"description": "the cancel is asked of the run's driver (elsewhere), which stops it at its next step", "content": {JSON: {"schema": ref("RunResult")}}},
                },
                [AGENT, RUN],
                json_body({"reason": nullable(STRING)}, []),
            )
        },
    }
    from .openai_api.described import openai_paths

    paths.update(openai_paths())
    paths.update(history_routes.paths(session))
    return {
        "openapi": "3.1.0",
        "info": {"title": "omnisync serve", "version": _version(), "description": "An omnisync agent's sessions and runs over JSON and server-sent events. GET / is a page to try it."},
        "paths": paths,
        "components": {"schemas": SCHEMAS, "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
    }
