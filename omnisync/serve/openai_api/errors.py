"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``, which every OpenAI client reads.

Every failure of a ``/v1`` route goes out this way: a field the server does not support is a
400 naming it in ``param``, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..bodies import HttpError
from ..failures import public_error

Handler = Callable[[Request], Awaitable[Response]]

_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error", 409: "invalid_request_error", 413: "invalid_request_error"}


class OpenAIError(Exception):
    """A request refused: its HTTP ``status``, a message that says what to do, the ``param`` at fault."""

    status: int
    param: str | None
    code: str | None

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code


def unsupported(param: str, what: str = "") -> OpenAIError:
    """The 400 of a field this server does not support."""
    return OpenAIError(400, f"{param!s} is not supported by this server{': ' + what if what else ''}", param, "unsupported_parameter")


def not_found(kind: str, object_id: str, param: str) -> OpenAIError:
    return OpenAIError(404, f"no {kind} with id {object_id!r} here (for the token you sent)", param, "not_found")


def error_response(status: int, message: str, param: str | None = None, code: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": code}}, status_code=status, headers=headers)


def guarded(handler: Handler) -> Handler:
    """``handler`` with every error answered in OpenAI's shape (a failure of the server's own says only its request id)."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request)
        except OpenAIError as exc:
            return error_response(exc.status, str(exc), exc.param, exc.code)
        except HttpError as exc:
            return error_response(exc.status, str(exc), None, exc.type, exc.headers or None)
        except Exception as exc:
            status, error = public_error(exc, f"{request.method} {request.url.path}")
            return error_response(status, str(error.get("message", "")), None, str(error.get("type")))

    return endpoint


def error_object(error: dict[str, Any]) -> dict[str, str]:
    """A failed run's error (omnisync's wire shape) as a Response's ``error``: ``{code, message}``."""
    return {"code": "server_error", "message": str(error.get("message") or error.get("type") or "the run failed")}
