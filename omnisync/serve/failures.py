"""What a client is told when the server fails, and what its log keeps.

A failure of the server's own (a store that failed, a bug) is answered with its class and a
request id, never its message: a store's error may quote SQL, bound parameters, hosts, users
or paths. The log gets the whole cause under that id, redacted like every logged text.
Errors that are the client's (4xx) or the model's (502) keep their message.
"""

from __future__ import annotations

import traceback
import uuid
from typing import Any

from .._logging import logger
from ..errors import ModelError, OmnisyncError, RemoteError
from ..redact import redact_text
from ..wire import error_to_wire, http_status


def public_error(error: BaseException, where: str) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON error for ``error``; a failure of the server's own is logged under a request id."""
    status = http_status(error)
    if status < 500 or isinstance(error, (ModelError, RemoteError)):
        return status, error_to_wire(error)
    request_id = log_failure(error, where)
    kind = type(error).__name__ if isinstance(error, OmnisyncError) else "InternalError"
    return status, {"type": kind, "message": f"the server could not do this; its log says why under request id {request_id}", "request_id": request_id}


def log_failure(error: BaseException, where: str) -> str:
    """Log ``error`` with its traceback and causes, redacted; return the request id it is logged under."""
    request_id = uuid.uuid4().hex[:16]
    cause = redact_text("".join(traceback.format_exception(error)))
    logger.error("%s failed (request id %s):\n%s", where, request_id, cause)
    return request_id
