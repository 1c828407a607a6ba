"""The ``/v1`` routes in the server's own ``/openapi.json``: their paths, parameters and statuses.

Their shapes are OpenAI's (``CreateResponse``, ``Response``, ``ConversationResource``, ...,
checked by the tests against OpenAI's published description); described here are the keys
every answer has, so the description stays small and schemathesis still exercises each route.
"""

from __future__ import annotations

from typing import Any

from ...storable import MAX_ID_LENGTH
from ..openapi import ERRORS, JSON, STRING, _op, _path, _query, ref

OBJECT: dict[str, Any] = {"type": "object"}
STATUSES = (400, 401, 404, 408, 409, 413, 415, 421, 422, 502, 503)


def _answer(description: str, required: list[str]) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": description, "content": {JSON: {"schema": {"type": "object", "required": required}}}}}
    for status in STATUSES:
        responses[str(status)] = {"description": ERRORS[status], "content": {JSON: {"schema": ref("Error")}}}
    return responses


def _body(required: bool) -> dict[str, Any]:
    return {"required": required, "content": {JSON: {"schema": OBJECT}}}


CONVERSATION = _path("conversation_id", "the conversation's id", MAX_ID_LENGTH)
RESPONSE = _path("response_id", "the response's id", MAX_ID_LENGTH)
ITEM = _path("item_id", "an item's id", MAX_ID_LENGTH)
LIST = ["object", "data", "has_more", "first_id", "last_id"]
ITEMS_PAGE = [
    _query("after", STRING, "the id of the item before the page"),
    _query("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "how many items (default 20)"),
    _query("order", {"enum": ["asc", "desc"]}, "oldest first (asc) or newest first (desc, the default)"),
]
RESPONSE_KEYS = ["id", "object", "created_at", "status", "model", "output"]


def openai_paths() -> dict[str, Any]:
    conversation, response = "/v1/conversations/{conversation_id}", "/v1/responses/{response_id}"
    stream = {"200": {"description": "a Response, or with stream: true the Responses event stream", "content": {JSON: {"schema": OBJECT}, "text/event-stream": {"schema": STRING}}}}
    create = _answer("a Response", RESPONSE_KEYS)
    return {
        "/v1/models": {"get": _op("the agents this token may use, as models", _answer("a list of models", ["object", "data"]))},
        "/v1/conversations": {"post": _op("create a conversation (a session of an agent), with items and metadata", _answer("a conversation", ["id", "object", "created_at", "metadata"]), [], _body(False))},
        conversation: {
            "get": _op("a conversation", _answer("a conversation", ["id", "object", "created_at", "metadata"]), [CONVERSATION]),
            "post": _op("update a conversation's metadata", _answer("a conversation", ["id", "object", "created_at", "metadata"]), [CONVERSATION], _body(True)),
            "delete": _op("delete a conversation and its session", _answer("deleted", ["id", "object", "deleted"]), [CONVERSATION]),
        },
        conversation + "/items": {
            "get": _op("a conversation's items, a page at a time", _answer("a list of items", LIST), [CONVERSATION, *ITEMS_PAGE]),
            "post": _op("add items to a conversation", _answer("the items added", LIST), [CONVERSATION], _body(True)),
        },
        conversation + "/items/{item_id}": {
            "get": _op("one item", _answer("an item", ["id", "type"]), [CONVERSATION, ITEM]),
            "delete": _op("delete an item (its stored message)", _answer("the conversation", ["id", "object", "created_at", "metadata"]), [CONVERSATION, ITEM]),
        },
        "/v1/responses": {"post": _op("create a response: a run of the agent named as model", {**create, **stream}, [], _body(True))},
        response: {
            "get": _op("a response, as its run stands", _answer("a Response", RESPONSE_KEYS), [RESPONSE]),
            "delete": _op("forget a response (its messages stay in its conversation)", _answer("deleted", ["id", "object", "deleted"]), [RESPONSE]),
        },
        response + "/cancel": {"post": _op("cancel a response's run", _answer("the Response as it ended", RESPONSE_KEYS), [RESPONSE])},
        response + "/input_items": {"get": _op("the input a response was given", _answer("a list of items", LIST), [RESPONSE, *ITEMS_PAGE])},
    }
