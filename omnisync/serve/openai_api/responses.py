"""``/v1/responses``: each response is a run of the agent named as ``model``.

A response's run goes in a session: the ``conversation``'s, the one of its
``previous_response_id`` (a copy up to it when later responses followed it there, see
:mod:`.branches`), or a new one. Input items before the last user message are written
into the session first; the last is the run's message. Input that ends with
``function_call_output`` items (the results of the client's tools) is written whole, and the
run continues the session from it. What the request asked (the fields a
Response repeats, its input) is kept beside the run (:mod:`.ledger`, unless ``store`` is
false), so ``GET /v1/responses/{id}`` answers from any worker, after a restart too. The run
is driven apart from the request (:class:`~omnisync.serve.runs.RunHub`): ``background`` answers
at once, ``stream`` follows its events, and otherwise the answer waits for its end.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ... import aio
from ...errors import OmnisyncError
from ...run_record import PAUSED_STATUSES
from ..bodies import checked_id
from ..runs import Drive
from . import ledger
from .branches import session_at
from .client_tools import declared_tools
from .conversations import Conversations
from .create_request import CreateResponse, parse
from .errors import OpenAIError, not_found
from .host import Host, append_messages
from .response_object import input_items, response_object, run_output
from .stream_events import ResponseEvents, sse

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class Responses:
    def __init__(self, host: Host, conversations: Conversations) -> None:
        self.host = host
        self.conversations = conversations

    async def create(self, request: Request) -> Response:
        asked = parse(await self.host.body(request))
        agent = self.host.agent(request, asked.model)
        declared = declared_tools(asked.tools, agent.blocking.tools) if asked.tools else []
        session_id = await self._session_of(request, asked, agent)
        await append_messages(agent, session_id, asked.messages if asked.message is None else asked.messages[:-1])
        echo = asked.echo()
        echo["tools"] = [{"type": "function", "strict": None, **tool} for tool in declared]
        kept = {
            "model": asked.model,
            "session_id": session_id,
            "created_at": int(time.time()),
            "echo": echo,
            "input": asked.messages,
            "client_tools": [tool["name"] for tool in declared],
        }

        async def keep(run_id: str) -> None:
            if asked.store:
                await ledger.append(agent, ledger.RESPONSE + run_id, "request", kept)

        runner = self.host.variants.of(asked.model, agent, asked.instructions, asked.sampling, declared)
        stream = runner.stream(asked.message, session_id, "wait", asked.output_type)
        drive = self.host.hub.drive(asked.model, runner, stream, on_start=keep)
        run_id = await asyncio.shield(drive.started)
        if asked.stream:  # with background too: the run goes on whether or not the client stays
            return self._streamed(asked, agent, drive, run_id, kept)
        if asked.background:
            return JSONResponse(await self._response(asked.model, agent, run_id, kept))
        try:
            await asyncio.shield(drive.finished)
        except OmnisyncError:
            pass  # the run's record says it failed, and why
        answer = await self._response(asked.model, agent, run_id, kept)
        if not asked.store:
            await agent.clear_session_history(session_id)
        return JSONResponse(answer)

    def _streamed(self, asked: CreateResponse, agent: aio.OmniCoreAgent, drive: Drive, run_id: str, kept: dict[str, Any]) -> StreamingResponse:
        async def final() -> dict[str, Any]:
            try:
                await asyncio.shield(drive.finished)
            except OmnisyncError:
                pass
            answer = await self._response(asked.model, agent, run_id, kept)
            if not asked.store:
                await agent.clear_session_history(kept["session_id"])
            return answer

        snapshot = response_object({"run_id": run_id, "status": "running", "created_at": None}, kept, [])
        events = ResponseEvents(snapshot, final, asked.model, kept["client_tools"])
        return StreamingResponse(sse(events, drive.follow()), media_type="text/event-stream", headers=SSE_HEADERS)

    async def _session_of(self, request: Request, asked: CreateResponse, agent: aio.OmniCoreAgent) -> str:
        if asked.conversation is not None:
            name, _, _ = await self.conversations.find(request, asked.conversation)
            if name != asked.model:
                raise OpenAIError(400, f"conversation {asked.conversation!r} belongs to model {name!r}, not {asked.model!r}", "conversation", "invalid_value")
            return asked.conversation
        if asked.previous_response_id is not None:
            previous = await ledger.read(agent, ledger.RESPONSE + asked.previous_response_id)
            if previous is None:
                raise not_found("response", asked.previous_response_id, "previous_response_id")
            return await session_at(agent, str(previous["session_id"]), asked.previous_response_id)
        return f"resp_{secrets.token_hex(16)}"

    async def _response(self, name: str, agent: aio.OmniCoreAgent, run_id: str, kept: dict[str, Any]) -> dict[str, Any]:
        run: dict[str, Any] = dict(await agent.get_run(run_id))
        return response_object(run, kept, await run_output(agent, run, name, kept.get("client_tools", ())))

    async def _find(self, request: Request) -> tuple[str, aio.OmniCoreAgent, str, dict[str, Any]]:
        response_id = checked_id(request.path_params["response_id"], "response_id")
        for name in self.host.models(request):
            agent = self.host.agents[name]
            kept = await ledger.read(agent, ledger.RESPONSE + response_id)
            if kept is not None:
                return name, agent, response_id, kept
        raise not_found("response", response_id, "response_id")

    async def retrieve(self, request: Request) -> Response:
        for key in request.query_params:
            if key != "include":
                raise OpenAIError(400, f"{key} is not supported by this server", key, "unsupported_parameter")
        name, agent, response_id, kept = await self._find(request)
        return JSONResponse(await self._response(name, agent, response_id, kept))

    async def delete(self, request: Request) -> Response:
        name, agent, response_id, _ = await self._find(request)
        await ledger.append(agent, ledger.RESPONSE + response_id, "deleted", {})
        return JSONResponse({"id": response_id, "object": "response.deleted", "deleted": True})

    async def cancel(self, request: Request) -> Response:
        name, agent, response_id, kept = await self._find(request)
        drive = self.host.hub.live(name, response_id)
        if drive is not None:
            drive.interrupt()  # the run keeps its reply so far, marked partial, and ends cancelled
            try:
                await asyncio.shield(drive.finished)
            except OmnisyncError:
                pass
        run = dict(await agent.get_run(response_id))
        if run["status"] == "running" or run["status"] in PAUSED_STATUSES:
            await agent.cancel_run(response_id)
        return JSONResponse(await self._response(name, agent, response_id, kept))

    async def list_input_items(self, request: Request) -> Response:
        for key in request.query_params:
            if key not in ("after", "limit", "order"):
                raise OpenAIError(400, f"{key} is not supported by this server", key, "unsupported_parameter")
        _, _, response_id, kept = await self._find(request)
        found = input_items(kept, response_id)
        if request.query_params.get("order", "desc") == "desc":
            found.reverse()
        after = request.query_params.get("after")
        if after is not None:
            ids = [item["id"] for item in found]
            found = found[ids.index(after) + 1 :] if after in ids else []
        limit = int(request.query_params.get("limit", "20")) if request.query_params.get("limit", "20").isdigit() else 20
        page = found[: max(1, min(limit, 100))]
        return JSONResponse(
            {"object": "list", "data": page, "has_more": len(found) > len(page), "first_id": page[0]["id"] if page else "", "last_id": page[-1]["id"] if page else ""}
        )
