"""The routes that edit and search history (omnisync/history_edit.py), and their OpenAPI description.

    POST   /agents/{agent}/sessions/{session}/fork        a new session with the history up to ``at``
    POST   /agents/{agent}/sessions/{session}/undo        the last run's messages made inactive
    POST   /agents/{agent}/sessions/{session}/regenerate  undo, then run the same message again
                                                          (JSON, or SSE with Accept: text/event-stream)
    GET    /agents/{agent}/search?q=                      the agent's messages holding every word
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeAlias, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .. import aio
from ..aio_stream import AsyncAgentStream
from ..content import UserContent
from ..errors import ConfigurationError
from ..history_edit import MAX_SEARCH_LIMIT, MAX_SEQ
from ..runner import ON_BUSY
from ..storable import MAX_ID_LENGTH
from . import openapi_parts as o
from .bodies import Fields, RUN_FIELDS, checked_id, checked_output_type, checked_text, only_params

AgentOf: TypeAlias = Callable[[Request], tuple[str, aio.OmniCoreAgent]]
"""The served agent a request names (and its name), or the 401/404 the app answers."""
BodyOf: TypeAlias = Callable[[Request, Fields], Awaitable[dict[str, Any]]]
"""The request's JSON body, checked against the fields."""
Answer: TypeAlias = Callable[[Request, str, aio.OmniCoreAgent, AsyncAgentStream], Awaitable[Response]]
"""A run's stream driven apart from the request, answered as JSON or SSE as the request asks."""
Handler: TypeAlias = Callable[[Request], Awaitable[Response]]

FORK_FIELDS: Fields = {"at": ((int, type(None)), False), "new_session_id": ((str, type(None)), False)}
REGENERATE_FIELDS: Fields = {name: RUN_FIELDS[name] for name in ("on_busy", "output_type")}
MAX_QUERY_CHARS = 1000


def routes(agent_of: AgentOf, body_of: BodyOf, answer: Answer, session: str) -> list[tuple[str, str, Handler]]:
    """The (method, path, handler) of each route, for the app's table."""

    async def fork(request: Request) -> Response:
        _name, agent = agent_of(request)
        body = await body_of(request, FORK_FIELDS)
        new = body.get("new_session_id")
        forked = await agent.fork_session(_session(request), at=body.get("at"), new_session_id=checked_id(new, "new_session_id") if new is not None else None)
        return JSONResponse({"session_id": forked})

    async def undo(request: Request) -> Response:
        _name, agent = agent_of(request)
        await body_of(request, {})
        return JSONResponse({"messages": await agent.undo(_session(request))})

    async def regenerate(request: Request) -> Response:
        name, agent = agent_of(request)
        body = await body_of(request, REGENERATE_FIELDS)
        session_id = _session(request)
        on_busy, output_type = body.get("on_busy", "raise"), checked_output_type(body)
        if on_busy not in ON_BUSY:  # refused before the undo, so a bad request changes nothing
            raise ConfigurationError(f"on_busy must be one of {', '.join(ON_BUSY)}, not {on_busy!r}")
        undone = await agent.undo(session_id)
        stream = agent.stream(cast(UserContent, undone[0]["content"]), session_id, on_busy, output_type)
        return await answer(request, name, agent, stream)

    async def search(request: Request) -> Response:
        _name, agent = agent_of(request)
        only_params(request, "q", "session", "limit", "before", "after")
        if "q" not in request.query_params:
            raise ConfigurationError("search needs q, the words to find: ?q=...")
        query = checked_text(request.query_params["q"], "q", MAX_QUERY_CHARS)
        session_id = request.query_params.get("session")
        limit_text = request.query_params.get("limit", "10")
        if not (limit_text.isdigit() and limit_text.isascii() and 1 <= int(limit_text) <= MAX_SEARCH_LIMIT):
            raise ConfigurationError(f"limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}, not {limit_text!r}")
        hits = await agent.search_history(
            query,
            session_id=checked_id(session_id, "session") if session_id is not None else None,
            limit=int(limit_text),
            before=_moment(request, "before"),
            after=_moment(request, "after"),
        )
        return JSONResponse({"hits": hits})

    return [
        ("POST", session + "/fork", fork),
        ("POST", session + "/undo", undo),
        ("POST", session + "/regenerate", regenerate),
        ("GET", "/agents/{agent}/search", search),
    ]


def _session(request: Request) -> str:
    return checked_id(request.path_params["session"], "session")


def _moment(request: Request, name: str) -> datetime | None:
    text = request.query_params.get(name)
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ConfigurationError(f"{name} must be an ISO 8601 time with its offset (2026-12-05T10:00:00+00:00), not {text[:60]!r}")
    return moment


def paths(session: str) -> dict[str, Any]:
    """These routes' OpenAPI paths, in the pieces of :mod:`omnisync.serve.openapi_parts`."""
    hit = {
        "type": "object",
        "required": ["session_id", "seq", "role", "snippet", "score", "created_at"],
        "properties": {"session_id": o.STRING, "seq": o.COUNT, "role": o.STRING, "snippet": o.STRING, "score": {"type": "number"}, "created_at": o.nullable(o.STRING)},
    }
    return {
        session + "/fork": {
            "post": o.operation(
                "copy the session's history up to message `at` (a seq; default all) into a new session",
                o.answer("the new session's id", {"type": "object", "required": ["session_id"], "properties": {"session_id": o.STRING}}, *o.WRITE),
                [o.AGENT, o.SESSION],
                o.json_body({"at": o.nullable({"type": "integer", "minimum": 1, "maximum": MAX_SEQ}), "new_session_id": o.nullable({"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH})}, []),
            )
        },
        session + "/undo": {
            "post": o.operation(
                "make the session's last run inactive (kept for include_inactive)",
                o.answer("the messages made inactive", {"type": "object", "required": ["messages"], "properties": {"messages": {"type": "array", "items": o.ref("Message")}}}, *o.WRITE),
                [o.AGENT, o.SESSION],
                o.json_body({}, []),
            )
        },
        session + "/regenerate": {
            "post": o.operation(
                "undo the last run, then run its message again (JSON, or SSE with Accept: text/event-stream)",
                o.answer("the new run's result, or its events", o.ref("RunResult"), *o.WRITE, events=True),
                [o.AGENT, o.SESSION, o.PREFER],
                o.json_body({"on_busy": {"enum": ["wait", "raise"]}, "output_type": o.OUTPUT_TYPE}, []),
            )
        },
        "/agents/{agent}/search": {
            "get": o.operation(
                "the agent's active messages holding every word of q, best first",
                o.answer("the hits", {"type": "object", "required": ["hits"], "properties": {"hits": {"type": "array", "items": hit}}}, *o.READ),
                [
                    o.AGENT,
                    {"name": "q", "in": "query", "required": True, "description": "the words to find", "schema": {"type": "string", "maxLength": MAX_QUERY_CHARS}},
                    o.query_parameter("session", {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH}, "only this session"),
                    o.query_parameter("limit", {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT}, "the most hits (default 10)"),
                    o.query_parameter("before", {"type": "string", "format": "date-time"}, "only messages written before this time"),
                    o.query_parameter("after", {"type": "string", "format": "date-time"}, "only messages written after this time"),
                ],
            )
        },
    }
