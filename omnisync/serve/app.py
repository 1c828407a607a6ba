"""The Starlette app: an agent's sessions and runs over JSON and server-sent events.

    GET    /                                              a page to try the agents (omnisync/serve/static/)
    GET    /openapi.json                                  these routes described (openapi.py)
    GET    /healthz                                       the process is up
    GET    /readyz                                        every agent's store answers
    GET    /agents                                        the agents this token may use
    POST   /agents/{agent}/sessions/{session}/runs        start a run (JSON, SSE with Accept: text/event-stream,
                                                          or 202 at once with Prefer: respond-async)
    GET    /agents/{agent}/sessions                       sessions, a page at a time
    GET    /agents/{agent}/sessions/{session}/messages    a session's history
    GET    /agents/{agent}/sessions/{session}/usage       a session's usage, summaries included
    DELETE /agents/{agent}/sessions/{session}             forget a session
    GET    /agents/{agent}/runs                           runs (?status=&session=), a page at a time
    GET    /agents/{agent}/runs/{run_id}                  a run's record
    GET    /agents/{agent}/runs/{run_id}/events           a run's events as SSE: replayed, then live
    POST   /agents/{agent}/runs/{run_id}/approvals        decide on a tool call
    POST   /agents/{agent}/runs/{run_id}/budget           raise a paused run's limits
    POST   /agents/{agent}/runs/{run_id}/resume           resume (JSON, SSE, or 202 with Prefer: respond-async)
    POST   /agents/{agent}/runs/{run_id}/cancel           stop a run
    ...    /v1/models, /v1/conversations, /v1/responses   OpenAI's stateful API (openai_api/)
    POST   .../sessions/{session}/fork, /undo, /regenerate; GET /agents/{agent}/search   (history_routes.py)

Every method is the agent's own, awaited through omnisync.aio; runs are driven by
:class:`~omnisync.serve.runs.RunHub`, apart from the request, and their events kept in the
agent's store, so every route works the same on any worker sharing that store. The answer
of a start or resume names its run before anything else (the ``Omnisync-Run-Id`` header, and
``Location`` on a 202), so a client whose connection drops knows what to follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import aio, idempotency
from ..content import check_content
from ..errors import OmnisyncError, RunConflictError
from ..results import RunResult
from ..run_record import PAUSED_STATUSES, RUNNING, RunRecord
from ..runner import result_of
from ..telemetry import ContinueTrace
from . import history_routes, openai_api, page
from .agents import Agents, served_agents
from .auth import Tokens
from .bodies import (
    BODY_SECONDS,
    MAX_BODY_BYTES,
    RESUME_FIELDS,
    RUN_FIELDS,
    Fields,
    HttpError,
    checked_id,
    checked_output_type,
    decode_cursor,
    encode_cursor,
    flag,
    only_params,
    page_size,
    read_json,
    seq_cursor,
)
from .failures import log_failure, public_error
from .loopback import LoopbackOnly
from .openapi import describe
from .runs import Cursor, Drive, RunHub, Sent

POLL_SECONDS = 0.5
READY_TIMEOUT_SECONDS = 5.0
SHUTDOWN_GRACE_SECONDS = 30.0
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
RUN_ID_HEADER = "Omnisync-Run-Id"

Handler = Callable[[Request], Awaitable[Response]]


def create_app(
    agents: Agents,
    *,
    tokens: Mapping[str, Collection[str]] | None = None,
    cors_origins: Iterable[str] = (),
    max_body_bytes: int = MAX_BODY_BYTES,
    shutdown_grace: float = SHUTDOWN_GRACE_SECONDS,
    body_seconds: float = BODY_SECONDS,
) -> Starlette:
    """A Starlette app serving ``agents`` (one, a list, or ``{name: agent}``).

    ``tokens`` maps each bearer token to the agent names it may use (``"*"`` for all); None
    leaves the app open, for loopback only (``omnisync serve`` binds 127.0.0.1 then): it
    answers requests to a loopback ``Host`` only, with JSON bodies (or from ``cors_origins``).
    CORS stays closed unless ``cors_origins`` are given. A request body must arrive within
    ``body_seconds``. At shutdown, runs under way get ``shutdown_grace`` seconds to finish,
    then are stopped (cancelled, their text kept).
    """
    api = _Api(served_agents(agents), tokens, max_body_bytes, body_seconds)
    cors = [str(origin) for origin in cors_origins]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await api.hub.close(shutdown_grace)

    middleware = []
    if cors:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=cors,
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID", "Prefer", "traceparent", "tracestate"],
                expose_headers=[RUN_ID_HEADER, "Location", "Preference-Applied"],
            )
        )
    if tokens is None:
        middleware.append(Middleware(LoopbackOnly, allowed_origins=cors))
    middleware.append(Middleware(ContinueTrace))  # a caller's traceparent: its served run continues that trace
    app = Starlette(
        routes=api.routes(),
        middleware=middleware,
        exception_handlers={HTTPException: _http_exception},
        lifespan=lifespan,
    )
    app.state.hub = api.hub
    return app


class _Api:
    def __init__(
        self, agents: dict[str, aio.OmniCoreAgent], tokens: Mapping[str, Collection[str]] | None, max_body_bytes: int, body_seconds: float
    ) -> None:
        self.agents = agents
        self.tokens = Tokens(tokens, agents) if tokens is not None else None
        self.max_body = max_body_bytes
        self.body_seconds = body_seconds
        self.hub = RunHub()
        self._starting: dict[tuple[str, str, str], Drive] = {}  # (agent, session, key) -> a drive whose key is not bound yet

    def routes(self) -> list[Route]:
        run = "/agents/{agent}/runs/{run_id}"
        session = "/agents/{agent}/sessions/{session}"
        table: list[tuple[str, str, Handler]] = [
            ("GET", "/", page.index),
            ("GET", "/static/page.js", page.script),
            ("GET", "/static/page.css", page.style),
            ("GET", "/openapi.json", self.openapi),
            ("GET", "/healthz", self.healthz),
            ("GET", "/readyz", self.readyz),
            ("GET", "/agents", self.list_agents),
            ("POST", session + "/runs", self.start_run),
            ("GET", "/agents/{agent}/sessions", self.list_sessions),
            ("GET", session + "/messages", self.messages),
            ("GET", session + "/usage", self.usage),
            ("DELETE", session, self.clear_session),
            ("GET", "/agents/{agent}/runs", self.list_runs),
            ("GET", run, self.get_run),
            ("GET", run + "/events", self.events),
            ("POST", run + "/approvals", self.approve),
            ("POST", run + "/budget", self.budget),
            ("POST", run + "/resume", self.resume),
            ("POST", run + "/cancel", self.cancel),
            *history_routes.routes(self._agent, self._body, lambda request, name, agent, stream: self._answer(request, self.hub.drive(name, agent, stream)), session),
        ]
        routes = [Route(path, _guarded(handler), methods=[method]) for method, path, handler in table]
        return routes + openai_api.routes(openai_api.Host(self.agents, self.hub, self._visible, self.max_body, self.body_seconds))

    # --- who asks, for which agent ------------------------------------------------------

    def _visible(self, request: Request) -> Collection[str]:
        if self.tokens is None:
            return self.agents.keys()
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        agents = self.tokens.agents_for(presented.strip()) if scheme.lower() == "bearer" and presented.strip() else None
        if agents is None:
            raise HttpError(401, "Unauthorized", "send 'Authorization: Bearer TOKEN' with a token this server knows", {"WWW-Authenticate": "Bearer"})
        return agents

    def _agent(self, request: Request) -> tuple[str, aio.OmniCoreAgent]:
        name = request.path_params["agent"]
        if name not in self._visible(request) or name not in self.agents:
            raise HttpError(404, "AgentNotFound", f"no agent {name!r} here (GET /agents lists the ones you may use)")
        return name, self.agents[name]

    async def _body(self, request: Request, fields: Fields) -> dict[str, Any]:
        return await read_json(request, fields, self.max_body, self.body_seconds)

    # --- health ---------------------------------------------------------------------------

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(describe())

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        """Up or down, and nothing else: why a store did not answer goes to the log."""
        try:
            for agent in self.agents.values():
                await asyncio.wait_for(agent.check_store(), READY_TIMEOUT_SECONDS)
        except Exception as exc:
            log_failure(exc, "the readiness probe")
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ready"})

    async def list_agents(self, request: Request) -> Response:
        visible = self._visible(request)
        return JSONResponse({"agents": [name for name in self.agents if name in visible]})

    # --- runs -----------------------------------------------------------------------------

    async def start_run(self, request: Request) -> Response:
        name, agent = self._agent(request)
        session_id = _session_id(request)
        body = await self._body(request, RUN_FIELDS)
        check_content(body["message"])  # a bad part is a 422 before any key is reserved
        message, on_busy, output_type, extra_body = body["message"], body.get("on_busy", "wait"), checked_output_type(body), body.get("extra_body")
        key = request.headers.get("idempotency-key")
        if key is None:
            return await self._answer(request, self.hub.drive(name, agent, agent.stream(message, session_id, on_busy, output_type, extra_body)))
        key = idempotency.check_key(key)
        options = {name: value for name, value in (("output_type", output_type), ("extra_body", extra_body)) if value}
        request_hash = idempotency.fingerprint({"message": message, "on_busy": on_busy, **options})
        try:
            earlier_run = await agent.claim_request_key(session_id, key, request_hash)
        except RunConflictError:
            starting = self._starting.get((name, session_id, key))
            if starting is None:
                raise
            return await self._answer(request, starting, replay=True)
        if earlier_run is not None:
            return await self._existing(request, name, agent, earlier_run)

        async def bind(run_id: str) -> None:
            await agent.bind_request_key(session_id, key, run_id)

        slot = (name, session_id, key)
        try:
            drive = self._starting[slot] = self.hub.drive(name, agent, agent.stream(message, session_id, on_busy, output_type, extra_body), on_start=bind)
            await asyncio.shield(drive.started)
        except Exception as exc:
            await agent.release_request_key(session_id, key, str(exc))
            raise
        finally:
            self._starting.pop(slot, None)
        return await self._answer(request, drive)

    async def resume(self, request: Request) -> Response:
        name, agent = self._agent(request)
        run_id = _run_id(request)
        output_type = checked_output_type(await self._body(request, RESUME_FIELDS))
        self.hub.check_not_live(name, run_id)
        return await self._answer(request, self.hub.drive(name, agent, agent.resume_stream(run_id, output_type)))

    async def _answer(self, request: Request, drive: Drive, replay: bool = False) -> Response:
        """This drive's events as SSE (from its first, or the run's first with ``replay``), or its result as JSON."""
        run_id = await asyncio.shield(drive.started)
        named = {RUN_ID_HEADER: run_id}
        if _prefers_async(request):
            return _accepted(request, drive.name, run_id)
        if _wants_events(request):
            return _sse(self.hub.follow(drive.name, drive.agent, run_id, Cursor()) if replay else drive.follow(), named)
        try:
            result = await asyncio.shield(drive.finished)
        except OmnisyncError as exc:
            status, error = public_error(exc, f"{request.method} {request.url.path}")
            return _error(status, {"run_id": drive.run_id, **error}, named)
        return JSONResponse(result, headers=named)

    async def _existing(self, request: Request, name: str, agent: aio.OmniCoreAgent, run_id: str) -> Response:
        """What a retried POST gets: the run its key started, as events or as its result once it pauses or ends."""
        if _prefers_async(request):
            return _accepted(request, name, run_id)
        if _wants_events(request):
            return _sse(self.hub.follow(name, agent, run_id, Cursor()), {RUN_ID_HEADER: run_id})
        drive = self.hub.live(name, run_id)
        if drive is not None:
            return await self._answer(request, drive)
        return JSONResponse(result_of(RunRecord.from_record(dict(await _settled(agent, run_id)))), headers={RUN_ID_HEADER: run_id})

    async def get_run(self, request: Request) -> Response:
        name, agent = self._agent(request)
        only_params(request)
        return JSONResponse(await agent.get_run(_run_id(request)))

    async def list_runs(self, request: Request) -> Response:
        name, agent = self._agent(request)
        only_params(request, "status", "session", "limit", "cursor")
        limit, after = page_size(request), decode_cursor(request)
        session_id = request.query_params.get("session")
        page = await agent.list_runs_page(
            status=request.query_params.get("status"),
            session_id=None if session_id is None else checked_id(session_id, "session"),
            cursor=after[0] if after else None,
            limit=limit,
        )
        next_cursor = page["next_cursor"]
        return JSONResponse({"runs": page["runs"], "next_cursor": encode_cursor([next_cursor]) if next_cursor else None})

    async def events(self, request: Request) -> Response:
        name, agent = self._agent(request)
        only_params(request, "after")
        run_id = _run_id(request)
        await agent.get_run(run_id)  # 404 for a run this agent does not have
        after = request.headers.get("last-event-id", request.query_params.get("after", "0"))
        if after == FINAL:
            return _sse(_nothing())
        cursor = Cursor.parse(after)
        if cursor is None:
            raise HttpError(400, "BadLastEventId", f"Last-Event-ID (or ?after=) must be an event id this server sent, not {after[:40]!r}")
        return _sse(self.hub.follow(name, agent, run_id, cursor))

    async def approve(self, request: Request) -> Response:
        name, agent = self._agent(request)
        body = await self._body(request, {"call_id": ((str,), True), "approved": ((bool,), True), "reason": ((str, type(None)), False)})
        result = await agent.resolve_approval(_run_id(request), checked_id(body["call_id"], "call_id"), body["approved"], body.get("reason"))
        return JSONResponse(result)

    async def budget(self, request: Request) -> Response:
        name, agent = self._agent(request)
        fields = {key: ((int,), False) for key in ("extra_tool_calls", "extra_tokens", "extra_steps")}
        body = await self._body(request, fields)
        return JSONResponse(await agent.grant_budget(_run_id(request), **body))

    async def cancel(self, request: Request) -> Response:
        name, agent = self._agent(request)
        body = await self._body(request, {"reason": ((str, type(None)), False)})
        run_id = _run_id(request)
        drive = self.hub.live(name, run_id)
        if drive is None:  # driven elsewhere, or by nobody: the agent stores the request its driver observes
            return _cancelled(await agent.cancel_run(run_id, body.get("reason")))
        drive.interrupt()  # the run keeps its reply so far, marked partial, and ends cancelled
        try:
            result: RunResult = await asyncio.shield(drive.finished)
        except OmnisyncError:  # it failed before it saw the interruption; its record says so
            result = result_of(RunRecord.from_record(dict(await agent.get_run(run_id))))
        if result["status"] in PAUSED_STATUSES:  # it paused before it saw the interruption: cancel the paused run
            result = await agent.cancel_run(run_id, body.get("reason"))
        return _cancelled(result)

    # --- sessions -------------------------------------------------------------------------

    async def list_sessions(self, request: Request) -> Response:
        name, agent = self._agent(request)
        only_params(request, "limit", "cursor")
        limit, after = page_size(request), decode_cursor(request)
        page = await agent.list_sessions_page(cursor=checked_id(after[0], "cursor") if after else None, limit=limit)  # the cursor is [session_id]
        next_cursor = page["next_cursor"]
        return JSONResponse({"sessions": page["sessions"], "next_cursor": encode_cursor([next_cursor]) if next_cursor else None})

    async def messages(self, request: Request) -> Response:
        name, agent = self._agent(request)
        only_params(request, "include_inactive", "limit", "cursor")
        limit, after = page_size(request), decode_cursor(request)
        page = await agent.get_session_history_page(
            _session_id(request), cursor=seq_cursor(after), limit=limit, include_inactive=flag(request, "include_inactive")
        )
        next_cursor = page["next_cursor"]
        return JSONResponse({"messages": page["messages"], "next_cursor": encode_cursor([next_cursor]) if next_cursor else None})

    async def usage(self, request: Request) -> Response:
        name, agent = self._agent(request)
        only_params(request)
        return JSONResponse(await agent.get_session_usage(_session_id(request)))

    async def clear_session(self, request: Request) -> Response:
        name, agent = self._agent(request)
        only_params(request)
        return JSONResponse({"deleted": await agent.clear_session_history(_session_id(request))})


FINAL = "final"  # the id of the one event a run that stored no ending gets: its end, from its record


def _session_id(request: Request) -> str:
    return checked_id(request.path_params["session"], "session")


def _run_id(request: Request) -> str:
    return checked_id(request.path_params["run_id"], "run_id")


def _cancelled(result: RunResult) -> JSONResponse:
    """A cancel's answer: the run as it ended, or 202 while its driver (elsewhere) has yet to see the request."""
    return JSONResponse(result, status_code=202 if result["status"] == RUNNING else 200)


def _wants_events(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")


def _prefers_async(request: Request) -> bool:
    """RFC 7240's ``Prefer: respond-async``: answer once the run has started, and let it go on."""
    return any(p.split(";")[0].strip().lower() == "respond-async" for p in request.headers.get("prefer", "").split(","))


def _accepted(request: Request, agent: str, run_id: str) -> JSONResponse:
    """202: the run started and goes on; where its record and its events are."""
    run = f"{request.scope.get('root_path', '')}/agents/{quote(agent, safe='')}/runs/{quote(run_id, safe='')}"
    return JSONResponse(
        {"run_id": run_id, "run": run, "events": run + "/events"},
        status_code=202,
        headers={"Location": run, RUN_ID_HEADER: run_id, "Preference-Applied": "respond-async"},
    )


async def _settled(agent: aio.OmniCoreAgent, run_id: str) -> dict[str, Any]:
    """The run's record once it is not running (another process drives it), or once its lease ran out."""
    while True:
        record: dict[str, Any] = dict(await agent.get_run(run_id))
        lease = record.get("lease_until")
        if record["status"] != RUNNING or (lease and datetime.fromisoformat(lease) < datetime.now(timezone.utc)):
            return record
        await asyncio.sleep(POLL_SECONDS)


async def _nothing() -> AsyncIterator[list[Sent]]:
    return
    yield


def _sse(batches: AsyncIterator[list[Sent]], headers: Mapping[str, str] | None = None) -> StreamingResponse:
    """Each batch of events as one write; an empty batch as a keep-alive comment."""

    async def body() -> AsyncIterator[bytes]:
        async for batch in batches:
            if not batch:
                yield b": keep-alive\n\n"
                continue
            yield b"".join(_event_bytes(event) for event in batch)

    return StreamingResponse(body(), media_type="text/event-stream", headers={**SSE_HEADERS, **(headers or {})})


def _event_bytes(event: Sent) -> bytes:
    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.name}\ndata: {data}\n\n".encode()


def _guarded(handler: Handler) -> Handler:
    """Errors become JSON: ours with their status, omnisync's by class; a failure of the server's own says only its request id (see failures.py)."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except HttpError as exc:
            return _error(exc.status, {"type": exc.type, "message": str(exc)}, exc.headers)
        except Exception as exc:
            return _error(*public_error(exc, f"{request.method} {request.url.path}"))

    return endpoint


def _error(status: int, error: dict[str, Any], headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error}, status_code=status, headers=dict(headers) if headers else None)


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
    message = "no such route: see GET /agents and the routes in the README" if exc.status_code == 404 else str(exc.detail)
    return _error(exc.status_code, {"type": kind, "message": message}, exc.headers)
