"""The streaming driver of the run loop: ``agent.stream(...)``, events as they happen, no event loop.

The run loop (:mod:`omnisync.run_events`) makes every decision; this driver only chooses to
call the model with ``stream: true`` and pass each piece of text on as it arrives. So a
stream that completes stores exactly what ``run()`` stores. When it does not complete:

- the caller stops early (``break``, ``close()``, Ctrl-C, an async task cancelled): the HTTP
  response is closed at once, the text received so far is kept as the reply (marked
  ``{"partial": True}`` in its metadata), no unfinished tool call is stored, and the run ends
  ``cancelled``;
- the stream breaks (connection dropped, an error in the stream): as for a failed ``run()``,
  the session is left as it was before the run; the run ends ``failed`` with the text so far
  in its record's ``partial_response``, and the typed error is raised after a
  :class:`RunFailed` event.
"""

from __future__ import annotations

import threading
from contextlib import closing
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import OmnisyncError
from .model.completion import Completion
from .results import RunResult
from .run_events import (
    ModelCallFinished,
    ModelCallStarted,
    RunFailed,
    RunFinished,
    RunPaused,
    RunStarted,
    RunSteps,
    StoppedReply,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
)
from .run_drivers import drive

if TYPE_CHECKING:
    from .model.client import ChatClient
    from .model.stream import CompletionStream

StreamEvent = RunStarted | TextDelta | ToolCall | ToolResult | RunPaused | RunFinished | RunFailed
"""What ``agent.stream`` yields: that the run started (its id), text as it arrives, tool calls once complete, their results, then how the run ended."""

_INTERNAL = (ModelCallStarted, ModelCallFinished, Text)
_Method = TypeVar("_Method", bound=Callable[..., Any])


def streams(method: _Method) -> _Method:
    """Marks a method that returns a stream (AgentStream, RemoteStream), so omnisync.aio makes it an async iterator, not a coroutine."""
    method.__omnisync_streams__ = True  # type: ignore[attr-defined]
    return method


_Stream = TypeVar("_Stream", bound="EventStream")


class EventStream:
    """What every stream of a run offers: iterate it for events; ``run_id`` once the run started;
    ``result`` once it paused or ended; a with-block that closes it. Subclasses say how events
    come (``_drive``) and what closing does."""

    run_id: str | None = None
    _events: Iterator[StreamEvent] | None = None
    _result: RunResult | None = None

    @property
    def result(self) -> RunResult:
        if self._result is None:
            raise RuntimeError("the run has not paused or ended yet: iterate the stream to its end first")
        return self._result

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._events is None:
            self._events = self._drive()
        return self._events

    def __next__(self) -> StreamEvent:
        return next(iter(self))

    def __enter__(self: _Stream) -> _Stream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _drive(self) -> Iterator[StreamEvent]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class AgentStream(EventStream):
    """The events of one run as they happen: iterate it once, or use it as a context manager.

    ``result`` is what ``run()`` would have returned, once the run paused or ended;
    ``close()`` (from any thread) stops the run where it stands. A stream dropped before its
    end (``break`` out of a ``for`` loop over it, with no ``with``) stops its run as soon as
    nothing refers to it: the iteration holds no reference back to the stream, so no garbage
    collection is needed to free the run's session.
    """

    def __init__(
        self,
        open_steps: Callable[[], RunSteps],
        client: ChatClient,
        after_run: Callable[[RunResult], None],
        on_cancel: Callable[[str, Callable[[], None]], None] | None = None,
        result_of: Callable[[str], RunResult] | None = None,
    ) -> None:
        self._drive_state = _Drive(open_steps, client, after_run, on_cancel, result_of)

    @property
    def run_id(self) -> str | None:  # type: ignore[override]
        return self._drive_state.run_id

    @property
    def _result(self) -> RunResult | None:  # type: ignore[override]
        return self._drive_state.result

    def close(self) -> None:
        """Stop the run: the reply streaming now is cut off (its text kept, marked partial) and the run is cancelled."""
        self.interrupt()
        events = self._events
        if events is not None:
            try:
                events.close()  # type: ignore[attr-defined]
            except ValueError:  # the generator is running in another thread: it sees the stop and ends there
                pass

    def interrupt(self) -> None:
        """Ask the run to stop and cut off the reply streaming now; cheap and safe from any thread.

        The thread iterating the stream then ends the run (cancelled) and the iteration.
        """
        self._drive_state.interrupt()

    def _drive(self) -> Iterator[StreamEvent]:
        return self._drive_state.events()


class _Drive:
    """What iterating an :class:`AgentStream` needs, and nothing that refers back to the stream."""

    def __init__(
        self,
        open_steps: Callable[[], RunSteps],
        client: ChatClient,
        after_run: Callable[[RunResult], None],
        on_cancel: Callable[[str, Callable[[], None]], None] | None,
        result_of: Callable[[str], RunResult] | None = None,
    ) -> None:
        self._open_steps = open_steps
        self._result_of = result_of
        self._client = client
        self._after_run = after_run
        self._on_cancel = on_cancel
        self._reply: CompletionStream | None = None
        self._stopping = threading.Event()
        self.run_id: str | None = None
        self.result: RunResult | None = None

    def interrupt(self) -> None:
        self._stopping.set()
        reply = self._reply
        if reply is not None:
            reply.close()  # unblocks a read in another thread at once

    def events(self) -> Iterator[StreamEvent]:
        try:
            with closing(drive(self._open_steps(), self._stream_reply, leave=self._end)) as driven:
                for event in driven:
                    if isinstance(event, RunStarted):
                        self.run_id = event.run_id
                        if self._on_cancel is not None:
                            self._on_cancel(event.run_id, self.interrupt)  # a cancel request from anywhere cuts the reply off
                    if isinstance(event, (RunPaused, RunFinished)):
                        self.result = event.result
                        self._after_run(event.result)
                    if not isinstance(event, _INTERNAL):
                        yield event
        except OmnisyncError as error:  # the loop recorded the run as failed: say so, then raise
            yield RunFailed(self.run_id, error)
            raise

    def _stream_reply(self, call: ModelCallStarted) -> Generator[StreamEvent, None, Completion | StoppedReply]:
        """Stream one model call, yielding its text; returns the Completion (or StoppedReply) for the loop.

        If the caller leaves while a piece of text is out, ``_reply`` stays set for :meth:`_end`.
        """
        if self._stopping.is_set():
            return StoppedReply(Completion(content=None))
        from .model.stream import TextFragment

        reply = self._client.stream(call.messages, call.tools, **call.options())
        self._reply = reply
        outcome: Completion | StoppedReply
        try:
            for delta in reply:
                if isinstance(delta, TextFragment) and delta.text:
                    yield TextDelta(call.run_id, delta.text)
                if self._stopping.is_set():
                    outcome = StoppedReply(reply.partial())
                    break
            else:
                outcome = reply.completion
        except Exception:  # close() from another thread can break the read in any way (urllib3 may find its socket gone)
            if not self._stopping.is_set():
                reply.close()
                self._reply = None
                raise
            outcome = StoppedReply(reply.partial())  # the read failed because close() cut the connection
        reply.close()
        self._reply = None
        return outcome

    def _end(self, steps: RunSteps) -> None:
        """The caller left mid-reply: hand the loop what arrived so far, so it keeps that text and cancels."""
        reply = self._reply
        if reply is not None and self.result is None:
            reply.close()
            try:
                ended = steps.send(StoppedReply(reply.partial()))
                if isinstance(ended, RunFinished):
                    self.result = ended.result
                    self._after_run(ended.result)
            except StopIteration:
                pass
        steps.close()
        if self.result is None and self.run_id is not None and self._result_of is not None:
            self.result = self._result_of(self.run_id)  # left between replies: the run as its close ended it
