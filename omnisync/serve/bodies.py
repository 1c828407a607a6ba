"""Request bodies and query strings, checked before anything runs: bad input is a clear 4xx."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request

from ..errors import ConfigurationError
from ..output import OutputType

MAX_BODY_BYTES = 1_000_000
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
RUN_FIELDS: Fields = {"message": ((str, list), True), "on_busy": ((str,), False), "output_type": ((dict, type(None)), False)}
RESUME_FIELDS: Fields = {"output_type": ((dict, type(None)), False)}


async def read_json(request: Request, fields: Fields, limit: int) -> dict[str, Any]:
    """The body as a JSON object with only ``fields``, each of its type; an empty body is ``{}``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HttpError(413, "PayloadTooLarge", f"the body is larger than this server's limit of {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise HttpError(413, "PayloadTooLarge", f"the body is larger than this server's limit of {limit} bytes")
    if not body.strip():
        data: Any = {}
    else:
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise HttpError(400, "InvalidJSON", f"the body is not JSON ({exc}); send a JSON object") from None
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
    return data


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
    text = request.query_params.get("cursor")
    if text is None:
        return None
    try:
        position = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, binascii.Error):
        position = None
    if not (isinstance(position, list) and all(isinstance(p, str) for p in position)):
        raise ConfigurationError("cursor is not one this server gave: pass the next_cursor of the previous page as it is")
    return position
