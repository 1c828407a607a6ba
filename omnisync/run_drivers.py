"""The drivers of the run loop: :func:`drive`, every driver's side of its protocol, written once;
:func:`events` and the blocking :func:`run_to_end` on top of it. The streaming drivers
(``streaming.py``) use :func:`drive` too. A traced run's model call is answered in the run's
trace context (``telemetry``).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator

from .model.completion import Completion
from .results import RunResult
from .run_events import ModelCall, ModelCallStarted, ReplyTo, RunEvent, RunFinished, RunPaused, RunSteps, StoppedReply
from .telemetry import within_run


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
