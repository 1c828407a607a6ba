"""Request bodies and query strings, checked before anything runs: bad input is a clear 4xx."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from ..errors import ConfigurationError
from ..output import OutputType
from ..storable import MAX_ID_LENGTH, unstorable_characters

MAX_BODY_BYTES = 1_000_000
BODY_SECONDS = 30.0
"""A request's body must arrive within this many seconds of its headers."""
MAX_DEPTH = 64
"""How deep a request's JSON may nest (content parts and JSON schemas need a few levels)."""
MAX_CURSOR_LENGTH = 300
MAX_SEQ_DIGITS = 18  # a message's seq fits every store's 64-bit integer
DEFAULT_PAGE = 50
MAX_PAGE = 500


class HttpError(Exception):
    """A request refused before it reached an agent: ``status``, an error ``type`` and a message."""

    status: int
    type: str
    headers: dict[str, str]

    def __init__(self, status: int, type: str, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.headers = dict(headers or {})


# field -> (allowed types, required)
Fields = Mapping[str, tuple[tuple[type, ...], bool]]

# A run's output_type over HTTP is a JSON schema, or a whole response_format (what RemoteAgent
# sends for a Python type, so the model is asked exactly what a local run would ask).
RUN_FIELDS: Fields = {"message": ((str, list), True), "on_busy": ((str,), False), "output_type": ((dict, type(None)), False), "extra_body": ((dict, type(None)), False)}
RESUME_FIELDS: Fields = {"output_type": ((dict, type(None)), False)}


async def read_json(request: Request, fields: Fields, limit: int, seconds: float = BODY_SECONDS) -> dict[str, Any]:
    """The body as a JSON object with only ``fields``, each of its type; an empty body is ``{}``.

    A body that does not arrive within ``seconds`` is a 408, and the connection is closed.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HttpError(413, "PayloadTooLarge", f"the body is larger than this server's limit of {limit} bytes")
    try:
        body = await asyncio.wait_for(_read_body(request, limit), seconds)
    except asyncio.TimeoutError:
        raise HttpError(408, "RequestTimeout", f"the body did not arrive within {seconds:g} s; send it whole", {"Connection": "close"}) from None
    if not body.strip():
        data: Any = {}
    else:
        too_deep = HttpError(400, "InvalidJSON", f"the body is nested deeper than {MAX_DEPTH} levels; send a flatter JSON object")
        try:
            data = json.loads(body)
        except RecursionError:
            raise too_deep from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise HttpError(400, "InvalidJSON", f"the body is not JSON ({exc}); send a JSON object") from None
        if _depth_over(data, MAX_DEPTH):
            raise too_deep
    if not isinstance(data, dict):
        raise ConfigurationError(f"the body must be a JSON object with the keys {', '.join(fields) or '(none)'}, not {type(data).__name__}")
    unknown = [key for key in data if key not in fields]
    if unknown:
        raise ConfigurationError(f"unknown key(s) in the body: {', '.join(unknown)}; allowed: {', '.join(fields) or '(none)'}")
    for key, (types, required) in fields.items():
        if key not in data:
            if required:
                raise ConfigurationError(f"the body needs {key!r}")
            continue
        value = data[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            wanted = " or ".join("null" if t is type(None) else {"str": "string", "bool": "boolean", "int": "integer", "list": "a list of content parts", "dict": "an object"}.get(t.__name__, t.__name__) for t in types)
            raise ConfigurationError(f"{key!r} must be {wanted}, not {json.dumps(value)[:80]}")
        if isinstance(value, str) and key != "message":  # a message's own checks say more
            checked_text(value, key)
    return data


async def _read_body(request: Request, limit: int) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HttpError(413, "PayloadTooLarge", f"the body is larger than this server's limit of {limit} bytes")
    return bytes(body)


def _depth_over(data: Any, limit: int) -> bool:
    """Whether ``data`` nests deeper than ``limit`` lists and objects (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def checked_text(value: str, field: str, max_length: int | None = None) -> str:
    """``value`` if every store can keep it (no NUL, no lone surrogate, at most ``max_length``), else a 422 naming ``field``."""
    if unstorable_characters(value):
        raise ConfigurationError(f"{field} holds a NUL character or a lone surrogate, which no store can keep; remove it")
    if max_length is not None and len(value) > max_length:
        raise ConfigurationError(f"{field} is {len(value)} characters long; it may hold at most {max_length}")
    return value


def checked_id(value: str, field: str) -> str:
    """A session id, run id or name from a request: 1 to MAX_ID_LENGTH characters a store can keep, else a 422 naming ``field``."""
    if not value:
        raise ConfigurationError(f"{field} must not be empty")
    return checked_text(value, field, MAX_ID_LENGTH)


def checked_output_type(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The body's output_type, refused now (422) if no response_format can be made of it."""
    output_type: dict[str, Any] | None = body.get("output_type")
    if output_type is not None:
        OutputType.of(output_type)
    return output_type


def page_size(request: Request) -> int:
    text = request.query_params.get("limit")
    if text is None:
        return DEFAULT_PAGE
    if not text.isdigit() or not 1 <= int(text) <= MAX_PAGE:
        raise ConfigurationError(f"limit must be a whole number from 1 to {MAX_PAGE}, not {text!r}")
    return int(text)


def flag(request: Request, name: str) -> bool:
    text = request.query_params.get(name, "false")
    if text not in ("true", "false"):  # as the OpenAPI description declares a boolean in a query
        raise ConfigurationError(f"{name} must be true or false, not {text!r}")
    return text == "true"


def only_params(request: Request, *allowed: str) -> None:
    unknown = [key for key in request.query_params if key not in allowed]
    if unknown:
        raise ConfigurationError(f"unknown query parameter(s): {', '.join(unknown)}; allowed: {', '.join(allowed) or '(none)'}")
    repeated = sorted({key for key, _ in request.query_params.multi_items() if len(request.query_params.getlist(key)) > 1})
    if repeated:
        raise ConfigurationError(f"query parameter(s) given more than once: {', '.join(repeated)}; give each once")


def encode_cursor(position: list[str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


def decode_cursor(request: Request) -> list[str] | None:
    """The position a ``cursor`` this server gave names: strings a store can keep, each of a bounded length."""
    text = request.query_params.get("cursor")
    if text is None:
        return None
    position = None
    if len(text) <= 4 * MAX_CURSOR_LENGTH:
        try:
            position = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        except (ValueError, binascii.Error):
            pass
    if not (isinstance(position, list) and all(isinstance(p, str) for p in position)):
        raise ConfigurationError("cursor is not one this server gave: pass the next_cursor of the previous page as it is")
    for part in position:
        checked_text(part, "cursor", MAX_CURSOR_LENGTH)
    return position


def seq_cursor(position: list[str] | None) -> str | None:
    """A history page's cursor: a message's seq, digits a store's integer holds."""
    if position is None:
        return None
    seq = position[0] if len(position) == 1 else ""
    if not (seq.isdigit() and seq.isascii() and len(seq) <= MAX_SEQ_DIGITS):
        raise ConfigurationError("cursor is not one this server gave: pass the next_cursor of the previous page as it is")
    return seq
