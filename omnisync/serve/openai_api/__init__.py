"""OpenAI's stateful API served from the agents' stores: ``/v1/models``, ``/v1/conversations``
(and their items), ``/v1/responses``. An agent is addressed as the ``model``; a conversation
is a session of it; each response is a run. Same tokens, same stores as the rest of the server.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .conversations import Conversations
from .errors import guarded
from .host import Host
from .responses import Responses

__all__ = ["Host", "routes"]


def routes(host: Host) -> list[Route]:
    """The ``/v1`` routes, each answering errors in OpenAI's shape."""
    conversations = Conversations(host)
    responses = Responses(host, conversations)

    async def models(request: Request) -> Response:
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "omnisync"} for name in host.models(request)]
        return JSONResponse({"object": "list", "data": data})

    conversation = "/v1/conversations/{conversation_id}"
    response = "/v1/responses/{response_id}"
    table = [
        ("GET", "/v1/models", models),
        ("POST", "/v1/conversations", conversations.create),
        ("GET", conversation, conversations.retrieve),
        ("POST", conversation, conversations.update),
        ("DELETE", conversation, conversations.delete),
        ("GET", conversation + "/items", conversations.list_items),
        ("POST", conversation + "/items", conversations.add_items),
        ("GET", conversation + "/items/{item_id}", conversations.get_item),
        ("DELETE", conversation + "/items/{item_id}", conversations.delete_item),
        ("POST", "/v1/responses", responses.create),
        ("GET", response, responses.retrieve),
        ("DELETE", response, responses.delete),
        ("POST", response + "/cancel", responses.cancel),
        ("GET", response + "/input_items", responses.list_input_items),
    ]
    return [Route(path, guarded(handler), methods=[method]) for method, path, handler in table]
