"""OmniCoreAgent: a blocking agent that remembers each conversation in its memory store."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

from ._logging import logger
from .agent_config import AgentConfig
from .approvals import record_decision
from .context import fit_context
from .errors import ConfigurationError, RunStateError
from .messages import utcnow
from .model.client import ChatClient
from .model.config import ModelConfig
from .router import MemoryRouter
from .run_record import AWAITING_BUDGET, RUN_STATUSES
from .runner import Runner, new_session_id, result_of
from .stores.base import MemoryStore
from .summaries import Summarizer
from .tokens import TokenCounter, default_counter, message_tokens
from .tools import ToolRegistry

MAX_ID_LENGTH = 255
PRUNE_EVERY_SECONDS = 3600


class OmniCoreAgent:
    """An agent that answers ``run(message, session_id=...)`` and remembers each session.

    History is kept per agent ``name``: two agents sharing one store and one session id see
    only their own messages. With no ``memory_router`` the history lives in this process.
    """

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
        self._runner = Runner(
            self.name, system_instruction, self.config, self._client, self._store, self.tools, self.token_counter
        )
        self._pruned_at = 0.0
        self._prune_lock = threading.Lock()

    def _store(self) -> MemoryStore:
        return self._router.store

    # --- runs ------------------------------------------------------------------------------

    def run(self, message: str, session_id: str | None = None) -> dict[str, Any]:
        """Answer ``message`` in ``session_id`` (a new session when left out).

        Returns ``response``, ``session_id``, ``run_id``, ``status`` and ``usage``; a run that
        pauses has ``response=None`` and ``approvals`` or a ``budget_request``.
        """
        if not isinstance(message, str):
            raise ConfigurationError(f"message must be a string, not {type(message).__name__}")
        session_id = new_session_id() if session_id is None else _check_session_id(session_id)
        self._summarizer.wait(session_id)
        result = self._runner.start(message, session_id)
        self._after_run(result)
        return result

    def resume(self, run_id: str) -> dict[str, Any]:
        """Continue a paused run (or one whose process died), from any process that reaches the store."""
        result = self._runner.resume(_check_run_id(run_id))
        self._after_run(result)
        return result

    def resolve_approval(self, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> dict[str, Any]:
        """Record the decision on one tool call of a run that awaits approval; then call ``resume``."""
        if not isinstance(approved, bool):
            raise ConfigurationError(f"approved must be True or False, not {approved!r}")
        saved = record_decision(self._store(), self.name, _check_run_id(run_id), call_id, approved, reason)
        return result_of(saved)

    def grant_budget(self, run_id: str, extra_tool_calls: int = 0, extra_tokens: int = 0, extra_steps: int = 0) -> dict[str, Any]:
        """Raise the limits of a run that awaits budget by these amounts; then call ``resume``."""
        extras = {"max_tool_calls": extra_tool_calls, "max_tokens": extra_tokens, "max_steps": extra_steps}
        for key, value in extras.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"grant_budget amounts must be whole numbers of at least 0, not {value!r}")
        if not any(extras.values()):
            raise ConfigurationError("grant_budget needs at least one of extra_tool_calls, extra_tokens, extra_steps")
        record = self._runner.load(_check_run_id(run_id))
        if record.status != AWAITING_BUDGET:
            raise RunStateError(f"run {run_id} is {record.status}, not awaiting_budget")
        budget = dict(record.budget)
        for key, extra in extras.items():
            if extra and budget.get(key) is not None:
                budget[key] = budget[key] + extra  # type: ignore[operator]
        saved = self._store().save_run(record.evolve(budget=budget, updated_at=utcnow()), expected_version=record.version)
        return result_of(saved)

    def get_run(self, run_id: str) -> dict[str, Any]:
        """The run's record as a dict."""
        return self._runner.load(_check_run_id(run_id)).to_record()

    def list_runs(self, status: str | None = None, session_id: str | None = None) -> list[dict[str, Any]]:
        """This agent's run records, oldest first."""
        if status is not None and status not in RUN_STATUSES:
            raise ConfigurationError(f"Unknown run status: {status}. Use one of: {', '.join(RUN_STATUSES)}")
        if session_id is not None:
            _check_session_id(session_id)
        return [r.to_record() for r in self._store().list_runs(self.name, status=status, session_id=session_id)]

    def prune_runs(self) -> int:
        """Delete this agent's finished run records older than ``run_retention_days``; return how many."""
        days = self.config.run_retention_days
        self._pruned_at = time.monotonic()
        if days is None:
            return 0
        return self._store().prune_runs(self.name, utcnow() - timedelta(days=days))

    def _after_run(self, result: dict[str, Any]) -> None:
        if result["status"] == "completed":
            self._summarizer.schedule(result["session_id"])
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

    def get_session_history(self, session_id: str, include_inactive: bool = False) -> list[dict[str, Any]]:
        """The session's active messages, oldest first (with ``include_inactive``, every stored one)."""
        session_id = _check_session_id(session_id)
        self._summarizer.wait(session_id)
        messages = self._store().history(self.name, session_id, include_inactive=include_inactive)
        if not include_inactive:
            return [m.to_chat() for m in messages]
        return [{**m.to_chat(), "status": m.status, "seq": m.seq, "summary": m.is_summary} for m in messages]

    def clear_session_history(self, session_id: str | None = None) -> int:
        """Forget one session, or with no id every session of this agent; return how many messages went."""
        if session_id is not None:
            _check_session_id(session_id)
        self._summarizer.wait(session_id)
        return self._store().clear(self.name, session_id)

    def preview(self, session_id: str, message: str | None = None) -> dict[str, Any]:
        """What the next model call of ``session_id`` would be given, without calling the model."""
        session_id = _check_session_id(session_id)
        self._summarizer.wait(session_id)
        memory = self.config.memory
        window = self._store().window(self.name, session_id, max_messages=memory.max_messages, max_tokens=memory.max_tokens)
        current = [{"role": "user", "content": message}] if message is not None else []
        system = {"role": "system", "content": self.system_instruction}
        history = [m.to_chat() for m in window]
        stored = [m.tokens for m in window]
        messages = fit_context(system, history, current, self.config.context, self.token_counter, stored)
        known = {id(chat): count for chat, count in zip(history, stored)}
        tokens = [known.get(id(m)) or message_tokens(self.token_counter, m) for m in messages]
        return {
            "messages": messages,
            "tokens": tokens,
            "total_tokens": sum(tokens),
            "window": {"mode": memory.mode, "value": memory.value, "messages": len(window)},
            "summary": next((m.content for m in window if m.is_summary), None),
        }

    def get_memory_store_type(self) -> str:
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


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_ID_LENGTH or "#" in name:
        raise ConfigurationError(
            f"name must be a non-empty string of at most {MAX_ID_LENGTH} characters without '#', not {name!r}"
        )
    return name


def _check_session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id or len(session_id) > MAX_ID_LENGTH:
        raise ConfigurationError(
            f"session_id must be a non-empty string of at most {MAX_ID_LENGTH} characters, or None for a new session; "
            f"not {session_id!r}"
        )
    return session_id


def _check_run_id(run_id: Any) -> str:
    if not isinstance(run_id, str) or not run_id:
        raise ConfigurationError(f"run_id must be the string a run returned, not {run_id!r}")
    return run_id
