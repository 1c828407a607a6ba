"""The run loop: model calls, tool calls, pauses and resumes, every step saved in the store.

A run writes its user message together with the model's first reply, so a model error before
that leaves the session as it was. Each tool result is written as soon as the tool returns,
before the run record says so; a resumed run looks for results already in the session, so a
completed tool call is never repeated, even after a crash between those two writes.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from ._logging import logger
from .agent_config import AgentConfig
from .context import fit_context
from .approvals import load_run
from .errors import ModelError, RunConflictError, RunStateError
from .messages import Message, from_chat, utcnow
from .model.client import ChatClient, Completion
from .run_record import (
    AWAITING_APPROVAL,
    AWAITING_BUDGET,
    COMPLETED,
    FAILED,
    PAUSED_STATUSES,
    RUNNING,
    RunRecord,
)
from .stores.base import MemoryStore
from .tokens import TokenCounter, message_tokens
from .tools import ToolRegistry

_OWNER = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
_RUN_MESSAGES_PAGE = 64


def new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"


def new_session_id() -> str:
    return f"session_{secrets.token_urlsafe(18)}"


@dataclass
class RunContext:
    """What one execution of a run holds in memory while it goes."""

    record: RunRecord
    history: list[dict[str, Any]]  # messages of earlier runs, as loaded at the start
    history_tokens: list[int]  # their token counts, as stored
    current: list[dict[str, Any]]  # this run's messages, user message first
    unwritten: list[Message]  # this run's messages not yet in the store


class Runner:
    """Executes runs of one agent against its store and model."""

    def __init__(
        self,
        agent: str,
        system_instruction: str,
        config: AgentConfig,
        client: ChatClient,
        store: Callable[[], MemoryStore],
        tools: ToolRegistry,
        counter: TokenCounter,
    ) -> None:
        self.agent = agent
        self.system = {"role": "system", "content": system_instruction}
        self.config = config
        self.client = client
        self._store = store
        self.tools = tools
        self.counter = counter
        self._lock = threading.Lock()

    @property
    def store(self) -> MemoryStore:
        return self._store()

    # --- starting and resuming ---------------------------------------------------------

    def start(self, message: str, session_id: str) -> dict[str, Any]:
        store = self.store
        memory = self.config.memory
        window = store.window(self.agent, session_id, max_messages=memory.max_messages, max_tokens=memory.max_tokens)
        now = utcnow()
        record = RunRecord(
            run_id=new_run_id(),
            agent=self.agent,
            session_id=session_id,
            status=RUNNING,
            budget=dict(self.config.budget),
            loaded_seq=(window[0].seq, window[-1].seq) if window else None,  # type: ignore[arg-type]
            lease_owner=_OWNER,
            lease_until=now + timedelta(seconds=self.config.run_lease_seconds),
            created_at=now,
            updated_at=now,
        )
        record = store.save_run(record, expected_version=None)
        user = {"role": "user", "content": message}
        context = RunContext(
            record=record,
            history=[m.to_chat() for m in window],
            history_tokens=[m.tokens for m in window],
            current=[user],
            unwritten=[self._message(user, record.run_id)],
        )
        return self._loop(store, context)

    def resume(self, run_id: str) -> dict[str, Any]:
        store = self.store
        record = self.load(run_id)
        now = utcnow()
        if record.is_finished:
            raise RunStateError(f"run {run_id} is {record.status}; only a paused or abandoned run can be resumed")
        if record.status == RUNNING and record.lease_until and record.lease_until > now and record.lease_owner != _OWNER:
            raise RunConflictError(
                f"run {run_id} is being executed by another process (its lease runs until {record.lease_until.isoformat()}); "
                "resume it after that if that process died"
            )
        if record.status == AWAITING_APPROVAL:
            undecided = [c["id"] for c in record.pending_calls if self._needs_approval(c) and c["id"] not in record.decisions]
            if undecided:
                raise RunStateError(f"run {run_id} still waits for a decision on call(s) {', '.join(undecided)}: call resolve_approval first")
        claimed = record.evolve(
            status=RUNNING,
            budget_request=None,
            lease_owner=_OWNER,
            lease_until=now + timedelta(seconds=self.config.run_lease_seconds),
            updated_at=now,
        )
        record = store.save_run(claimed, expected_version=record.version)  # the loser of a race gets RunConflictError
        memory = self.config.memory
        own = self._run_messages(store, record)
        if not own:
            now = utcnow()
            store.save_run(
                record.evolve(status=FAILED, error="its process stopped before anything was written", finished_at=now, updated_at=now),
                expected_version=record.version,
            )
            raise RunStateError(
                f"run {run_id} stopped before it wrote anything, so its message is not in the store; run the message again"
            )
        first_written = own[0].seq
        window = store.window(
            self.agent,
            record.session_id,
            max_messages=memory.max_messages,
            max_tokens=memory.max_tokens,
            before_seq=first_written,
        )
        context = RunContext(
            record=record,
            history=[m.to_chat() for m in window],
            history_tokens=[m.tokens for m in window],
            current=[m.to_chat() for m in own],
            unwritten=[],
        )
        return self._loop(store, context)

    def load(self, run_id: str) -> RunRecord:
        return load_run(self.store, self.agent, run_id)

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

    def _loop(self, store: MemoryStore, context: RunContext) -> dict[str, Any]:
        try:
            return self._steps(store, context)
        except ModelError as exc:
            self._fail(store, context, exc)
            raise

    def _steps(self, store: MemoryStore, context: RunContext) -> dict[str, Any]:
        while True:
            pending = self._open_calls(context)
            if pending:
                paused = self._run_tools(store, context, pending)
                if paused is not None:
                    return paused
                continue
            if context.record.step >= self.config.max_steps:
                return self._finish(
                    store, context, FAILED, None, error=f"stopped after max_steps={self.config.max_steps} model calls without a final answer"
                )
            over = self._over_budget(context.record, "steps")
            if over:
                return self._pause_for_budget(store, context, over)
            completion = self._call_model(context)
            self._count_usage(context, completion)
            reply = completion.message()
            if completion.tool_calls and completion.content is None:
                reply["content"] = None
            context.current.append(reply)
            context.unwritten.append(self._message(reply, context.record.run_id))
            self._write(store, context)
            if not completion.tool_calls:
                return self._finish(store, context, COMPLETED, completion.content)
            context.record = self._save(store, context.record.evolve(pending_calls=completion.tool_calls, decisions={}))

    def _call_model(self, context: RunContext) -> Completion:
        messages = fit_context(
            self.system, context.history, context.current, self.config.context, self.counter, context.history_tokens
        )
        return self.client.complete(messages, tools=self.tools.schemas() or None)

    def _open_calls(self, context: RunContext) -> list[dict[str, Any]]:
        """Tool calls of the last assistant message that have no result yet."""
        for index in range(len(context.current) - 1, -1, -1):
            message = context.current[index]
            if message["role"] == "assistant":
                answered = {m.get("tool_call_id") for m in context.current[index + 1 :]}
                return [c for c in message.get("tool_calls") or [] if c["id"] not in answered]
        return []

    def _run_tools(self, store: MemoryStore, context: RunContext, calls: list[dict[str, Any]]) -> dict[str, Any] | None:
        awaiting = []
        for call in calls:
            decision = context.record.decisions.get(call["id"])
            if self._needs_approval(call) and decision is None:
                awaiting.append(call)
                continue
            if decision is not None and not decision.get("approved"):
                reason = f": {decision['reason']}" if decision.get("reason") else ""
                self._tool_result(store, context, call, f"The user denied this call to {call['function']['name']}{reason}.")
                continue
            over = self._over_budget(context.record, "tool_calls")
            if over:
                return self._pause_for_budget(store, context, over)
            tool = self.tools.get(call["function"]["name"])
            if tool is None:
                result = f"Error: there is no tool named {call['function']['name']!r}; available: {', '.join(self.tools.names()) or 'none'}."
            else:
                result = tool.call(call["function"].get("arguments") or "{}")
            self._tool_result(store, context, call, result)
            context.record = self._save(store, context.record.evolve(tool_calls_made=context.record.tool_calls_made + 1))
        if awaiting:
            return self._pause(store, context, AWAITING_APPROVAL, pending_calls=awaiting)
        return None

    def _tool_result(self, store: MemoryStore, context: RunContext, call: dict[str, Any], content: str) -> None:
        result = {"role": "tool", "tool_call_id": call["id"], "content": content}
        context.current.append(result)
        context.unwritten.append(self._message(result, context.record.run_id, name=call["function"]["name"]))
        self._write(store, context)

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

    def _pause_for_budget(self, store: MemoryStore, context: RunContext, request: dict[str, Any]) -> dict[str, Any]:
        return self._pause(store, context, AWAITING_BUDGET, budget_request=request)

    # --- saving ----------------------------------------------------------------------------

    def _message(self, chat: dict[str, Any], run_id: str, name: str | None = None) -> Message:
        message = from_chat(chat, run_id=run_id, tokens=message_tokens(self.counter, chat))
        return message if name is None else replace(message, name=name)

    def _write(self, store: MemoryStore, context: RunContext) -> None:
        written = store.append(self.agent, context.record.session_id, context.unwritten)
        context.unwritten = []
        if context.record.first_written_seq is None and written:
            # Saved with the record's next save, which always follows a write.
            context.record = context.record.evolve(first_written_seq=written[0].seq)

    def _save(self, store: MemoryStore, record: RunRecord) -> RunRecord:
        now = utcnow()
        renewed = record.evolve(updated_at=now, lease_until=now + timedelta(seconds=self.config.run_lease_seconds))
        return store.save_run(renewed, expected_version=record.version)

    def _count_usage(self, context: RunContext, completion: Completion) -> None:
        usage = dict(context.record.usage)
        for key, value in completion.usage.items():
            usage[key] = usage.get(key, 0) + value
        context.record = context.record.evolve(usage=usage, step=context.record.step + 1)

    def _pause(self, store: MemoryStore, context: RunContext, status: str, **changes: Any) -> dict[str, Any]:
        record = self._save(store, context.record.evolve(status=status, lease_owner=None, lease_until=None, **changes))
        context.record = record
        logger.info("run %s of agent %r paused: %s", record.run_id, self.agent, status)
        return result_of(record)

    def _finish(self, store: MemoryStore, context: RunContext, status: str, response: str | None, error: str | None = None) -> dict[str, Any]:
        now = utcnow()
        retention = self.config.run_retention_days
        record = context.record.evolve(
            status=status,
            response=response,
            error=error,
            pending_calls=[],
            lease_owner=None,
            lease_until=None,
            finished_at=now,
            expires_at=now + timedelta(days=retention) if retention is not None else None,
        )
        context.record = self._save(store, record)
        return result_of(context.record)

    def _fail(self, store: MemoryStore, context: RunContext, exc: Exception) -> None:
        try:
            self._finish(store, context, FAILED, None, error=f"{type(exc).__name__}: {exc}")
        except Exception as save_error:  # the model error is the one the caller needs to see
            logger.warning("could not mark run %s failed: %s", context.record.run_id, save_error)


def result_of(record: RunRecord) -> dict[str, Any]:
    """What run() and resume() return for a record."""
    result: dict[str, Any] = {
        "response": record.response,
        "session_id": record.session_id,
        "run_id": record.run_id,
        "status": record.status,
        "usage": dict(record.usage),
        "steps": record.step,
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
    return result
