"""OmniCoreAgent: a blocking agent that remembers each conversation in its memory store."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from collections.abc import Mapping, Sequence
from typing import Any, cast

from . import history_edit, idempotency, run_state
from ._logging import logger
from .agent_config import AgentConfig
from .agent_protocol import SessionSummary, SessionsPage
from .errors import ConfigurationError
from .model.client import ChatClient
from .messages import Message, from_chat
from .model.config import SAMPLING_OPTIONS, ModelConfig
from .model.extra_body import check_extra_body
from .prompt import PromptBuilder
from .output import OutputType
from .results import HistoryMessage, HistoryPage, Preview, RunRecordDict, RunResult, RunsPage, SessionUsage
from .router import MemoryRouter
from .search.hits import SearchHit
from .run_events import RunSteps
from .run_drivers import run_to_end
from .run_record import RUN_STATUSES, RunRecord
from .runner import ON_BUSY, Runner, new_session_id, result_of
from .content import Content, UserContent, check_content
from .storable import MAX_ID_LENGTH
from .streaming import AgentStream, streams
from .stores.base import MemoryStore, RunCursor, StoredEvent, run_cursor
from .summaries import Summarizer
from .tokens import TokenCounter, default_counter, message_tokens
from .tools import ToolRegistry
from .usage import session_usage

PRUNE_EVERY_SECONDS = 3600


class OmniCoreAgent:
    """An agent that answers ``run(message, session_id=...)`` and remembers each session.

    History is kept per agent ``name``: two agents sharing one store and one session id see
    only their own messages. With no ``memory_router`` the history lives in this process.
    """

    name: str
    system_instruction: str
    model_config: ModelConfig
    config: AgentConfig
    tools: ToolRegistry
    token_counter: TokenCounter

    def __init__(
        self,
        name: str,
        system_instruction: str,
        model_config: dict[str, Any] | ModelConfig,
        memory_router: MemoryRouter | None = None,
        agent_config: dict[str, Any] | None = None,
        local_tools: ToolRegistry | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.name = _check_name(name)
        if not isinstance(system_instruction, str):
            raise ConfigurationError(f"system_instruction must be a string, not {type(system_instruction).__name__}")
        if memory_router is not None and not isinstance(memory_router, MemoryRouter):
            raise ConfigurationError(f"memory_router must be a MemoryRouter, not {type(memory_router).__name__}")
        if local_tools is not None and not isinstance(local_tools, ToolRegistry):
            raise ConfigurationError(f"local_tools must be a ToolRegistry, not {type(local_tools).__name__}")
        if token_counter is not None and not callable(token_counter):
            raise ConfigurationError("token_counter must be a callable that takes a string and returns a token count")
        self.system_instruction = system_instruction
        self.model_config = ModelConfig.from_dict(model_config)
        self.config = AgentConfig.from_dict(agent_config)
        self.tools = local_tools or ToolRegistry()
        self.token_counter = token_counter or default_counter(self.model_config.model)
        self._router = memory_router or MemoryRouter("in_memory")
        self._owns_router = memory_router is None
        self._client = ChatClient(self.model_config)
        self._summarizer = Summarizer(self.name, self.config.memory, self._client, self._store, self.token_counter)
        self._summarizer.capture_content = self.config.capture_message_content
        self._prompt = PromptBuilder(system_instruction, self.config.memory, self.config.context, self.token_counter)
        self._runner = Runner(self.name, self._prompt, self.config, self._store, self.tools)
        self._pruned_at = 0.0
        self._prune_lock = threading.Lock()

    def _store(self) -> MemoryStore:
        return self._router.store

    # --- runs ------------------------------------------------------------------------------

    def run(
        self,
        message: UserContent | None,
        session_id: str | None = None,
        on_busy: str = "wait",
        output_type: Any = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Answer ``message`` in ``session_id`` (a new session when left out).

        ``message`` is a string or a list of content parts (text, ``image_url``, ``input_audio``,
        ``file``, as Chat Completions takes them), stored and sent again exactly as given; None
        continues ``session_id`` as it stands (the model answers its last messages, such as the
        results of tools the caller ran, see ``Tool.runs_on_client``).

        Returns ``response``, ``session_id``, ``run_id``, ``status`` and ``usage``; a run that
        pauses has ``response=None`` and ``approvals`` or a ``budget_request``. One run per
        session at a time: while another runs, this one waits up to ``session_wait_seconds``
        (``on_busy="wait"``) or at once (``"raise"``) raises SessionBusyError, as it does
        while a paused run holds the session.

        ``output_type`` (a JSON schema dict, a dataclass, a TypedDict or a pydantic model) asks
        the model for JSON of that shape (``response_format``) and puts the answer, read into
        it, under ``output``; an answer that does not fit raises OutputValidationError (the run
        is recorded failed, the answer kept in the session).

        ``extra_body`` adds a server's own options (llama.cpp's ``top_k``, vLLM's ``guided_json``)
        to this run's model calls, over model_config's ``extra_body``; it is kept in the run's
        record, so a resumed run sends them again. Names omnisync sets itself are refused.
        """
        steps = self._start(*self._checked_run_arguments(message, session_id, on_busy), _output(output_type), _extra_body(extra_body))
        result = run_to_end(steps, self._client.complete)
        self._after_run(result)
        return result

    @streams
    def stream(
        self,
        message: UserContent | None,
        session_id: str | None = None,
        on_busy: str = "wait",
        output_type: Any = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> AgentStream:
        """``run()``, streamed: iterate the result for events as they happen (no event loop needed).

        Yields ``RunStarted`` (its ``run_id``, also ``stream.run_id``) before the first model
        call, ``TextDelta`` as the reply is written, ``ToolCall`` once a call's arguments are
        complete, ``ToolResult``, then ``RunPaused`` or ``RunFinished`` carrying exactly what
        ``run()`` returns (also ``stream.result`` afterwards), or ``RunFailed`` before the error
        is raised. Stopping early keeps the text so far, marked partial, and cancels the run.
        The arguments are checked now; the run starts when iteration does.
        """
        content, session_id, on_busy = self._checked_run_arguments(message, session_id, on_busy)
        output = _output(output_type)
        extra = _extra_body(extra_body)
        return AgentStream(lambda: self._start(content, session_id, on_busy, output, extra), self._client, self._after_run, self._runner.on_cancel, self._stored_result)

    @streams
    def resume_stream(self, run_id: str, output_type: Any = None) -> AgentStream:
        """``resume()``, streamed, with the events of :meth:`stream`."""
        run_id = _check_run_id(run_id)
        output = _output(output_type)
        return AgentStream(lambda: self._runner.resume(run_id, output), self._client, self._after_run, self._runner.on_cancel, self._stored_result)

    def _checked_run_arguments(self, message: UserContent | None, session_id: str | None, on_busy: str) -> tuple[Content | None, str, str]:
        if message is None and session_id is None:
            raise ConfigurationError("message may be None only to continue a session: pass its session_id")
        content = None if message is None else check_content(message)
        if on_busy not in ON_BUSY:
            raise ConfigurationError(f"on_busy must be one of {', '.join(map(repr, ON_BUSY))}, not {on_busy!r}")
        session_id = new_session_id() if session_id is None else _check_session_id(session_id)
        return content, session_id, on_busy

    def _start(self, content: Content | None, session_id: str, on_busy: str, output: OutputType | None, extra_body: dict[str, Any] | None) -> RunSteps:
        if content is None and not self._store().latest(self.name, session_id, 1):
            raise ConfigurationError(f"message must be a string or a list of content parts: None continues a session, and {session_id!r} has no messages")
        self._summarizer.wait(session_id)
        return self._runner.start(content, session_id, on_busy, output, extra_body)

    def resume(self, run_id: str, output_type: Any = None) -> RunResult:
        """Continue a paused run (or one whose process died), from any process that reaches the store.

        A run started with an ``output_type`` keeps asking for its JSON schema; pass the same
        ``output_type`` again to have ``output`` read into it (else it is the parsed JSON).
        """
        run_id = _check_run_id(run_id)
        result = run_to_end(self._runner.resume(run_id, _output(output_type)), self._client.complete)
        self._after_run(result)
        return result

    def _stored_result(self, run_id: str) -> RunResult:
        return result_of(run_state.load(self._store(), self.name, run_id))

    def resolve_approval(self, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> RunResult:
        """Record the decision on one tool call of a run that awaits approval; then call ``resume``."""
        if not isinstance(approved, bool):
            raise ConfigurationError(f"approved must be True or False, not {approved!r}")
        saved = run_state.decide(self._store(), self.name, _check_run_id(run_id), call_id, approved, reason)
        return result_of(saved)

    def grant_budget(self, run_id: str, extra_tool_calls: int = 0, extra_tokens: int = 0, extra_steps: int = 0) -> RunResult:
        """Raise the limits of a run that awaits budget by these amounts; then call ``resume``."""
        saved = run_state.grant(
            self._store(),
            self.name,
            _check_run_id(run_id),
            extra_tool_calls=extra_tool_calls,
            extra_tokens=extra_tokens,
            extra_steps=extra_steps,
        )
        return result_of(saved)

    def cancel_run(self, run_id: str, reason: str | None = None) -> RunResult:
        """Stop a run, wherever it is driven; it frees its session.

        A paused run, or one whose driver died, ends cancelled at once. A running one, in this
        process or another, is asked to stop: its driver reads the request at its next step or
        streamed chunk (within about a second while it waits on the model), keeps the text
        received so far (marked partial) and ends it cancelled. This returns the ended run, or,
        if it still runs after a few seconds (a blocking model call that has not returned),
        its state with ``cancel_requested: True``. Tool calls that have no result yet are
        answered as not run, so the session stays valid for the model.
        """
        record = self._runner.cancel(_check_run_id(run_id), reason)
        result = result_of(record)
        if record.status == "running":
            result["cancel_requested"] = True
        return result

    def get_run(self, run_id: str) -> RunRecordDict:
        """The run's record as a dict."""
        return cast(RunRecordDict, run_state.load(self._store(), self.name, _check_run_id(run_id)).to_record())

    def list_runs(self, status: str | None = None, session_id: str | None = None) -> list[RunRecordDict]:
        """This agent's run records, oldest first (read a page at a time: :meth:`list_runs_page`)."""
        _check_run_filters(status, session_id)
        return [cast(RunRecordDict, r.to_record()) for r in run_state.list_runs(self._store(), self.name, status=status, session_id=session_id)]

    def list_runs_page(
        self, *, status: str | None = None, session_id: str | None = None, cursor: str | None = None, limit: int = 100
    ) -> RunsPage:
        """Up to ``limit`` of this agent's run records, oldest first, after ``cursor`` (None: from
        the start), and the ``next_cursor`` to pass for the page after this one (None on the last).

        One bounded read of the store per page on SQL (an index in run order), a bounded step at
        a time on Redis and MongoDB (see each store's ``runs_page``): page through many runs
        without holding them. A run started meanwhile shows on a later page; none shows twice.
        """
        _check_run_filters(status, session_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be a whole number of runs, at least 1, not {limit!r}")
        found = self._store().runs_page(self.name, _runs_cursor(cursor), limit + 1, status=status, session_id=session_id)
        page = found[:limit]
        next_cursor = _runs_cursor_of(page[-1]) if len(found) > limit else None
        return {"runs": [cast(RunRecordDict, r.to_record()) for r in page], "next_cursor": next_cursor}

    def get_session_usage(self, session_id: str) -> SessionUsage:
        """Every model call of the session's runs added up, summary calls included (see :mod:`omnisync.usage`).

        Waits for a pending summary first, so its usage is counted. Counts the run records the
        store still keeps (``run_retention_days``).
        """
        session_id = _check_session_id(session_id)
        self._summarizer.wait(session_id)
        runs = run_state.list_runs(self._store(), self.name, session_id=session_id)
        return cast(SessionUsage, session_usage((call for run in runs for call in run.model_calls), len(runs)))

    def prune_runs(self) -> int:
        """Delete this agent's finished run records older than ``run_retention_days``; return how many."""
        self._pruned_at = time.monotonic()
        return run_state.prune(self._store(), self.name, self.config.run_retention_days)

    def _after_run(self, result: RunResult) -> None:
        if result["status"] == "completed":
            self._summarizer.schedule(result["session_id"], result["run_id"])
        if not self._prune_due():
            return
        with self._prune_lock:
            if not self._prune_due():  # another thread pruned while this one waited
                return
            try:
                self.prune_runs()
            except Exception as exc:  # pruning is housekeeping; the run itself succeeded
                logger.warning("pruning old run records failed: %s", exc)

    def _prune_due(self) -> bool:
        return self._pruned_at == 0.0 or time.monotonic() - self._pruned_at > PRUNE_EVERY_SECONDS

    # --- memory ----------------------------------------------------------------------------

    def get_session_history(self, session_id: str, include_inactive: bool = False) -> list[HistoryMessage]:
        """The session's active messages, oldest first (with ``include_inactive``, every stored one)."""
        session_id = _check_session_id(session_id)
        self._summarizer.wait(session_id)
        messages = self._store().history(self.name, session_id, include_inactive=include_inactive)
        return [_history_entry(m, include_inactive) for m in messages]

    def get_session_history_page(
        self, session_id: str, *, cursor: str | None = None, limit: int = 100, include_inactive: bool = False
    ) -> HistoryPage:
        """Up to ``limit`` messages of the session, oldest first, after ``cursor`` (None: from the
        start), and the ``next_cursor`` to pass for the page after this one (None on the last).

        One bounded read however long the session is: page through a long history without
        holding it. A message appended meanwhile shows on a later page; none shows twice.
        """
        session_id = _check_session_id(session_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be a whole number of messages, at least 1, not {limit!r}")
        after = _history_cursor(cursor)
        self._summarizer.wait(session_id)
        messages = self._store().history_page(self.name, session_id, after, limit + 1, include_inactive=include_inactive)
        page = messages[:limit]
        next_cursor = str(page[-1].seq) if len(messages) > limit else None
        return {"messages": [_history_entry(m, include_inactive) for m in page], "next_cursor": next_cursor}

    def clear_session_history(self, session_id: str | None = None) -> int:
        """Forget one session, or with no id every session of this agent; return how many messages went.

        A run still going (or paused) in a session cleared is ended cancelled first, so nothing it
        would write afterwards lands in the cleared session; its driver stops with RunConflictError.
        """
        if session_id is not None:
            _check_session_id(session_id)
        self._summarizer.wait(session_id)
        return run_state.clear(self._store(), self.name, session_id, retention_days=self.config.run_retention_days)

    # --- editing and searching history (history_edit.py) ------------------------------------

    def fork_session(self, session_id: str, *, at: int | None = None, new_session_id: str | None = None) -> str:
        """A new session holding ``session_id``'s history up to and including the message with seq
        ``at`` (a ``seq`` of ``get_session_history(..., include_inactive=True)``; None: all of it),
        summaries and token counts included; return its id (``new_session_id``, or a fresh one).

        The source is untouched. Only committed turns are copied: never a message of a run still
        holding the source, never half a tool exchange (``at`` on a tool call or result is moved
        to the exchange's last result). ``at`` on an inactive message is refused.
        """
        session_id = _check_session_id(session_id)
        if new_session_id is not None:
            _check_session_id(new_session_id)
        self._summarizer.wait(session_id)
        return history_edit.fork(self._store(), self.name, session_id, at, new_session_id)

    def undo(self, session_id: str) -> list[HistoryMessage]:
        """Make the session's last run inactive (its user message, tool exchange and reply) and return those messages.

        They stay stored, shown by ``get_session_history(..., include_inactive=True)``. Refused
        with SessionBusyError while a run (running or paused) holds the session.
        """
        session_id = _check_session_id(session_id)
        self._summarizer.wait(session_id)
        return [_history_entry(m, True) for m in history_edit.undo(self._store(), self.name, session_id)]

    def add_messages(self, session_id: str, messages: Sequence[dict[str, Any]]) -> list[HistoryMessage]:
        """Write Chat Completions messages into the session outside any run (items a client adds to
        a conversation, a tool's result it ran itself); return them with their ``seq``. Their token
        counts are this agent's; refused with SessionBusyError while a run holds the session."""
        session_id = _check_session_id(session_id)
        if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)) or not all(isinstance(m, dict) for m in messages):
            raise ConfigurationError("messages must be a list of Chat Completions message dicts")
        for chat in messages:
            if chat.get("role") == "user":
                check_content(chat.get("content"))
        stored = [from_chat(chat, tokens=message_tokens(self.token_counter, chat)) for chat in messages]
        self._summarizer.wait(session_id)
        return [_history_entry(m, True) for m in history_edit.add_messages(self._store(), self.name, session_id, stored)] if stored else []

    def delete_message(self, session_id: str, seq: int) -> bool:
        """Delete the session's message at ``seq`` (a ``seq`` of ``get_session_history(..., include_inactive=True)``);
        whether there was one. Later messages keep their seqs; refused with SessionBusyError while a run holds the session."""
        session_id = _check_session_id(session_id)
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise ConfigurationError(f"seq must be a message's seq (a whole number), not {seq!r}")
        self._summarizer.wait(session_id)
        return history_edit.delete_message(self._store(), self.name, session_id, seq)

    def regenerate(self, session_id: str, on_busy: str = "raise", output_type: Any = None) -> RunResult:
        """Undo the session's last run, then run its user message again: a new run with its own
        record; the old reply stays inactive. ``on_busy`` and ``output_type`` as for :meth:`run`."""
        undone = self.undo(session_id)
        return self.run(cast(UserContent, undone[0]["content"]), session_id=session_id, on_busy=on_busy, output_type=output_type)

    def search_history(
        self,
        query: str,
        *,
        session_id: str | None = None,
        limit: int = 10,
        before: datetime | None = None,
        after: datetime | None = None,
    ) -> list[SearchHit]:
        """Full-text search of this agent's active messages (of one session, or all), best first.

        A hit holds every term of ``query`` (words, case and width folded; punctuation ignored);
        ``before``/``after`` bound the messages' write times. A query with no words finds nothing.
        The engine is the store's (docs/history.md): SQLite FTS5, PostgreSQL ``tsvector``,
        MongoDB's indexed terms, or a bounded scan (in process, Redis).
        """
        if session_id is not None:
            _check_session_id(session_id)
        return history_edit.search(self._store(), self.name, query, session_id, limit, before, after)

    def preview(self, session_id: str, message: UserContent | None = None) -> Preview:
        """What the next model call of ``session_id`` would be given, without calling the model."""
        session_id = _check_session_id(session_id)
        content = None if message is None else check_content(message)
        self._summarizer.wait(session_id)
        return cast(Preview, self._prompt.preview(self._store(), self.name, session_id, content))

    def get_memory_store_type(self) -> str:
        """The name of the backend this agent keeps its memory in (``"sql"``, ``"redis"``, ...)."""
        return self._router.kind

    def switch_memory_store(self, kind: str, url: str | None = None) -> None:
        """Use another backend from now on. Nothing is copied: the new store starts with what it holds."""
        new_router = MemoryRouter(kind, url=url)
        self._summarizer.wait()
        old, owned = self._router, self._owns_router
        self._router, self._owns_router = new_router, True
        if owned:
            old.close()

    @property
    def memory_router(self) -> MemoryRouter:
        """The router this agent reads and writes its sessions and run records through."""
        return self._router

    # --- lifecycle -------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Wait for pending summaries and release what this agent owns (not a router you passed in)."""
        self._summarizer.close()
        self._client.close()
        if self._owns_router:
            self._router.close()

    def __enter__(self) -> "OmniCoreAgent":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        return f"OmniCoreAgent(name={self.name!r}, model={self.model_config.model!r}, store={self._router.kind!r})"

    # --- for servers and other drivers over a wire: what they need, so none reaches into the store ---

    def list_sessions_page(self, *, cursor: str | None = None, limit: int = 100) -> SessionsPage:
        """Up to ``limit`` of this agent's sessions that hold messages, ordered by id, after
        ``cursor`` (None: from the start), and the ``next_cursor`` for the page after this one
        (None on the last). One bounded read of the store per page."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be a whole number of sessions, at least 1, not {limit!r}")
        after = (self.name, _check_session_id(cursor)) if cursor is not None else None
        found = self._store().sessions_page(self.name, after, limit + 1)
        page = found[:limit]
        sessions: list[SessionSummary] = [
            {"session_id": s.session_id, "message_count": s.message_count, "last_activity": s.last_activity.isoformat() if s.last_activity else None}
            for s in page
        ]
        return {"sessions": sessions, "next_cursor": page[-1].session_id if len(found) > limit else None}

    def check_store(self) -> None:
        """Raise StoreError unless this agent's store answers a read (a readiness probe)."""
        self._store().load_run(self.name, "readiness-probe")

    def append_run_events(self, run_id: str, events: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """Keep ``(name, data)`` events of a run (what a server streamed of it), as one write; return the last one's id."""
        return self._store().append_events(self.name, _check_run_id(run_id), events)

    def read_run_events(self, run_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """Up to ``limit`` (the store's page when None) events kept of the run, with ids above ``after``, in order."""
        store = self._store()
        run_id = _check_run_id(run_id)
        return store.read_events(self.name, run_id, after) if limit is None else store.read_events(self.name, run_id, after, limit)

    def claim_request_key(self, session_id: str, key: str, request_hash: str) -> str | None:
        """Take an idempotency ``key`` for a request that starts a run (see :mod:`omnisync.idempotency`):
        None when this request holds it and starts the run, the run's id when an earlier one did."""
        return idempotency.reserve(self._store(), self.name, _check_session_id(session_id), key, request_hash, self.config.run_lease_seconds)

    def bind_request_key(self, session_id: str, key: str, run_id: str) -> None:
        """The key's run started: later requests with the key get ``run_id``."""
        idempotency.bind(self._store(), self.name, _check_session_id(session_id), key, run_id, self.config.run_retention_days)

    def release_request_key(self, session_id: str, key: str, error: str) -> None:
        """The key's run did not start (``error`` says why): a retry may try again."""
        idempotency.release(self._store(), self.name, _check_session_id(session_id), key, error, self.config.run_retention_days)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_ID_LENGTH:
        raise ConfigurationError(f"name must be a non-empty string of at most {MAX_ID_LENGTH} characters, not {name!r}")
    return name


def _check_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id or len(session_id) > MAX_ID_LENGTH:
        raise ConfigurationError(
            f"session_id must be a non-empty string of at most {MAX_ID_LENGTH} characters, or None for a new session; "
            f"not {session_id!r}"
        )
    return session_id


def _output(output_type: Any) -> OutputType | None:
    if output_type is None or isinstance(output_type, OutputType):
        return output_type
    return OutputType.of(output_type)


def _extra_body(extra_body: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return check_extra_body(extra_body, SAMPLING_OPTIONS, where="run extra_body") or None


def _check_run_id(run_id: Any) -> str:
    if not isinstance(run_id, str) or not run_id:
        raise ConfigurationError(f"run_id must be the string a run returned, not {run_id!r}")
    return run_id


def _history_entry(message: Message, include_inactive: bool) -> HistoryMessage:
    if not include_inactive:
        return cast(HistoryMessage, message.to_chat())
    marks = {
        "status": message.status, "seq": message.seq, "summary": message.is_summary, "partial": bool(message.metadata.get("partial")), "run_id": message.run_id,
    }
    return cast(HistoryMessage, {**message.to_chat(), **marks})


def _check_run_filters(status: str | None, session_id: str | None) -> None:
    if status is not None and status not in RUN_STATUSES:
        raise ConfigurationError(f"Unknown run status: {status}. Use one of: {', '.join(RUN_STATUSES)}")
    if session_id is not None:
        _check_session_id(session_id)


def _runs_cursor_of(record: RunRecord) -> str:
    """A ``next_cursor`` of :meth:`OmniCoreAgent.list_runs_page`: the last run's creation time and id."""
    created_at, run_id = run_cursor(record)
    return f"{created_at.isoformat()}/{run_id}"


def _runs_cursor(cursor: str | None) -> RunCursor | None:
    """The place a ``next_cursor`` of :meth:`OmniCoreAgent.list_runs_page` names."""
    if cursor is None:
        return None
    created_at = None
    if isinstance(cursor, str):
        when, _, run_id = cursor.partition("/")
        try:
            created_at = datetime.fromisoformat(when) if run_id else None
        except ValueError:
            pass
    if created_at is None or created_at.tzinfo is None:
        raise ConfigurationError(f"cursor {cursor!r:.80} is not one this agent gave: pass the next_cursor of the previous page as it is")
    return created_at, run_id


def _history_cursor(cursor: str | None) -> int | None:
    """The seq a ``next_cursor`` of :meth:`OmniCoreAgent.get_session_history_page` names."""
    if cursor is None:
        return None
    if not isinstance(cursor, str) or not cursor.isdigit() or not cursor.isascii():
        raise ConfigurationError(f"cursor {cursor!r} is not one this agent gave: pass the next_cursor of the previous page as it is")
    return int(cursor)
