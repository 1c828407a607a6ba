"""What a run reports as it goes, and the drivers that consume it.

The run loop (:meth:`omnisync.runner.Runner.start` and ``resume``) is a generator of these
events that makes every decision: call the model, run tools, pause, finish. It does not call
the model itself: it yields :class:`ModelCallStarted` and waits for the driver to send back
the :class:`~omnisync.model.completion.Completion` (or throw the model's error in). So a driver
chooses how the model is called: :func:`run_to_end` makes one blocking call per step, and a
streaming driver can stream the same request, pass on text as it arrives, and send back the
completion it assembled. Every driver shares the same decisions and the same saved state.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Union

from .model.completion import Completion
from .results import RunResult
from .telemetry import within_run


@dataclass(frozen=True)
class RunStarted:
    """The run holds its session and its record is stored (``resumed``: again, by a resume).

    From here it can be followed, resumed or cancelled by ``run_id``; it comes before the
    first model call, so a caller learns the id at once.
    """

    run_id: str
    session_id: str
    resumed: bool = False


@dataclass(frozen=True)
class ModelCallStarted:
    """The loop needs a model reply to these messages; the driver sends back a Completion.

    ``response_format`` is set when the run has an ``output_type``: the call must ask for it;
    ``extra_body`` when the run was given a server's own options.
    """

    run_id: str
    step: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    response_format: dict[str, Any] | None = None
    extra_body: dict[str, Any] | None = None

    def options(self) -> dict[str, Any]:
        """The request options this call adds to the model's own (keyword arguments of ``ChatClient.complete``)."""
        options: dict[str, Any] = {"response_format": self.response_format} if self.response_format else {}
        if self.extra_body:
            options["extra_body"] = self.extra_body
        return options


@dataclass(frozen=True)
class ModelCallFinished:
    run_id: str
    step: int
    completion: Completion


@dataclass(frozen=True)
class TextDelta:
    """A piece of a reply's text as it streams in (streaming drivers only)."""

    run_id: str
    text: str


@dataclass(frozen=True)
class Text:
    """The text of a model reply, once it is stored."""

    run_id: str
    text: str


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for, once the reply that holds it is stored."""

    run_id: str
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolResult:
    """The result of a tool call (or why it did not run), once it is stored."""

    run_id: str
    call_id: str
    name: str
    content: str


@dataclass(frozen=True)
class RunPaused:
    """The run waits for an approval or a budget; ``result`` is what ``run()`` returns."""

    result: RunResult


@dataclass(frozen=True)
class RunFinished:
    """The run ended (completed or failed); ``result`` is what ``run()`` returns."""

    result: RunResult


@dataclass(frozen=True)
class RunFailed:
    """The run ended with ``error``, a typed omnisync error (its record says ``failed``); a streaming driver yields this, then raises ``error``."""

    run_id: str | None
    error: BaseException


@dataclass(frozen=True)
class StoppedReply:
    """Sent to the loop in place of a Completion when the caller stopped a streamed reply midway.

    ``completion`` holds the text received so far (never a tool call): the loop keeps that
    text as the reply, marked partial, and ends the run cancelled.
    """

    completion: Completion


RunEvent = Union[RunStarted, ModelCallStarted, ModelCallFinished, TextDelta, Text, ToolCall, ToolResult, RunPaused, RunFinished, RunFailed]
RunSteps = Generator[RunEvent, Union[Completion, StoppedReply, None], RunResult]
ModelCall = Callable[..., Completion]
"""How a driver calls the model: ``call(messages, tools, **options)``, as ``ChatClient.complete`` takes them."""


ReplyTo = Callable[[ModelCallStarted], Generator[RunEvent, None, Union[Completion, StoppedReply]]]
"""How a driver answers a model call: a generator that may yield events of its own (text as it
streams) and returns the Completion, or a StoppedReply when its caller stopped it midway."""


def drive(steps: RunSteps, reply_to: ReplyTo, leave: Callable[[RunSteps], None] | None = None) -> Generator[RunEvent, None, None]:
    """Every driver's side of the run loop's protocol, written once.

    Passes each event of the loop on; answers each :class:`ModelCallStarted` with
    ``reply_to`` (passing on what it yields); throws a model error into the loop, which records
    the run as failed and raises it again; and closes the loop however the driver leaves,
    calling ``leave`` first (a streaming driver hands over a reply it was reading). Closing
    this generator early closes the loop where it stands, and the run ends cancelled.
    """
    reply: Completion | StoppedReply | None = None
    try:
        while True:
            try:
                event = steps.send(reply)
            except StopIteration:
                return
            reply = None
            yield event
            if isinstance(event, ModelCallStarted):
                try:
                    reply = yield from within_run(steps, reply_to(event))
                except Exception as exc:
                    steps.throw(exc)  # the loop records the failure and raises it again
                    raise
    finally:
        if leave is not None:
            leave(steps)
        steps.close()


def events(steps: RunSteps, call_model: ModelCall) -> Iterator[RunEvent]:
    """Drive a run, yielding each of its events; each model call is ``call_model(messages, tools, **options)``."""

    def reply_to(call: ModelCallStarted) -> Generator[RunEvent, None, Completion]:
        return call_model(call.messages, call.tools, **call.options())
        yield  # a generator that yields nothing: the reply comes whole

    return drive(steps, reply_to)


def run_to_end(steps: RunSteps, call_model: ModelCall) -> RunResult:
    """The blocking driver: run until the run pauses or finishes; return what ``run()`` returns."""
    result: RunResult | None = None
    for event in events(steps, call_model):
        if isinstance(event, (RunPaused, RunFinished)):
            result = event.result
    if result is None:  # pragma: no cover - the loop always ends with one of them
        raise RuntimeError("the run loop ended without a result")
    return result
