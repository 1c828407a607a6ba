"""The run loop: model calls, tool calls, pauses and resumes, every step saved in the store.

``start`` and ``resume`` return the loop as a generator of :mod:`omnisync.run_events`; a
driver there consumes it and makes the model calls it asks for. Record changes go through
:mod:`omnisync.run_state`, the messages of each call come from :mod:`omnisync.prompt`.

A run first takes its session (:func:`omnisync.run_state.take_session`): one run per session
at a time, in every process; a run whose process died holding it is closed first (its open
tool calls answered as not completed, its record failed). It writes its user message together
with the model's first reply, so a model error before that leaves the session as it was. Each
write of a run follows a compare-and-set save of its record that renews its lease, so a
process that lost its lease cannot write (a final reply written within half a lease of the
last save is covered by that save: nobody takes a run over before its lease runs out). Each
tool result is written as soon as the tool returns; a resumed run looks for results already
in the session, so a completed tool call is never repeated. Every way out of the loop ends
the record failed or cancelled.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, cast

from . import run_state
from ._logging import logger
from .agent_config import AgentConfig
from .content import Content
from .context import Priced
from .errors import BadRequestError, OmnisyncError, OutputValidationError, RunConflictError, RunStateError, SessionBusyError, StoreError
from .messages import Message, from_chat
from .model.completion import Completion
from .output import OutputType, refused
from .prompt import PromptBuilder
from .run_events import (
    ModelCallFinished,
    ModelCallStarted,
    RunEvent,
    RunFinished,
    RunPaused,
    RunStarted,
    RunSteps,
    StoppedReply,
    Text,
    ToolCall,
    ToolResult,
)
from .redact import redact_text
from .results import RunResult
from .run_record import AWAITING_APPROVAL, AWAITING_BUDGET, CANCELLED, COMPLETED, FAILED, PAUSED_STATUSES, RUNNING, RunRecord
from .run_state import KEEPER, Watch
from .storable import MAX_ID_LENGTH, storable_reply, storable_tool_result
from .stores.base import MemoryStore
from .telemetry import RunEventTypes, run_tool, traced_run, traced_wait
from .tools import ToolRegistry
from .usage import STEP, add_usage, counted_usage, model_call

_RUN_MESSAGES_PAGE = 64
_traced_run = traced_run(RunEventTypes(started=RunStarted, paused=RunPaused, finished=RunFinished))
_NO_OUTPUT = object()  # a run without an output_type: its result has no "output"
TRUNCATED = "length"  # the finish_reason of a reply cut off by the output limit
ON_BUSY = ("wait", "raise")
_FIRST_BUSY_PAUSE = 0.05
_LONGEST_BUSY_PAUSE = 1.0
ABANDONED_CALL = (
    "Error: this call's run stopped (its process ended) before the tool returned, so its result is unknown: "
    "the tool may or may not have taken effect."
)


def new_session_id() -> str:
    return f"session_{secrets.token_urlsafe(18)}"


@dataclass
class RunContext:
    """What one execution of a run holds in memory while it goes."""

    record: RunRecord
    history: list[Priced]  # messages of earlier runs, as loaded at the start
    current: list[Priced]  # this run's messages, user message first
    unwritten: list[Message]  # this run's messages not yet in the store
    leased_at: float = 0.0  # when (by Runner.clock) this driver last saved the record, renewing its lease
    output: OutputType | None = None  # what the final answer is read into, when the run has an output_type
    watch: Watch | None = None  # the keeper's view of this run: its cancel request, its lease renewals
    lock: threading.RLock = field(default_factory=threading.RLock)  # the driver's saves and the keeper's renewals, one at a time

    @property
    def cancelled(self) -> str | None:
        """The error a cancel request ends this run with, once one came (from any process)."""
        return self.watch.cancelled if self.watch is not None else None


class Runner:
    """Executes runs of one agent against its store; the model is called by the driver."""

    def __init__(
        self,
        agent: str,
        prompt: PromptBuilder,
        config: AgentConfig,
        store: Callable[[], MemoryStore],
        tools: ToolRegistry,
    ) -> None:
        self.agent = agent
        self.prompt = prompt
        self.config = config
        self._store = store
        self.tools = tools
        self.sleep: Callable[[float], None] = time.sleep  # between looks at a busy session
        self.clock: Callable[[], float] = time.monotonic  # how old a driver's lease on a run is
        self.cancel_wait_seconds: float = 5.0  # how long cancel() waits for a run driven elsewhere to stop

    @property
    def store(self) -> MemoryStore:
        return self._store()

    # --- starting and resuming ---------------------------------------------------------

    @_traced_run
    def start(
        self,
        message: Content | None,
        session_id: str,
        on_busy: str = "wait",
        output: OutputType | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> RunSteps:
        """Run ``message`` in ``session_id`` (None: the model answers the session as it stands, a continuation);
        ``extra_body`` (checked by the caller) goes into each of its model calls' bodies."""
        store = self.store
        run_id = run_state.new_run_id()
        token = run_state.new_token()
        opened = self._open_free_session(store, session_id, run_id, token, message, output, extra_body)
        if opened is None:
            self._take_session(store, session_id, run_id, on_busy)
            try:
                window = self.prompt.window(store, self.agent, session_id)
                record = run_state.create(store, self._new_record(session_id, run_id, token, message, window, output, extra_body))
            except BaseException:
                self._release_session(store, session_id, run_id)
                raise
        else:
            record, window = opened
        user = [self.prompt.price({"role": "user", "content": message})] if message is not None else []
        context = RunContext(
            record=record,
            history=self.prompt.earlier(window),
            current=user,
            unwritten=[self._message(priced, record.run_id) for priced in user],
            leased_at=self.clock(),
            output=output,
        )
        return (yield from self._loop(store, context, resumed=False))

    @_traced_run
    def resume(self, run_id: str, output: OutputType | None = None) -> RunSteps:
        """Continue a run; ``output`` replaces the output_type it started with (by default its stored schema, read as JSON)."""
        store = self.store
        held = run_state.load(store, self.agent, run_id)
        if not held.is_finished or run_state.holds_session(store, held):  # else claim says why it cannot resume
            self._take_session(store, held.session_id, run_id, "raise")
        record = run_state.claim(
            store,
            self.agent,
            run_id,
            token=run_state.new_token(),
            lease_seconds=self.config.run_lease_seconds,
            needs_approval=self._needs_approval,
        )
        own = self._run_messages(store, record)
        unwritten: list[Message] = []
        if own:
            window = self.prompt.window(store, self.agent, record.session_id, before_seq=own[0].seq)
            current = self.prompt.history(own)
        elif record.message is not None:  # its driver died before the run first wrote: start again from its message
            window = self.prompt.window(store, self.agent, record.session_id)
            user = self.prompt.price({"role": "user", "content": record.message})
            current, unwritten = [user], [self._message(user, run_id)]
        else:
            run_state.fail(store, record, "its process stopped before anything was written", retention_days=self.config.run_retention_days)
            raise RunStateError(f"run {run_id} stopped before it wrote anything, so its message is not in the store; run the message again")
        if output is not None:
            record = record.evolve(response_format=output.response_format)  # saved with the run's next save
        elif record.response_format:
            output = OutputType.stored(record.response_format)
        context = RunContext(
            record=record,
            history=self.prompt.earlier(window),
            current=current,
            unwritten=unwritten,
            leased_at=self.clock(),
            output=output,
        )
        return (yield from self._loop(store, context, resumed=True))

    # --- one run per session -------------------------------------------------------------

    def _open_free_session(
        self,
        store: MemoryStore,
        session_id: str,
        run_id: str,
        token: str,
        message: Content | None,
        output: OutputType | None,
        extra_body: dict[str, Any] | None,
    ) -> tuple[RunRecord, list[Message]] | None:
        """Take a free session and create the run's record with one read and one write.

        None when the session is not simply free (busy, paused, abandoned) or another run took
        it meanwhile: :meth:`_take_session` then waits, raises or closes the abandoned run.
        """
        memory = self.prompt.memory
        stored, holder, window = store.load_lease_and_window(
            self.agent, run_state.session_lease_id(session_id), session_id, max_messages=memory.max_messages, max_tokens=memory.max_tokens
        )
        lease = run_state.Lease.from_record(stored) if stored is not None else None
        try:
            wanted, abandoned = run_state.judge_session(lease, holder, self.agent, session_id, run_id, lease_seconds=self.config.run_lease_seconds)
        except SessionBusyError:
            return None
        if wanted is None or abandoned is not None:
            return None
        record = self._new_record(session_id, run_id, token, message, window, output, extra_body)
        try:
            saved = run_state.create_in_free_session(store, wanted, lease.version if lease is not None else None, record)
        except RunConflictError:
            return None
        except BaseException:
            self._release_session(store, session_id, run_id)
            raise
        return saved, window

    def _new_record(
        self,
        session_id: str,
        run_id: str,
        token: str,
        message: Content | None,
        window: list[Message],
        output: OutputType | None,
        extra_body: dict[str, Any] | None,
    ) -> RunRecord:
        return run_state.new_record(
            self.agent,
            session_id,
            token=token,
            message=message,
            budget=self.config.budget,
            loaded_seq=(window[0].seq, window[-1].seq) if window else None,  # type: ignore[arg-type]
            lease_seconds=self.config.run_lease_seconds,
            run_id=run_id,
            response_format=output.response_format if output else None,
            extra_body=extra_body or None,
        )

    @traced_wait
    def _take_session(self, store: MemoryStore, session_id: str, run_id: str, on_busy: str) -> None:
        """Make ``run_id`` the session's run, waiting for a busy one up to ``session_wait_seconds`` if asked."""
        waited_until = time.monotonic() + (self.config.session_wait_seconds if on_busy == "wait" else 0)
        pause = _FIRST_BUSY_PAUSE
        while True:
            try:
                abandoned = run_state.take_session(
                    store, self.agent, session_id, run_id, lease_seconds=self.config.run_lease_seconds
                )
            except (SessionBusyError, RunConflictError) as exc:
                left = waited_until - time.monotonic()
                if (isinstance(exc, SessionBusyError) and exc.paused) or left <= 0:
                    if isinstance(exc, SessionBusyError):
                        raise SessionBusyError(self._busy_advice(exc, waited=on_busy == "wait" and not exc.paused), run_id=exc.run_id, paused=exc.paused) from None
                    raise SessionBusyError(f"session {session_id!r} is busy: another run took it first") from exc
                self.sleep(min(pause, left))
                pause = min(pause * 2, _LONGEST_BUSY_PAUSE)
                continue
            if abandoned is None:
                return
            self._close_abandoned(store, abandoned, run_id)

    def _busy_advice(self, busy: SessionBusyError, *, waited: bool) -> str:
        """What a caller refused a busy session can do about it."""
        if busy.paused:
            return str(busy)
        waited_for = f" (waited {self.config.session_wait_seconds} s, the agent's session_wait_seconds)" if waited else ""
        return (
            f"{busy}{waited_for}; one run per session at a time: try again when run {busy.run_id} ends, stop it with "
            f"cancel_run({busy.run_id!r}), or raise session_wait_seconds in agent_config to wait longer"
        )

    def _release_session(self, store: MemoryStore, session_id: str, run_id: str) -> None:
        try:
            run_state.release_session(store, self.agent, session_id, run_id)
        except Exception as exc:  # the error that stopped the run is the one to raise; the lease runs out by itself
            logger.warning("could not give up session %r of run %s: %s", session_id, run_id, redact_text(str(exc)))

    def _close_abandoned(self, store: MemoryStore, abandoned: RunRecord, by_run: str) -> None:
        """End a run whose process died holding its session: answer its open tool calls, record it failed."""
        try:
            record = run_state.take_over(store, abandoned, self.config.run_lease_seconds, token=run_state.new_token())
        except (RunConflictError, RunStateError):
            return  # another process closes it, or it came back; the session is looked at again
        answered = self._answer_open_calls(store, record, ABANDONED_CALL)
        told = f"; its open tool call(s) {', '.join(answered)} were answered as not completed" if answered else ""
        logger.warning("run %s of agent %r was abandoned by its process; run %s closed it%s", record.run_id, self.agent, by_run, told)
        run_state.fail(
            store,
            record,
            f"abandoned: its process stopped while it ran (its lease ran out), and run {by_run} closed it{told}",
            retention_days=self.config.run_retention_days,
        )

    def cancel(self, run_id: str, reason: str | None = None) -> RunRecord:
        """Stop a run wherever it is: a paused run (or one whose driver died) ends cancelled here, its
        open tool calls answered as not run; a running one is asked to stop (a request its driver
        reads within a step, a streamed chunk or :data:`~omnisync.run_state.WATCH_SECONDS`, in
        whatever process), and its record is returned once it ended, or after
        ``cancel_wait_seconds`` still running (its cancel requested)."""
        store = self.store
        record = run_state.load(store, self.agent, run_id)
        try:
            record = run_state.take_over(store, record, self.config.run_lease_seconds, token=run_state.new_token())
        except RunConflictError:  # running, driven by a live driver somewhere
            return self._ask_to_stop(store, record, reason)
        because = f": {reason}" if reason else ""
        self._answer_open_calls(store, record, f"Error: this call did not run: its run was cancelled{because}.")
        return run_state.finish(
            store,
            record,
            CANCELLED,
            retention_days=self.config.run_retention_days,
            error=f"cancelled{because}",
        )

    def _ask_to_stop(self, store: MemoryStore, record: RunRecord, reason: str | None) -> RunRecord:
        run_state.request_cancel(store, self.agent, record.run_id, reason)
        here = KEEPER.find(record.run_id)
        if here is not None:  # driven in this process: no need to wait for the keeper's next look
            here.cancel(f"cancelled: {reason}" if reason else "cancelled")
        until = time.monotonic() + self.cancel_wait_seconds
        pause = _FIRST_BUSY_PAUSE
        while record.status == RUNNING and time.monotonic() < until:
            self.sleep(min(pause, max(until - time.monotonic(), 0)))
            pause = min(pause * 2, _LONGEST_BUSY_PAUSE / 2)
            record = run_state.load(store, self.agent, record.run_id)
        return record

    def _answer_open_calls(self, store: MemoryStore, record: RunRecord, answer: str) -> list[str]:
        """Write ``answer`` as the result of each tool call of the run that has none; return their ids.

        The caller has just taken the record over (the fence of these writes).
        """
        context = RunContext(record=record, history=[], current=self.prompt.history(self._run_messages(store, record)), unwritten=[])
        open_calls = self._open_calls(context)
        for call in open_calls:
            self._add(context, {"role": "tool", "tool_call_id": call["id"], "content": answer}, name=_tool_name(call))
        if context.unwritten:
            self._write(store, context)
        return [c["id"] for c in open_calls]

    def _run_messages(self, store: MemoryStore, record: RunRecord) -> list[Message]:
        """This run's messages already in the session, oldest first (a bounded backwards read).

        Stops at the run's first written seq; a record saved before it knew that seq (the
        process died right after its first write) stops at the first page with none of them.
        """
        found: list[Message] = []
        before: int | None = None
        while True:
            page = store.latest(self.agent, record.session_id, _RUN_MESSAGES_PAGE, before_seq=before)
            ours = [m for m in page if m.run_id == record.run_id]
            found.extend(m for m in ours if record.first_written_seq is None or m.seq >= record.first_written_seq)  # type: ignore[operator]
            reached_start = record.first_written_seq is not None and any(m.seq < record.first_written_seq for m in page)  # type: ignore[operator]
            if reached_start or len(page) < _RUN_MESSAGES_PAGE or (record.first_written_seq is None and not ours):
                return list(reversed(found))
            before = page[-1].seq

    # --- the loop ------------------------------------------------------------------------

    def _loop(self, store: MemoryStore, context: RunContext, resumed: bool) -> RunSteps:
        context.watch = self._watch(store, context)
        try:
            yield RunStarted(context.record.run_id, context.record.session_id, resumed)
            return (yield from self._steps(store, context))
        except GeneratorExit:
            self._end_early(store, context, CANCELLED, "cancelled: the caller stopped the run before it ended")
            raise
        except Exception as exc:
            partial = getattr(exc, "partial", None)  # a stream that broke: keep what it delivered, for inspection
            if isinstance(partial, Completion) and partial.content:
                context.record = context.record.evolve(partial_response=storable_reply(partial.message())["content"])
            self._end_early(store, context, FAILED, f"{type(exc).__name__}: {exc}")
            raise
        except BaseException as exc:  # KeyboardInterrupt, SystemExit
            self._end_early(store, context, FAILED, f"interrupted: {type(exc).__name__}")
            raise
        finally:
            KEEPER.remove(context.watch)

    def _watch(self, store: MemoryStore, context: RunContext) -> Watch:
        """Hand the run to this process's keeper: it reads the run's cancel request and renews its lease while it waits."""
        run_id = context.record.run_id
        watch = Watch(run_id, lambda: run_state.cancel_requested(store, self.agent, run_id), lambda: self._renew(store, context))
        KEEPER.add(watch)
        return watch

    def _renew(self, store: MemoryStore, context: RunContext) -> None:
        """The keeper's renewal: save the record once half its lease is gone, while the run is still this driver's and running."""
        with context.lock:
            if context.record.status == RUNNING and not self._lease_is_fresh(context):
                self._save(store, context, context.record)

    def on_cancel(self, run_id: str, interrupt: Callable[[], None]) -> None:
        """Call ``interrupt`` (a bound method, held weakly) when the run driven here is asked to stop."""
        watch = KEEPER.find(run_id)
        if watch is not None:
            watch.on_cancel(interrupt)

    def _steps(self, store: MemoryStore, context: RunContext) -> RunSteps:
        while True:
            if context.cancelled:
                return (yield from self._stop_as_asked(store, context, None))
            pending = self._open_calls(context)
            if pending:
                paused = yield from self._run_tools(store, context, pending)
                if paused is not None:
                    return paused
                continue
            if context.record.step >= self.config.max_steps:
                error = f"stopped after max_steps={self.config.max_steps} model calls without a final answer"
                return (yield from self._finish(store, context, FAILED, None, error=error))
            over = self._over_budget(context.record, "steps")
            if over:
                return (yield from self._pause(store, context, AWAITING_BUDGET, budget_request=over))
            step = context.record.step + 1
            prompt = self.prompt.build(context.history, context.current)
            response_format = context.output.response_format if context.output else None
            try:
                completion = yield ModelCallStarted(
                    context.record.run_id, step, prompt.messages, self.tools.schemas() or None, response_format, context.record.extra_body
                )
            except BadRequestError as exc:
                unsupported = refused(exc, response_format) if response_format else None
                if unsupported is None:
                    raise
                raise unsupported from exc
            if isinstance(completion, StoppedReply):
                return (yield from self._stop_with_partial_reply(store, context, completion.completion))
            if not isinstance(completion, Completion):
                raise TypeError(f"the run loop needs the Completion of its model call, not {completion!r}")
            if context.cancelled:  # asked to stop while the model answered: its text is kept, marked partial; no tool runs
                return (yield from self._stop_as_asked(store, context, completion))
            self._count_usage(context, completion, prompt.tokens)
            yield ModelCallFinished(context.record.run_id, step, completion)
            if completion.finish_reason == TRUNCATED:
                logger.warning(
                    "run %s of agent %r: the model's reply was cut off by its output limit (finish_reason 'length'); "
                    "raise max_tokens in model_config for whole answers",
                    context.record.run_id,
                    self.agent,
                )
            reply = storable_reply(completion.message())
            calls = reply.get("tool_calls") or []
            if calls:
                self._save(store, context, context.record.evolve(pending_calls=calls, decisions={}))
            elif not self._lease_is_fresh(context):  # a final reply after a long model call: renew before writing it
                self._save(store, context, context.record)
            self._add(context, reply)
            if not calls:  # the answer: written with the run's ending, in one go where the store can
                try:
                    output = self._read_output(context, reply["content"], completion) if context.output else _NO_OUTPUT
                except OutputValidationError:
                    self._write(store, context)  # the answer stays in the session; the run ends failed
                    raise
                return (yield from self._finish(store, context, COMPLETED, reply["content"], output=output))
            self._write(store, context)
            if reply["content"]:
                yield Text(context.record.run_id, reply["content"])
            for call in calls:
                yield ToolCall(context.record.run_id, call["id"], call["function"]["name"], call["function"]["arguments"])

    def _read_output(self, context: RunContext, text: str | None, completion: Completion) -> Any:
        """The final answer read into the run's output_type; the answer stays in the session either way."""
        assert context.output is not None
        try:
            return context.output.parse(text, context.record.run_id)
        except OutputValidationError as exc:
            if completion.finish_reason != TRUNCATED:
                raise
            raise OutputValidationError(
                f"{exc} (the answer was cut off by the model's output limit, finish_reason 'length': raise max_tokens)",
                text=exc.text,
                problems=exc.problems,
                run_id=exc.run_id,
            ) from None

    def _open_calls(self, context: RunContext) -> list[dict[str, Any]]:
        """Tool calls of the last assistant message that have no result yet."""
        for index in range(len(context.current) - 1, -1, -1):
            message = context.current[index].chat
            if message["role"] == "assistant":
                answered = {m.chat.get("tool_call_id") for m in context.current[index + 1 :]}
                return [c for c in message.get("tool_calls") or [] if c["id"] not in answered]
        return []

    def _run_tools(
        self, store: MemoryStore, context: RunContext, calls: list[dict[str, Any]]
    ) -> Generator[RunEvent, Any, RunResult | None]:
        awaiting, on_client = [], []
        for call in calls:
            if self._runs_on_client(call):
                on_client.append(call)
                continue
            decision = context.record.decisions.get(call["id"])
            if self._needs_approval(call) and decision is None:
                awaiting.append(call)
                continue
            if decision is not None and not decision.get("approved"):
                reason = f": {decision['reason']}" if decision.get("reason") else ""
                self._save(store, context, context.record)
                denied = storable_tool_result(f"The user denied this call to {call['function']['name']}{reason}.")
                yield self._tool_result(store, context, call, denied)
                continue
            over = self._over_budget(context.record, "tool_calls")
            if over:
                return (yield from self._pause(store, context, AWAITING_BUDGET, budget_request=over))
            if context.cancelled:
                return (yield from self._stop_as_asked(store, context, None))
            tool = self.tools.get(call["function"]["name"])
            if tool is None:
                result = f"Error: there is no tool named {call['function']['name']!r}; available: {', '.join(self.tools.names()) or 'none'}."
            else:
                result = run_tool(tool, call)
            self._save(store, context, context.record.evolve(tool_calls_made=context.record.tool_calls_made + 1))
            yield self._tool_result(store, context, call, storable_tool_result(result))
        if awaiting:
            return (yield from self._pause(store, context, AWAITING_APPROVAL, pending_calls=awaiting))
        if on_client:  # the caller runs these: the run ends, and their results come before the session's next run
            return (yield from self._finish(store, context, COMPLETED, None))
        return None

    def _tool_result(self, store: MemoryStore, context: RunContext, call: dict[str, Any], content: str) -> ToolResult:
        """Write a tool's result; the caller has just saved the record (the write's fence)."""
        self._add(context, {"role": "tool", "tool_call_id": call["id"], "content": content}, name=_tool_name(call))
        self._write(store, context)
        return ToolResult(context.record.run_id, call["id"], call["function"]["name"], content)

    def _runs_on_client(self, call: dict[str, Any]) -> bool:
        tool = self.tools.get(call["function"]["name"])
        return bool(tool and tool.runs_on_client)

    def _needs_approval(self, call: dict[str, Any]) -> bool:
        tool = self.tools.get(call["function"]["name"])
        return bool(tool and tool.requires_approval)

    # --- budgets -------------------------------------------------------------------------

    def _over_budget(self, record: RunRecord, about: str) -> dict[str, Any] | None:
        budget = record.budget
        checks = {
            "steps": [("max_steps", record.step), ("max_tokens", record.usage.get("total_tokens", 0))],
            "tool_calls": [("max_tool_calls", record.tool_calls_made), ("max_tokens", record.usage.get("total_tokens", 0))],
        }[about]
        for key, used in checks:
            limit = budget.get(key)
            if limit is not None and used >= limit:
                return {"limit": key, "used": used, "allowed": limit}
        return None

    # --- saving ----------------------------------------------------------------------------

    def _add(self, context: RunContext, chat: dict[str, Any], name: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        """A new message of this run, counted once, to be written with the next write."""
        priced = self.prompt.price(chat)
        context.current.append(priced)
        message = self._message(priced, context.record.run_id, name)
        context.unwritten.append(replace(message, metadata={**message.metadata, **metadata}) if metadata else message)

    def _message(self, priced: Priced, run_id: str, name: str | None = None) -> Message:
        message = from_chat(priced.chat, run_id=run_id, tokens=priced.tokens)
        return message if name is None else replace(message, name=name)

    def _write(self, store: MemoryStore, context: RunContext) -> None:
        with self._writing(store, context):
            written = store.append(self.agent, context.record.session_id, context.unwritten)
        context.unwritten = []
        if context.record.first_written_seq is None and written:
            # Saved with the record's next save, which always follows a write; the message is in the session now.
            context.record = context.record.evolve(first_written_seq=written[0].seq, message=None)

    @contextmanager
    def _writing(self, store: MemoryStore, context: RunContext) -> Iterator[None]:
        try:
            yield
        except OmnisyncError:
            raise
        except Exception as exc:  # a driver's own error: the run still ends with a typed one
            raise StoreError(f"the {store.kind} store could not write run {context.record.run_id}'s messages: {type(exc).__name__}: {exc}") from exc

    def _lease_is_fresh(self, context: RunContext) -> bool:
        """True while at least half the lease this process last took is left: nobody can have taken the run over.

        (Another process takes a run over only once its lease has run out.)
        """
        return self.clock() - context.leased_at < self.config.run_lease_seconds / 2

    def _save(self, store: MemoryStore, context: RunContext, record: RunRecord) -> None:
        """Save progress and renew the lease: the fence every write of the run follows."""
        saved_at = self.clock()
        with context.lock, self._fenced(store, record):
            context.record = run_state.save_progress(store, record.evolve(version=context.record.version), self.config.run_lease_seconds)
        context.leased_at = saved_at

    def _check_still_ours(self, store: MemoryStore, context: RunContext) -> None:
        """One read: the record is still the version this driver saved (where the last write and
        the record's save cannot be one step, the narrowest fence a store without transactions offers)."""
        with self._fenced(store, context.record):
            stored = store.load_run(self.agent, context.record.run_id)
            if stored is None or stored.version != context.record.version:
                raise RunConflictError(f"run {context.record.run_id} was changed by someone else (expected version {context.record.version})")

    @contextmanager
    def _fenced(self, store: MemoryStore, record: RunRecord) -> Iterator[None]:
        """A save of the run refused because another driver changed its record: say who and why."""
        try:
            yield
        except RunConflictError as exc:
            raise RunConflictError(
                f"run {record.run_id} lost its lease: another driver changed its record ({self._why_taken(store, record)}), "
                "so nothing more of it is written"
            ) from exc

    def _why_taken(self, store: MemoryStore, record: RunRecord) -> str:
        try:
            now = store.load_run(self.agent, record.run_id)
        except Exception:  # the conflict is the error to report
            now = None
        if now is not None and now.is_finished and now.error:
            return f"it ended the run: {now.error}"
        return f"it may have closed the run after its lease of run_lease_seconds={self.config.run_lease_seconds} ran out"

    def _count_usage(self, context: RunContext, completion: Completion, prompt_tokens: list[int] | None = None) -> None:
        """Add the call's usage to the record: the server's, else counted (see :func:`omnisync.usage.counted_usage`)."""
        usage = completion.usage
        if not usage:
            if prompt_tokens is None:
                prompt_tokens = self.prompt.build(context.history, context.current).tokens
            usage = counted_usage(usage, self.prompt.counter, prompt_tokens, completion.message(), self.tools.schemas())
        context.record = context.record.evolve(
            usage=add_usage(context.record.usage, usage),
            model_calls=[*context.record.model_calls, model_call(STEP, usage, completion.model)],
            step=context.record.step + 1,
            finish_reason=completion.finish_reason,
        )

    def _stop_with_partial_reply(self, store: MemoryStore, context: RunContext, partial: Completion) -> RunSteps:
        """The caller stopped a streamed reply: its text so far is the reply, marked partial; the run is cancelled."""
        self._count_usage(context, partial)
        text = storable_reply(Completion(content=partial.content).message())["content"] or None
        with context.lock:
            if text:
                if not self._lease_is_fresh(context):
                    self._save(store, context, context.record)
                self._add(context, {"role": "assistant", "content": text}, metadata={"partial": True})
                self._write(store, context)
            why = context.cancelled or "cancelled: the caller stopped the streamed reply"
            context.record = run_state.finish(
                store,
                context.record,
                CANCELLED,
                retention_days=self.config.run_retention_days,
                response=text,
                error=f"{why}; the text received so far is kept, marked partial" if text else why,
            )
        result = result_of(context.record)
        yield RunFinished(result)
        return result

    def _stop_as_asked(self, store: MemoryStore, context: RunContext, completion: Completion | None) -> RunSteps:
        """A cancel request came: keep the text of a reply that came meanwhile (marked partial, its
        tool calls dropped), answer the run's open tool calls as not run, and end it cancelled."""
        if completion is not None:
            return (yield from self._stop_with_partial_reply(store, context, completion))
        with context.lock:
            if not self._lease_is_fresh(context):
                self._save(store, context, context.record)
            for call in self._open_calls(context):
                self._add(context, {"role": "tool", "tool_call_id": call["id"], "content": "Error: this call did not run: its run was cancelled."}, name=_tool_name(call))
            if context.record.first_written_seq is None:
                context.unwritten = []  # nothing of the run is in the session yet: it stays as it was
            if context.unwritten:
                self._write(store, context)
            context.record = run_state.finish(store, context.record, CANCELLED, retention_days=self.config.run_retention_days, error=context.cancelled)
        result = result_of(context.record)
        yield RunFinished(result)
        return result

    def _pause(self, store: MemoryStore, context: RunContext, status: str, **changes: Any) -> RunSteps:
        with context.lock:
            context.record = run_state.pause(store, context.record, status, **changes)
        logger.info("run %s of agent %r paused: %s", context.record.run_id, self.agent, status)
        result = result_of(context.record)
        yield RunPaused(result)
        return result

    def _finish(
        self, store: MemoryStore, context: RunContext, status: str, response: str | None, error: str | None = None, output: Any = _NO_OUTPUT
    ) -> RunSteps:
        """End the run; messages not written yet are written with its ending."""
        written = bool(context.unwritten)
        with context.lock:
            if written:
                if not store.writes_run_atomically:  # a run someone else ended (a clear, a take-over) writes nothing
                    self._check_still_ours(store, context)
                with self._writing(store, context), self._fenced(store, context.record):
                    _, context.record = run_state.finish_with_messages(
                        store, context.record, context.unwritten, status, retention_days=self.config.run_retention_days, response=response, error=error
                    )
                context.unwritten = []
            else:
                context.record = run_state.finish(
                    store, context.record, status, retention_days=self.config.run_retention_days, response=response, error=error
                )
        if written and response:
            yield Text(context.record.run_id, response)
        result = result_of(context.record)
        if output is not _NO_OUTPUT:
            result["output"] = output
        yield RunFinished(result)
        return result

    def _end_early(self, store: MemoryStore, context: RunContext, status: str, error: str) -> None:
        """End a run that stops on an error (failed) or is closed by its driver (cancelled)."""
        if context.record.is_finished or context.record.status in PAUSED_STATUSES:
            return
        try:
            with context.lock:
                context.record = run_state.finish(
                    store, context.record, status, retention_days=self.config.run_retention_days, error=redact_text(error)
                )
        except Exception as save_error:  # the run's own error is the one the caller needs to see
            logger.warning("could not mark run %s %s: %s", context.record.run_id, status, redact_text(str(save_error)))


def _tool_name(call: dict[str, Any]) -> str | None:
    """The name a tool result is stored with (a name too long for a store's column is left out)."""
    name: str = call["function"]["name"]
    return name if len(name) <= MAX_ID_LENGTH else None


def result_of(record: RunRecord) -> RunResult:
    """What run() and resume() return for a record."""
    result: dict[str, Any] = {
        "response": record.response,
        "session_id": record.session_id,
        "run_id": record.run_id,
        "status": record.status,
        "usage": dict(record.usage),
        "steps": record.step,
        "truncated": record.finish_reason == TRUNCATED,
    }
    if record.status == AWAITING_APPROVAL:
        result["approvals"] = [
            {"id": c["id"], "tool": c["function"]["name"], "arguments": c["function"].get("arguments") or "{}"}
            for c in record.pending_calls
            if c["id"] not in record.decisions
        ]
    if record.status == AWAITING_BUDGET:
        result["budget_request"] = record.budget_request
    if record.error:
        result["error"] = record.error
    if record.status in PAUSED_STATUSES:
        result["response"] = None
    return cast(RunResult, result)
