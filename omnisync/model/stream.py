"""A streamed chat completion: chunks read as they arrive, handed out as deltas, assembled into a Completion.

How a stream ends, decided once:

- ``data: [DONE]`` ends it; the Completion is whatever was assembled (finish_reason may be None
  if the server never sent one).
- The body ends without ``[DONE]``: complete if a choice's ``finish_reason`` was seen (some
  servers leave ``[DONE]`` out; only a trailing usage chunk can be missing then), otherwise
  :class:`StreamInterruptedError`.
- An ``error`` object (or an ``event: error``) in the stream: :class:`StreamServerError`.
- The connection drops, a read times out or the call's deadline passes:
  :class:`StreamInterruptedError`.

Every such error carries ``partial``: a Completion with the text received so far and no tool
calls (a call cut off in its arguments is not a call).
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import requests
import urllib3

from .._logging import logger
from ..errors import ModelResponseError, ModelStreamError, StreamInterruptedError, StreamServerError
from ..redact import redact_url
from ..usage import read_usage
from .body import reader as body_reader
from .completion import Completion, parse_completion
from .sse import EventParser

if TYPE_CHECKING:
    from ..telemetry import ChatCall


END_WAIT_SECONDS = 1.0  # after [DONE], how long the body's last chunk may take before the connection is dropped, not reused
END_READS = 4


@dataclass(frozen=True, slots=True)
class TextFragment:
    """A piece of the answer's text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallFragment:
    """A fragment of tool call ``index``: its id and name come first, its arguments in pieces."""

    index: int
    id: str | None
    name: str | None
    arguments: str


Fragment = TextFragment | ToolCallFragment


@dataclass
class _ToolCall:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


class CompletionAssembler:
    """Adds up CreateChatCompletionStreamResponse chunks (choice 0) into one Completion."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.saw_content: bool = False
        self.tool_calls: dict[int, _ToolCall] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.model: str | None = None
        self.id: str | None = None

    def add(self, chunk: dict[str, Any]) -> list[Fragment]:
        self.id = self.id or chunk.get("id")
        self.model = self.model or chunk.get("model")
        if isinstance(chunk.get("usage"), dict):
            self.usage = read_usage(chunk["usage"])
        deltas: list[Fragment] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str):
                self.saw_content = True
                if content:
                    self.text.append(content)
                    deltas.append(TextFragment(content))
            for position, fragment in enumerate(delta.get("tool_calls") or ()):
                deltas.append(self._add_tool_fragment(fragment, position))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return deltas

    def _add_tool_fragment(self, fragment: dict[str, Any], position: int) -> ToolCallFragment:
        index = fragment.get("index", position)
        call = self.tool_calls.setdefault(index, _ToolCall())
        function = fragment.get("function") or {}
        call.id = call.id or fragment.get("id")
        call.name = call.name or function.get("name")  # sent whole, once; a repeat is not appended
        arguments = function.get("arguments") or ""
        if arguments:
            call.arguments.append(arguments)
        return ToolCallFragment(index, fragment.get("id"), function.get("name"), arguments)

    def _content(self) -> str | None:
        text = "".join(self.text)
        return text if text or (self.saw_content and not self.tool_calls) else None

    def partial(self) -> Completion:
        """What arrived so far, for an error: the text, no tool calls."""
        return Completion(content="".join(self.text) or None, usage=self.usage, model=self.model, id=self.id)

    def completion(self) -> Completion:
        tool_calls = []
        for index in sorted(self.tool_calls):
            call = self.tool_calls[index]
            if not call.id or not call.name:
                raise ModelResponseError(f"the stream's tool call {index} came without {'an id' if not call.id else 'a name'}")
            arguments = "".join(call.arguments) or "{}"
            tool_calls.append({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
        return Completion(
            content=self._content(),
            tool_calls=tool_calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model=self.model,
            id=self.id,
        )


class CompletionStream:
    """The deltas of one streamed reply; after the loop, ``completion`` is the whole reply.

    Iterate it once (or use it as a context manager); ``close()`` drops the connection at once,
    unless the body was read to its end: then the connection goes back to the pool for the next
    call (no new TCP or TLS handshake). The call's deadline is checked after every read, so a
    stream ends at most one read timeout after it.
    """

    def __init__(
        self,
        response: requests.Response,
        *,
        deadline_at: float,
        clock: Callable[[], float] = time.monotonic,
        call: ChatCall | None = None,
    ) -> None:
        self.response = response
        self._call = call  # its span ends with the stream
        self.url: str = redact_url(response.url)
        self._deadline_at = deadline_at
        self._clock = clock
        self._assembler = CompletionAssembler()
        self._completion: Completion | None = None
        self._started = False
        self._read = self._reader()
        self._body_ended = False

    @property
    def completion(self) -> Completion:
        if self._completion is None:
            raise RuntimeError("the stream has not finished: iterate it to the end first")
        return self._completion

    def __enter__(self) -> "CompletionStream":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._body_ended:
            release = getattr(self.response.raw, "release_conn", None)
            if release is not None:
                release()  # the whole body was read: the connection can carry the next call
        self.response.close()

    def partial(self) -> Completion:
        """What has arrived so far: the text, never a tool call."""
        return self._assembler.partial()

    def __iter__(self) -> Iterator[Fragment]:
        if self._started:
            raise RuntimeError("a CompletionStream can be iterated only once")
        self._started = True
        try:
            if self.response.headers.get("content-type", "").startswith("application/json"):
                yield from self._whole_reply()
            else:
                yield from self._deltas()
        except BaseException as exc:
            if self._call is not None and not isinstance(exc, GeneratorExit):
                self._call.failed(exc)
            raise
        finally:
            self.close()
            if self._call is not None and self._completion is not None:
                self._call.finished(self._completion)
            elif self._call is not None:
                self._call.stopped()  # after failed(), nothing is left to end

    def _whole_reply(self) -> Iterator[Fragment]:
        """A server that ignored ``stream: true`` and answered with one JSON completion."""
        self._completion = parse_completion(self.response.json())
        if self._completion.content:
            yield TextFragment(self._completion.content)
        for index, call in enumerate(self._completion.tool_calls):
            yield ToolCallFragment(index, call["id"], call["function"]["name"], call["function"]["arguments"])

    def _deltas(self) -> Iterator[Fragment]:
        assembler = self._assembler
        parser = EventParser()
        for chunk in self._body():
            for event in parser.feed(chunk):
                if event.data == "[DONE]":
                    self._completion = assembler.completion()
                    self._read_to_end()
                    return
                payload = self._payload(event.data)
                if event.event == "error" or (isinstance(payload, dict) and payload.get("error")):
                    raise self._server_error(payload)
                yield from assembler.add(payload)
        if assembler.finish_reason is None:
            cut = " in the middle of an event" if parser.pending else ""
            raise StreamInterruptedError(
                f"{self.url} ended the stream{cut} before the reply was complete (no finish_reason, no [DONE])",
                partial=assembler.partial(),
            )
        self._completion = assembler.completion()

    def _payload(self, data: str) -> dict[str, Any]:
        try:
            payload = json.loads(data)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            raise ModelStreamError(f"{self.url} sent an event that is not a JSON object: {data[:200]!r}", partial=self._assembler.partial())
        return payload

    def _server_error(self, payload: dict[str, Any]) -> StreamServerError:
        error = payload.get("error", payload)
        detail = error.get("message") if isinstance(error, dict) else error
        return StreamServerError(
            f"{self.url} sent an error in the stream: {detail or error}", partial=self._assembler.partial(), body=error
        )

    def _read_to_end(self) -> None:
        """After [DONE], the body's end (its last chunk), waited for briefly: a body that does not
        end soon, or ends badly, leaves its connection to be dropped by close()."""
        connection = getattr(self.response.raw, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            sock.settimeout(END_WAIT_SECONDS)  # urllib3 sets its own timeouts again when it reuses the connection
        try:
            for _ in range(END_READS):
                if not self._read():
                    self._body_ended = True
                    return
        except Exception:  # noqa: BLE001 - the answer is complete; only the connection's reuse is lost
            logger.debug("%s did not end its body cleanly after [DONE]; its connection is dropped", self.url)

    def _body(self) -> Iterator[bytes]:
        """The body's bytes as they arrive (read1: whatever is there, chunked or not)."""
        read = self._read
        while True:
            try:
                chunk = read()
            except (OSError, http.client.HTTPException, urllib3.exceptions.HTTPError, requests.RequestException) as exc:
                if self._clock() > self._deadline_at:
                    raise StreamInterruptedError(
                        f"{self.url} was still streaming at the call's deadline; pass a longer deadline to stream()",
                        partial=self._assembler.partial(),
                    ) from exc
                raise StreamInterruptedError(
                    f"{self.url} broke off the stream: {exc}", partial=self._assembler.partial()
                ) from exc
            if not chunk:
                self._body_ended = True
                return
            yield chunk
            if self._clock() > self._deadline_at:
                raise StreamInterruptedError(
                    f"{self.url} was still streaming at the call's deadline; pass a longer deadline to stream()",
                    partial=self._assembler.partial(),
                )

    def _reader(self) -> Callable[[], bytes]:
        return body_reader(self.response, self._deadline_at, self._clock)
