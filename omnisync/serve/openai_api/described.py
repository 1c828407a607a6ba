"""The ``/v1`` routes in the server's own ``/openapi.json``: their paths, parameters and statuses.

Their shapes are OpenAI's (``CreateResponse``, ``Response``, ``ConversationResource``, ...,
checked by the tests against OpenAI's published description); described here are the keys
every answer has, so the description stays small and schemathesis still exercises each route.
"""

from __future__ import annotations

from typing import Any

from ...storable import MAX_ID_LENGTH
from ..openapi_parts import ERRORS, JSON, STRING, operation, path_parameter, query_parameter, ref

OBJECT: dict[str, Any] = {"type": "object"}
STATUSES = (400, 401, 404, 408, 409, 413, 415, 421, 422, 502, 503)


def answer(description: str, required: list[str]) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": description, "content": {JSON: {"schema": {"type": "object", "required": required}}}}}
    for status in STATUSES:
        responses[str(status)] = {"description": ERRORS[status], "content": {JSON: {"schema": ref("Error")}}}
    return responses


def json_body(required: bool) -> dict[str, Any]:
    return {"required": required, "content": {JSON: {"schema": OBJECT}}}


CONVERSATION = path_parameter("conversation_id", "the conversation's id", MAX_ID_LENGTH)
RESPONSE = path_parameter("response_id", "the response's id", MAX_ID_LENGTH)
ITEM = path_parameter("item_id", "an item's id", MAX_ID_LENGTH)
LIST = ["object", "data", "has_more", "first_id", "last_id"]
ITEMS_PAGE = [
    query_parameter("after", STRING, "the id of the item before the page"),
    query_parameter("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "how many items (default 20)"),
    query_parameter("order", {"enum": ["asc", "desc"]}, "oldest first (asc) or newest first (desc, the default)"),
]
RESPONSE_KEYS = ["id", "object", "created_at", "status", "model", "output"]


def openai_paths() -> dict[str, Any]:
    conversation, response = "/v1/conversations/{conversation_id}", "/v1/responses/{response_id}"
    stream = {"200": {"description": "a Response, or with stream: true the Responses event stream", "content": {JSON: {"schema": OBJECT}, "text/event-stream": {"schema": STRING}}}}
    create = answer("a Response", RESPONSE_KEYS)
    return {
        "/v1/models": {"get": operation("the agents this token may use, as models", answer("a list of models", ["object", "data"]))},
        "/v1/conversations": {"post": operation("create a conversation (a session of an agent), with items and metadata", answer("a conversation", ["id", "object", "created_at", "metadata"]), [], json_body(False))},
        conversation: {
            "get": operation("a conversation", answer("a conversation", ["id", "object", "created_at", "metadata"]), [CONVERSATION]),
            "post": operation("update a conversation's metadata", answer("a conversation", ["id", "object", "created_at", "metadata"]), [CONVERSATION], json_body(True)),
            "delete": operation("delete a conversation and its session", answer("deleted", ["id", "object", "deleted"]), [CONVERSATION]),
        },
        conversation + "/items": {
            "get": operation("a conversation's items, a page at a time", answer("a list of items", LIST), [CONVERSATION, *ITEMS_PAGE]),
            "post": operation("add items to a conversation", answer("the items added", LIST), [CONVERSATION], json_body(True)),
        },
        conversation + "/items/{item_id}": {
            "get": operation("one item", answer("an item", ["id", "type"]), [CONVERSATION, ITEM]),
            "delete": operation("delete an item (its stored message)", answer("the conversation", ["id", "object", "created_at", "metadata"]), [CONVERSATION, ITEM]),
        },
        "/v1/responses": {"post": operation("create a response: a run of the agent named as model", {**create, **stream}, [], json_body(True))},
        response: {
            "get": operation("a response, as its run stands", answer("a Response", RESPONSE_KEYS), [RESPONSE]),
            "delete": operation("forget a response (its messages stay in its conversation)", answer("deleted", ["id", "object", "deleted"]), [RESPONSE]),
        },
        response + "/cancel": {"post": operation("cancel a response's run", answer("the Response as it ended", RESPONSE_KEYS), [RESPONSE])},
        response + "/input_items": {"get": operation("the input a response was given", answer("a list of items", LIST), [RESPONSE, *ITEMS_PAGE])},
    }
