"""``/v1/conversations``: a conversation is a session of one agent, its items the session's messages.

The agent is the one the token may use, or, for a token of several, the one named by the
``model`` key of the conversation's metadata. The conversation's own record (when it was
made, its metadata) is kept in the agent's store (:mod:`.ledger`); its id is the session's.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ... import aio
from ..bodies import checked_id
from . import ledger
from .create_request import metadata
from .errors import OpenAIError, not_found, unsupported
from .host import Host, append_messages
from .items import chat_messages, items_of, seq_of

MAX_ITEMS_ADDED = 20
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
PAGE_OF_MESSAGES = 50


class Conversations:
    def __init__(self, host: Host) -> None:
        self.host = host

    async def find(self, request: Request, conversation_id: str) -> tuple[str, aio.OmniCoreAgent, dict[str, Any]]:
        """The agent holding the conversation (among those the token may use), and its record; else a 404."""
        checked_id(conversation_id, "conversation_id")
        for name in self.host.models(request):
            agent = self.host.agents[name]
            record = await ledger.read(agent, ledger.CONVERSATION + conversation_id)
            if record is not None:
                return name, agent, record
        raise not_found("conversation", conversation_id, "conversation_id")

    async def create(self, request: Request) -> Response:
        body = await self.host.body(request)
        for key, value in body.items():
            if key not in ("items", "metadata") and value is not None:
                raise unsupported(key)
        tags = metadata(body.get("metadata"), "metadata")
        chats = chat_messages(body.get("items") or [], "items")
        if len(chats) > MAX_ITEMS_ADDED:
            raise OpenAIError(400, f"add at most {MAX_ITEMS_ADDED} items at a time", "items", "invalid_value")
        agent = self._agent_for(request, tags)
        conversation_id = f"conv_{secrets.token_hex(16)}"
        record = {"created_at": int(time.time()), "metadata": tags}
        await ledger.append(agent, ledger.CONVERSATION + conversation_id, "created", record)
        await append_messages(agent, conversation_id, chats)
        return JSONResponse(resource(conversation_id, record))

    def _agent_for(self, request: Request, tags: dict[str, str]) -> aio.OmniCoreAgent:
        if "model" in tags:
            return self.host.agent(request, tags["model"])
        models = self.host.models(request)
        if len(models) != 1:
            raise OpenAIError(400, f"this token may use {len(models)} agents: name one as metadata.model ({', '.join(models)})", "metadata.model", "missing_required_parameter")
        return self.host.agents[models[0]]

    async def retrieve(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        _, _, record = await self.find(request, conversation_id)
        return JSONResponse(resource(conversation_id, record))

    async def update(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        _, agent, record = await self.find(request, conversation_id)
        body = await self.host.body(request)
        for key in body:
            if key != "metadata":
                raise unsupported(key)
        if "metadata" not in body:
            raise OpenAIError(400, "metadata is required", "metadata", "missing_required_parameter")
        tags = metadata(body["metadata"], "metadata")
        await ledger.append(agent, ledger.CONVERSATION + conversation_id, "metadata", {"metadata": tags})
        return JSONResponse(resource(conversation_id, {**record, "metadata": tags}))

    async def delete(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        _, agent, _ = await self.find(request, conversation_id)
        await agent.clear_session_history(conversation_id)
        await ledger.append(agent, ledger.CONVERSATION + conversation_id, "deleted", {})
        return JSONResponse({"id": conversation_id, "object": "conversation.deleted", "deleted": True})

    async def list_items(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        _, agent, _ = await self.find(request, conversation_id)
        query = request.query_params
        for key in query:
            if key not in ("after", "limit", "order", "include"):
                raise unsupported(key)
        if query.get("include"):
            raise unsupported("include")
        order = query.get("order", "desc")
        if order not in ("asc", "desc"):
            raise OpenAIError(400, "order must be asc or desc", "order", "invalid_value")
        limit_text = query.get("limit", str(DEFAULT_LIMIT))
        if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_LIMIT:
            raise OpenAIError(400, f"limit must be a whole number from 1 to {MAX_LIMIT}", "limit", "invalid_value")
        limit, after = int(limit_text), query.get("after")
        if order == "asc":
            page, more = await items_after(agent, conversation_id, after, limit)
            return JSONResponse(item_list(page, has_more=more))
        found = await conversation_items(agent, conversation_id)  # newest first: the whole history is read
        found.reverse()
        if after is not None:
            ids = [item["id"] for item in found]
            if after not in ids:
                raise _not_an_item(after)
            found = found[ids.index(after) + 1 :]
        return JSONResponse(item_list(found[:limit], has_more=len(found) > limit))

    async def add_items(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        _, agent, _ = await self.find(request, conversation_id)
        body = await self.host.body(request)
        for key in body:
            if key != "items":
                raise unsupported(key)
        if not isinstance(body.get("items"), list):
            raise OpenAIError(400, "items is required: a list of items", "items", "missing_required_parameter")
        chats = chat_messages(body["items"], "items")
        if len(chats) > MAX_ITEMS_ADDED:
            raise OpenAIError(400, f"add at most {MAX_ITEMS_ADDED} items at a time", "items", "invalid_value")
        written = await append_messages(agent, conversation_id, chats)
        return JSONResponse(item_list([item for message in written for item in items_of(message)], has_more=False))

    async def get_item(self, request: Request) -> Response:
        conversation_id, item_id = request.path_params["conversation_id"], request.path_params["item_id"]
        _, agent, _ = await self.find(request, conversation_id)
        if seq_of(item_id) is not None:
            for item in await conversation_items(agent, conversation_id):
                if item["id"] == item_id:
                    return JSONResponse(item)
        raise not_found("item", item_id, "item_id")

    async def delete_item(self, request: Request) -> Response:
        """Delete the stored message the item comes from, when that message is this item alone."""
        conversation_id, item_id = request.path_params["conversation_id"], request.path_params["item_id"]
        _, agent, record = await self.find(request, conversation_id)
        seq = seq_of(item_id)
        history = await agent.get_session_history(conversation_id, include_inactive=True) if seq is not None else []
        message = next((dict(m) for m in history if m.get("seq") == seq and not m.get("summary")), None)
        shared = [item["id"] for item in items_of(message)] if message is not None else []
        if seq is None or item_id not in shared:
            raise not_found("item", item_id, "item_id")
        if len(shared) > 1:
            others = ", ".join(i for i in shared if i != item_id)
            raise unsupported("item_id", f"deleting an item that one stored message holds with others ({others}); delete the conversation instead")
        await agent.delete_message(conversation_id, seq)
        return JSONResponse(resource(conversation_id, record))


async def conversation_items(agent: aio.OmniCoreAgent, session_id: str) -> list[dict[str, Any]]:
    """Every item of the session, oldest first: its messages, folded ones too (a summary is the agent's, not the conversation's)."""
    history = await agent.get_session_history(session_id, include_inactive=True)
    return [item for message in history if not message.get("summary") for item in items_of(dict(message))]


async def items_after(agent: aio.OmniCoreAgent, session_id: str, after: str | None, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` items after the item ``after`` (None: from the first), oldest first, and whether more follow: read a page of messages at a time."""
    seq = None if after is None else seq_of(after)
    if after is not None and seq is None:
        raise _not_an_item(after)
    cursor = str(seq - 1) if seq else None  # from the message that holds ``after``: its later items come next
    found: list[dict[str, Any]] = []
    skipping = after is not None
    while True:
        page = await agent.get_session_history_page(session_id, cursor=cursor, limit=max(limit + 1, PAGE_OF_MESSAGES), include_inactive=True)
        for message in page["messages"]:
            if message.get("summary"):
                continue
            for item in items_of(dict(message)):
                if skipping:
                    skipping = item["id"] != after
                    continue
                found.append(item)
            if skipping:  # the message that should hold ``after`` does not
                raise _not_an_item(after or "")
        cursor = page["next_cursor"]
        if len(found) > limit or cursor is None:
            break
    if skipping:
        raise _not_an_item(after or "")
    return found[:limit], len(found) > limit


def _not_an_item(after: str) -> OpenAIError:
    return OpenAIError(400, f"after must be the id of an item of this conversation, not {after[:60]!r}", "after", "invalid_value")


def resource(conversation_id: str, record: dict[str, Any]) -> dict[str, Any]:
    return {"id": conversation_id, "object": "conversation", "created_at": record["created_at"], "metadata": record.get("metadata") or {}}


def item_list(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": items,
        "has_more": has_more,
        "first_id": items[0]["id"] if items else "",
        "last_id": items[-1]["id"] if items else "",
    }
