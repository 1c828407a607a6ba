"""POST {base_url}/chat/completions with requests: a session per thread, timeouts, retries."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

import requests
import urllib3

from .._logging import logger
from ..errors import (
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelStatusError,
    ModelTimeoutError,
    status_error_class,
)
from ..telemetry import ChatCall
from ..redact import RecentSecrets, redact_text, redact_url, redact_value, remember_secret
from .body import reader as body_reader, sent_length
from .completion import Completion, parse_completion
from .config import SAMPLING_OPTIONS, ModelConfig
from .extra_body import check_extra_body
from .http_options import call_api_key
from .retry import attempted, retry_after_seconds, retrying
from .stream import CompletionStream
from .transport import Transport

USER_AGENT = "omnisync/0.1"
MINTED_TOKENS_KEPT = 16  # a callable key's latest tokens, redacted in case an error quotes one after its request
OUTPUT_LIMITS = ("max_tokens", "max_completion_tokens")
DEFAULT_STREAM_DEADLINE = 600.0  # seconds for a whole streamed call: long answers fit, a trickling server does not hold it forever


class ChatClient:
    """A blocking Chat Completions client; safe to share between threads.

    Requests go out through a :class:`~omnisync.model.transport.Transport`: a
    ``requests.Session`` per thread, closed in :meth:`close`; a session given as
    ``http_session`` is used from every thread and left open.
    """

    def __init__(
        self, config: ModelConfig, *, sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config
        self._clock = clock
        if isinstance(config.api_key, str):
            remember_secret(config.api_key)
        self._minted = RecentSecrets(MINTED_TOKENS_KEPT)
        self._transport = Transport(self.url, config.default_query, config.http_session)
        self._retrying = retrying(config.max_retries, sleep)  # its per-call state is thread-local: one serves every thread
        self._fixed_headers: dict[str, str] | None = None
        if not callable(config.api_key):
            self._fixed_headers = self.request_headers()

    @property
    def url(self) -> str:
        return f"{self.config.base_url}/chat/completions"

    @property
    def shown_url(self) -> str:
        """The URL as errors and logs show it: without a password."""
        return redact_url(self.url)

    def request_headers(self) -> dict[str, str]:
        """The headers of one request: a callable ``api_key`` is called now; ``default_headers`` replace ours of the same name.

        With a key that is a string (or none), they never change: the same dict every time, which
        the transport merges with requests' defaults once.
        """
        if self._fixed_headers is not None:
            return self._fixed_headers
        headers = {"User-Agent": USER_AGENT}
        key = call_api_key(self.config.api_key, self._minted)
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        if self.config.organization is not None:
            headers["OpenAI-Organization"] = self.config.organization
        if self.config.project is not None:
            headers["OpenAI-Project"] = self.config.project
        for name, value in self.config.default_headers.items():
            for ours in [own for own in headers if own.lower() == name.lower()]:
                del headers[ours]
            headers[name] = value
        return headers

    def request_body(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        sampling: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> dict[str, Any]:
        """The JSON body: the config's ``extra_body`` and this call's (checked as model_config's is),
        ``sampling`` (the config's sampling options when None), then ``overrides`` that are not None."""
        body: dict[str, Any] = {**self.config.extra_body}
        if extra_body:
            body.update(check_extra_body(extra_body, SAMPLING_OPTIONS, where="extra_body"))
        body.update({"model": self.config.model, "messages": [_sendable(m) if "tool_calls" in m else m for m in messages]})
        body.update(self.config.sampling if sampling is None else sampling)
        body.update({k: v for k, v in overrides.items() if v is not None})
        if tools:
            body["tools"] = list(tools)
            body.setdefault("tool_choice", "auto")
        return body

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        sampling: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> Completion:
        """One chat completion, retried by the rules in :mod:`omnisync.model.retry`.

        The whole call, retries included, ends within ``deadline`` seconds: each read waits at
        most ``timeout``, and a body still arriving at the deadline is given up. ``sampling``
        replaces the config's sampling options for this call; ``extra_body`` adds a server's own
        options to the config's.
        """
        body = _encoded(self.request_body(messages, tools, sampling=sampling, extra_body=extra_body, **overrides))
        started = self._clock()
        deadline_at = started + self.config.deadline
        attempts = 0
        call = ChatCall(self.config, messages)

        def attempt() -> Completion:
            nonlocal attempts
            attempts += 1
            return call.finished(parse_completion(self._post(body, deadline_at)))

        try:
            return attempted(self._retrying, attempt)
        except ModelError as exc:
            _tell_attempts(exc, attempts, self._clock() - started)
            call.failed(exc)
            raise
        except BaseException as exc:
            call.failed(exc)
            raise

    def _post(self, body: bytes, deadline_at: float) -> dict[str, Any]:
        left = deadline_at - self._clock()
        if left <= 0:
            raise self._past_deadline(request_sent=False)
        timeout = min(self.config.timeout, left)
        headers = self.request_headers()
        response = self._send(body, headers, timeout, retry_read_timeout=False)
        with response:
            content = self._read_body(response, deadline_at)
        if response.status_code >= 400:
            response._content = content
            raise _status_error(response, self.config, headers)
        try:
            answer: dict[str, Any] = json.loads(content)
            return answer
        except ValueError as exc:
            raise ModelResponseError(f"{self.shown_url} answered {response.status_code} with a body that is not JSON") from exc

    def _read_body(self, response: requests.Response, deadline_at: float) -> bytes:
        """The response body, read in chunks until the call's deadline (and no further once its Content-Length came)."""
        chunks = []
        read = body_reader(response, deadline_at, self._clock)
        expected, received = sent_length(response), 0
        try:
            while chunk := read():
                chunks.append(chunk)
                if self._clock() > deadline_at:
                    raise self._past_deadline(request_sent=True)
                received += len(chunk)
                if received == expected:
                    break
        except (OSError, http.client.HTTPException, urllib3.exceptions.HTTPError, requests.RequestException) as exc:
            if self._clock() > deadline_at:
                raise self._past_deadline(request_sent=True) from exc
            error = ModelTimeoutError(f"{self.shown_url} stopped sending its answer: {redact_text(str(exc))}")
            error.request_sent = True
            raise error from exc
        return b"".join(chunks)

    def _send(self, body: bytes, headers: Mapping[str, str], timeout: float, *, retry_read_timeout: bool) -> requests.Response:
        """POST, up to the response's headers; what failed before them as omnisync's errors (a
        stream's wait for its headers is retried after a read timeout, a whole answer's is not)."""
        try:
            return self._transport.post(body, headers, timeout=timeout)
        except requests.ConnectTimeout as exc:
            raise ModelTimeoutError(f"{self.shown_url} did not accept a connection within {timeout:g} s") from exc
        except requests.Timeout as exc:
            raise self._no_answer(timeout, retried=retry_read_timeout) from exc
        except requests.RequestException as exc:
            raise ModelConnectionError(f"could not reach {self.shown_url}: {redact_text(str(exc))}") from exc

    def _no_answer(self, timeout: float, *, retried: bool) -> ModelTimeoutError:
        """A read timeout, with every setting that helps: a longer timeout, or a shorter answer."""
        limit = next((f"{name}={self.config.sampling[name]}" for name in OUTPUT_LIMITS if name in self.config.sampling), "none set")
        error = ModelTimeoutError(
            f"{self.shown_url} did not answer within {timeout:g} s"
            + ("" if retried else "; a generation that outlasts the timeout is not retried (the server may still be computing it)")
            + ". For a slow server, raise the timeout: "
            f"model_config 'timeout' or OMNISYNC_MODEL_TIMEOUT (seconds per read). For a shorter answer, set an "
            f"output limit: model_config 'max_tokens' (or 'max_completion_tokens'; now {limit}), which the examples "
            "read from OMNISYNC_MAX_TOKENS"
        )
        error.request_sent = not retried
        return error

    def _past_deadline(self, *, request_sent: bool) -> ModelTimeoutError:
        error = ModelTimeoutError(
            f"{self.shown_url} did not finish its answer within the call's deadline of {self.config.deadline:g} s "
            "(model_config deadline); a server that sends its body this slowly is given up, not retried"
        )
        error.request_sent = request_sent
        return error

    _stream_options_rejected = False  # set once a server answered 400 to stream_options

    def stream(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        deadline: float = DEFAULT_STREAM_DEADLINE,
        sampling: Mapping[str, Any] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> CompletionStream:
        """One chat completion with ``stream: true``: iterate the result for its deltas, then read ``.completion``.

        Tried again by the rules of :meth:`complete` only until a 2xx response's headers have
        arrived; once a stream has begun it is never posted again (that would bill and run a
        second generation), and a break raises :class:`~omnisync.errors.ModelStreamError`.
        Usage is asked for with ``stream_options``; a server that refuses that option with a
        400 is asked once more without it, and not asked again by this client. ``deadline``
        bounds the whole call, in seconds from now; ``sampling`` and ``extra_body`` are as in :meth:`complete`.
        """
        deadline_at = time.monotonic() + deadline
        body = self.request_body(messages, tools, sampling=sampling, extra_body=extra_body, **overrides)
        body["stream"] = True
        if not self._stream_options_rejected:
            body["stream_options"] = {"include_usage": True}
        call = ChatCall(self.config, messages, streaming=True)
        try:
            return attempted(self._retrying, lambda: CompletionStream(self._open_stream(body), deadline_at=deadline_at, call=call))
        except BaseException as exc:
            call.failed(exc)
            raise

    def _open_stream(self, body: dict[str, Any]) -> requests.Response:
        try:
            return self._post_for_stream(body)
        except BadRequestError as exc:
            if "stream_options" not in body or "stream_options" not in str(exc.body):
                raise
        logger.debug("%s refused stream_options; streaming without usage", self.shown_url)
        self._stream_options_rejected = True
        del body["stream_options"]
        return self._post_for_stream(body)

    def _post_for_stream(self, body: dict[str, Any]) -> requests.Response:
        """POST and wait for the status line and headers only; the body is read by CompletionStream."""
        headers = self.request_headers()
        response = self._send(_encoded(body), headers, self.config.timeout, retry_read_timeout=True)
        if response.status_code >= 400:
            try:
                raise _status_error(response, self.config, headers)
            finally:
                response.close()
        return response

    def close(self) -> None:
        self._transport.close()


def _tell_attempts(error: ModelError, attempts: int, seconds: float) -> None:
    """Add how many attempts were made, over how long, to a connection error or a retried one."""
    if attempts <= 1 and not isinstance(error, ModelConnectionError):
        return
    told = f"{error} ({attempts} attempt{'s' if attempts != 1 else ''} over {seconds:.1f} s)"
    error.args = (told, *error.args[1:])
    if isinstance(error, ModelStatusError):
        error.message = told


def _status_error(response: requests.Response, config: ModelConfig, headers: Mapping[str, str]) -> Exception:
    """The typed error for an HTTP error status; the body and message are redacted (a 401 may quote the key)."""
    base_url = redact_url(config.base_url)
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    key = headers.get("Authorization", "").removeprefix("Bearer ") or None
    body = redact_value(body, [key])
    detail = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(detail, dict):
        detail = detail.get("message") or detail
    request_id = response.headers.get("x-request-id")
    message = redact_text(f"{response.request.method} {response.url} answered {response.status_code}: {detail}", [key])
    if request_id:
        message += f" (request id {request_id})"
    path = urlparse(base_url).path.rstrip("/")
    if response.status_code == 404 and not path.endswith("/v1") and "/deployments/" not in path:  # Azure's deployment URLs have no /v1
        message += (
            f". Hint: the base URL {base_url} does not end in /v1; OpenAI-compatible servers usually answer "
            f"at {base_url}/v1/chat/completions, so try base_url={base_url + '/v1'!r} (or OPENAI_BASE_URL)"
        )
    error = status_error_class(response.status_code)(
        message, status_code=response.status_code, request_id=request_id, body=body
    )
    error.retry_after = retry_after_seconds(response.headers.get("retry-after"))  # type: ignore[attr-defined]
    logger.debug("model call failed: %s", message)
    return error


def _encoded(body: dict[str, Any]) -> bytes:
    """The JSON a request sends, as requests' ``json=`` wrote it (no NaN or infinity: servers refuse them)."""
    try:
        return json.dumps(body, allow_nan=False).encode()
    except (TypeError, ValueError) as exc:
        raise ModelError(
            f"the request cannot be sent as JSON ({exc}): a message, tool result or model option holds a value "
            "JSON cannot carry (NaN, infinity, or an object that is not a string, number, list or dict)"
        ) from exc


def _sendable(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` in a form every server takes: an assistant message of tool calls alone
    carries content ``""``, not null. OpenAI's schema allows both; llama.cpp's server (and
    others validating with a plain string type) refuses null."""
    if message.get("role") == "assistant" and message.get("tool_calls") and message.get("content") is None:
        return {**message, "content": ""}
    return message

