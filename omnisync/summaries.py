"""Summaries: what falls out of the window is folded into one [CONVERSATION SUMMARY] message.

After a run is stored, if the session's active history is longer than the window, its oldest
messages (an earlier summary among them) are folded so that summary plus the most recent
messages fill the window. The fold runs off the caller's thread; the next run of the session,
``get_session_history`` and ``cleanup()`` wait for it. One process folds a given range: it
claims the range with a record in the store first, so two processes never both pay for the
model call, and the store's compare-and-set makes sure only one summary is ever written.
A summary the model did not finish (cut off by its output limit) or left empty is a failed
summary: nothing changes, a warning is logged, and the next run tries again. A summary call
is sent the agent's sampling, but none of the run's output settings (``SUMMARY_DROPS``): a summary
is plain text under its own limit, ``memory_config["summary"]["max_tokens"]`` (512 unless set;
sent as ``max_completion_tokens`` when the agent's model_config uses that field), with its own
``model`` and ``instructions`` when they are set.

Each summary call's usage, a failed summary's too, is added to the ``model_calls`` of the run
whose end scheduled the fold (kind ``"summary"``), so a session's run records add up to all
it cost; a fold nobody's run scheduled (``fold`` called directly) records none.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from . import run_state
from ._logging import logger
from .content import describe
from .errors import OmnisyncError
from .memory_config import MemoryConfig
from .messages import SUMMARY_PREFIX, Message
from .model.client import ChatClient
from .model.completion import Completion
from .stores.base import MemoryStore
from .telemetry import summarizing
from .tokens import TokenCounter, message_tokens
from .usage import SUMMARY, counted_usage, model_call

FOLD_MAX_MESSAGES = 400
SUMMARY_DROPS = ("response_format", "max_tokens", "max_completion_tokens", "stop")
SUMMARY_INSTRUCTION = (
    "You write the running summary of a conversation between a user and an assistant. "
    "Summarize the conversation below in a few sentences of plain text. Keep every fact the "
    "assistant may need later: names, numbers, dates, decisions, preferences and open questions. "
    "If it starts with an earlier summary, fold that summary in."
)


class Summarizer:
    """Folds old messages of one agent's sessions in the background."""

    capture_content = False  # the agent's capture_message_content: its summaries' spans may carry messages

    def __init__(
        self,
        agent: str,
        config: MemoryConfig,
        client: ChatClient,
        store: Callable[[], MemoryStore],
        counter: TokenCounter,
    ) -> None:
        self.agent = agent
        self.config = config
        self.client = client
        self._store = store
        self.counter = counter
        self._executor: ThreadPoolExecutor | None = None
        self._pending: dict[str, Future[None]] = {}
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.config.summary_enabled

    @property
    def model(self) -> str:
        return self.config.summary_model or self.client.config.model

    def schedule(self, session_id: str, run_id: str | None = None) -> None:
        """Fold ``session_id`` in the background if its history has outgrown the window; ``run_id`` pays for it."""
        if not self.enabled:
            return
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"omnisync-summary-{self.agent}")
            previous = self._pending.get(session_id)
            store = self._store()
            self._pending[session_id] = self._executor.submit(self._fold_after, previous, store, session_id, run_id)

    def wait(self, session_id: str | None = None) -> None:
        """Block until the pending fold of one session (or of every session) is done."""
        with self._lock:
            futures = list(self._pending.values()) if session_id is None else [self._pending.get(session_id)]
        for future in futures:
            if future is not None:
                future.result()
        with self._lock:
            for key, future in list(self._pending.items()):
                if future.done():
                    del self._pending[key]

    def close(self) -> None:
        self.wait()
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _fold_after(self, previous: Future[None] | None, store: MemoryStore, session_id: str, run_id: str | None) -> None:
        if previous is not None:
            previous.result()
        try:
            with summarizing(self.agent, session_id, run_id, capture_content=self.capture_content, run_trace=lambda: self._trace_of(store, run_id)):
                self.fold(store, session_id, run_id)
        except Exception as exc:  # a failed summary changes nothing; the next run tries again
            logger.warning("summary of session %r for agent %r failed, nothing changed: %s", session_id, self.agent, exc)

    def _trace_of(self, store: MemoryStore, run_id: str | None) -> str | None:
        record = store.load_run(self.agent, run_id) if run_id is not None else None
        return record.trace_parent if record is not None else None

    # --- the fold itself --------------------------------------------------------------

    def plan(self, store: MemoryStore, session_id: str) -> list[Message]:
        """The oldest active messages to fold now (empty when the history fits the window)."""
        boundary = self._keep_boundary(store, session_id)
        if boundary is None:
            return []
        older = list(reversed(store.latest(self.agent, session_id, FOLD_MAX_MESSAGES + 1, before_seq=boundary)))
        if len(older) > FOLD_MAX_MESSAGES:
            older = store.history(self.agent, session_id)[:FOLD_MAX_MESSAGES]
        while older and older[-1].is_summary:
            older.pop()
        if not any(not m.is_summary for m in older):
            return []
        return older

    def _keep_boundary(self, store: MemoryStore, session_id: str) -> int | None:
        """The seq of the oldest message to keep, or None if nothing overflows the window."""
        if self.config.mode == "sliding_window":
            recent = store.latest(self.agent, session_id, self.config.value + 1)
            if len(recent) <= self.config.value:
                return None
            keep = list(reversed(recent[: self.config.value - 1]))
        else:
            reserve = max(1, min(self.config.value // 4, 1000))
            fits = store.window(self.agent, session_id, max_tokens=self.config.value)
            if not fits or not store.latest(self.agent, session_id, 1, before_seq=fits[0].seq):
                return None
            keep = []
            spent = 0
            for message in reversed(fits):
                spent += max(message.tokens, 1)
                if spent > self.config.value - reserve:
                    break
                keep.insert(0, message)
            keep = keep or fits[-1:]
        while keep and keep[0].is_tool_result:  # fold the results with their call
            keep.pop(0)
        if not keep:
            newest = store.latest(self.agent, session_id, 1)
            return newest[0].seq + 1 if newest else None  # type: ignore[operator]
        return keep[0].seq

    def fold(self, store: MemoryStore, session_id: str, run_id: str | None = None) -> Message | None:
        folded = self.plan(store, session_id)
        if not folded:
            return None
        first, last = folded[0].seq, folded[-1].seq
        claim = run_state.claim_fold(store, self.agent, session_id, first, last)  # type: ignore[arg-type]
        if claim is None:
            return None
        try:
            text = self._summarize(folded, store, run_id)
            content = f"{SUMMARY_PREFIX} {text}"
            summary = Message(
                role="user",
                content=content,
                metadata={"summary": {"first_seq": first, "last_seq": last, "folded": len(folded), "model": self.model}},
                tokens=message_tokens(self.counter, {"role": "user", "content": content}),
            )
            written = store.fold(
                self.agent,
                session_id,
                summary,
                first_seq=first,  # type: ignore[arg-type]
                last_seq=last,  # type: ignore[arg-type]
                expected_count=len(folded),
                delete=self.config.retention_policy == "delete",
            )
        except Exception as exc:
            self._end_claim(store, claim, str(exc))
            raise
        self._end_claim(store, claim, None)
        return written

    def _summarize(self, folded: list[Message], store: MemoryStore, run_id: str | None) -> str:
        transcript = "\n".join(_transcript_line(m) for m in folded)
        messages = [{"role": "system", "content": self.config.summary_instructions or SUMMARY_INSTRUCTION}, {"role": "user", "content": transcript}]
        completion = self.client.complete(
            messages, sampling=summary_sampling(self.client.config.sampling, self.config.summary_max_tokens), model=self.model
        )
        self._count_usage(store, run_id, completion, messages)
        if completion.finish_reason == "length":
            raise OmnisyncError("the summary was cut off by the model's output limit (finish_reason 'length')")
        text = (completion.content or "").strip().removeprefix(SUMMARY_PREFIX).strip()
        if not text:
            raise OmnisyncError("the model returned an empty summary")
        return text

    def _count_usage(self, store: MemoryStore, run_id: str | None, completion: Completion, messages: list[dict[str, Any]]) -> None:
        if run_id is None:
            return
        prompt_tokens = [] if completion.usage else [message_tokens(self.counter, m) for m in messages]
        usage = counted_usage(completion.usage, self.counter, prompt_tokens, completion.message())
        try:
            run_state.add_model_call(store, self.agent, run_id, model_call(SUMMARY, usage, completion.model))
        except OmnisyncError as exc:  # the summary itself is good; only its accounting is lost
            logger.warning("could not add a summary's usage to run %s: %s", run_id, exc)

    def _end_claim(self, store: MemoryStore, claim: run_state.Lease, error: str | None) -> None:
        try:
            run_state.end_fold(store, claim, error)
        except OmnisyncError as exc:
            logger.warning("could not record the end of a summary claim: %s", exc)


def summary_sampling(sampling: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """The agent's sampling options without the ones that shape a run's answer, and the summary's own limit."""
    limit = "max_completion_tokens" if "max_completion_tokens" in sampling else "max_tokens"
    kept = {key: value for key, value in sampling.items() if key not in SUMMARY_DROPS}
    return {**kept, limit: max_tokens}


def _transcript_line(message: Message) -> str:
    if message.tool_calls:
        calls = ", ".join(f"{c['function']['name']}({c['function'].get('arguments', '')})" for c in message.tool_calls)
        return f"assistant called: {calls}"
    if message.role == "tool":
        return f"tool result: {message.content}"
    return f"{message.role}: {describe(message.content)}"
