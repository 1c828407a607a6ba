"""Every error omnisync raises, drawn once.

    OmnisyncError
    ├── ConfigurationError (also ValueError)    a bad argument or setting, raised when it is given
    │   └── ApiKeyError                          the api_key callable raised, or returned no token
    ├── MissingDependencyError (also ImportError) an optional extra is not installed
    ├── StoreError                               a memory store could not read or write
    │   └── DecryptionError                      an encrypted value cannot be opened here (key, place)
    ├── TransferError                            an export, import or copy cannot be done as asked
    ├── RemoteError                              an omnisync server refused a request (RemoteAgent)
    ├── ModelError                               the model endpoint did not give an answer
    │   ├── ModelConnectionError                 no HTTP response at all
    │   │   └── ModelTimeoutError
    │   ├── ModelResponseError                   a response that is not a chat completion
    │   ├── OutputValidationError                an answer that does not fit the run's output_type
    │   ├── ModelStreamError                     a streamed reply broke after it began (never retried)
    │   │   ├── StreamInterruptedError           the connection ended, dropped or ran out of time
    │   │   └── StreamServerError                the server sent an error object in the stream
    │   └── ModelStatusError                     an HTTP error status
    │       ├── BadRequestError                  400
    │       │   └── StructuredOutputUnsupportedError  the server refused response_format json_schema
    │       ├── AuthenticationError              401
    │       ├── PermissionDeniedError            403
    │       ├── NotFoundError                    404
    │       ├── ConflictError                    409
    │       ├── UnprocessableEntityError         422
    │       ├── RateLimitError                   429
    │       └── InternalServerError              500 and above
    └── RunError                                 a durable run cannot do what was asked
        ├── RunNotFoundError (also KeyError)
        ├── RunConflictError                     another process changed or holds the run
        ├── SessionBusyError                     another run holds the session
        └── RunStateError                        the run is not in a state that allows it
            └── DecisionFinalError               a call already has the opposite decision
"""

from __future__ import annotations

from typing import Any


class OmnisyncError(Exception):
    """Base class of every omnisync error."""


class ConfigurationError(OmnisyncError, ValueError):
    """An argument or setting is not allowed; the message says what is."""


class ApiKeyError(ConfigurationError):
    """model_config's ``api_key`` callable raised (the cause is chained) or returned no token; nothing was sent."""


class MissingDependencyError(OmnisyncError, ImportError):
    """An optional dependency is missing; the message names the pip install line."""


class StoreError(OmnisyncError):
    """A memory store failed to read or write; nothing is returned in place of the data."""


class NotSerializableError(StoreError, TypeError):
    """A message's metadata or tool calls hold something JSON cannot (a set, an object...); nothing was written."""


class DecryptionError(StoreError):
    """An encrypted value could not be opened: the master key that wraps its data key is not
    given (the message names its key id), the key is wrong, the value was moved from its place
    (another agent, session, seq or record), or it is in clear where encryption is on.
    Nothing was changed or deleted."""


class TransferError(OmnisyncError):
    """An export, import or copy refused its input or destination, or its end check failed; the message says why."""


class RemoteError(OmnisyncError):
    """An omnisync server answered with an error that has no twin in the local API (401, 404 for an agent, 413...).

    Errors a local agent would raise (SessionBusyError, RunNotFoundError...) come back as themselves.
    """

    def __init__(self, message: str, *, status_code: int, body: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class ModelError(OmnisyncError):
    """The model endpoint did not produce a usable answer."""


class ModelConnectionError(ModelError):
    """The request reached no server, or the connection broke before a response."""


class ModelTimeoutError(ModelConnectionError):
    """The server did not answer within the timeout.

    ``request_sent`` is True when the connection was made and the request sent (a read
    timeout): the server may still be generating, so it is not retried.
    """

    request_sent = False


class ModelResponseError(ModelError):
    """The server answered 2xx with something that is not a chat completion."""


class OutputValidationError(ModelError):
    """The model's final answer is not JSON, or does not fit the run's ``output_type``.

    ``text`` is the answer as the model wrote it (it is also kept in the session, and the run
    record says ``failed`` with the reason); ``problems`` lists what did not fit.
    """

    def __init__(self, message: str, *, text: str | None, problems: list[str], run_id: str | None = None) -> None:
        super().__init__(message)
        self.text = text
        self.problems = problems
        self.run_id = run_id


class ModelStreamError(ModelError):
    """A streamed reply broke after its first byte; ``partial`` holds the Completion received so far.

    Never retried: posting again would bill and run a second generation.
    """

    def __init__(self, message: str, *, partial: Any = None, body: Any = None) -> None:
        super().__init__(message)
        self.partial = partial
        self.body = body


class StreamInterruptedError(ModelStreamError):
    """The stream ended, dropped or passed its deadline before the reply was complete."""


class StreamServerError(ModelStreamError):
    """The server put an error object in the stream; ``body`` is that object."""


class ModelStatusError(ModelError):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, *, status_code: int, request_id: str | None, body: Any) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.request_id = request_id
        self.body = body


class BadRequestError(ModelStatusError):
    """400: the server refused the request as malformed."""


class StructuredOutputUnsupportedError(BadRequestError):
    """The server refused ``response_format`` with a JSON schema (a run's ``output_type``): it lacks structured output."""


class AuthenticationError(ModelStatusError):
    """401: the API key is missing or wrong."""


class PermissionDeniedError(ModelStatusError):
    """403: the key may not use this model or endpoint."""


class NotFoundError(ModelStatusError):
    """404: no such model or endpoint."""


class ConflictError(ModelStatusError):
    """409: the server reported a conflict."""


class UnprocessableEntityError(ModelStatusError):
    """422: the server could not process the request."""


class RateLimitError(ModelStatusError):
    """429: too many requests, or the quota is used up."""


class InternalServerError(ModelStatusError):
    """500 and above: the server failed."""


STATUS_ERRORS: dict[int, type[ModelStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error_class(status_code: int) -> type[ModelStatusError]:
    """The ModelStatusError subclass for an HTTP status."""
    if status_code >= 500:
        return InternalServerError
    return STATUS_ERRORS.get(status_code, ModelStatusError)


class RunError(OmnisyncError):
    """A durable run cannot do what was asked."""


class RunNotFoundError(RunError, KeyError):
    """No run with that id for this agent in its store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RunConflictError(RunError):
    """Another process changed the run first, or holds its lease."""


class SessionBusyError(RunError):
    """Another run holds the session: it is running, or paused for an approval or a budget.

    ``run_id`` is that run's id and ``paused`` says whether it waits for a person.
    """

    def __init__(self, message: str, *, run_id: str | None = None, paused: bool = False) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.paused = paused


class RunStateError(RunError):
    """The run's status does not allow this (resuming a finished run, approving an unknown call)."""


class DecisionFinalError(RunStateError):
    """A tool call already has a recorded decision, and a decision is final."""
