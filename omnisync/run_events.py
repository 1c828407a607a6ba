"""What a run reports as it goes (the drivers that consume it are in ``run_drivers.py``).

The run loop (:meth:`omnisync.runner.Runner.start` and ``resume``) is a generator of these
events that makes every decision: call the model, run tools, pause, finish. It does not call
the model itself: it yields :class:`ModelCallStarted` and waits for the driver to send back
the :class:`~omnisync.model.completion.Completion` (or throw the model's error in). So a driver
chooses how the model is called: :func:`run_to_end` makes one blocking call per step, and a
streaming driver can stream the same request, pass on text as it arrives, and send back the
completion it assembled. Every driver shares the same decisions and the same saved state.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Union

from .model.completion import Completion
from .results import RunResult


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
