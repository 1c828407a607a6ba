"""What the agent's methods return: plain dicts at run time, exact shapes for type checkers.

Each dict is a ``TypedDict``, so an editor completes ``result["response"]`` and
``mypy --strict`` knows it is ``str | None``. Keys marked "optional" below appear only when
the note says so (Python 3.10 has no ``NotRequired``, hence the split base classes).
tests/runs/test_result_types.py compares real results with these declarations.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from .content import ContentPart

__all__ = [
    "ApprovalRequest",
    "BudgetRequest",
    "ChatMessage",
    "HistoryMessage",
    "ModelCallUsage",
    "Preview",
    "PreviewWindow",
    "RunRecordDict",
    "RunResult",
    "RunStatus",
    "SessionUsage",
    "Usage",
]

RunStatus = Literal["running", "awaiting_approval", "awaiting_budget", "completed", "failed", "cancelled"]


class Usage(TypedDict, total=False):
    """Tokens used, summed; a key is missing when the server never reported it.

    The ``*_details`` objects are the server's breakdowns (``cached_tokens``,
    ``reasoning_tokens``...), field by field as it sent them. ``estimated`` is True when the
    server sent no usage for a call and omnisync counted it with the agent's token counter.
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: dict[str, int]
    completion_tokens_details: dict[str, int]
    estimated: bool


class _ModelCallUsageKeys(TypedDict):
    kind: Literal["step", "summary"]
    usage: Usage


class ModelCallUsage(_ModelCallUsageKeys, total=False):
    """One model call on a run record: a ``"step"`` of the run, or a ``"summary"`` its end led to.

    Optional: ``model``, the model the server said answered.
    """

    model: str


class SessionUsage(TypedDict):
    """What ``get_session_usage`` returns: every model call of a session's runs, added up.

    ``usage`` is the total, summaries included; ``by_kind`` splits it into ``"step"`` and
    ``"summary"``; ``model_calls`` counts the calls of each kind; ``runs`` counts the run records.
    """

    usage: Usage
    by_kind: dict[Literal["step", "summary"], Usage]
    model_calls: dict[Literal["step", "summary"], int]
    runs: int


class ApprovalRequest(TypedDict):
    """A tool call that waits for ``resolve_approval``; ``arguments`` is the model's JSON text."""

    id: str
    tool: str
    arguments: str


class BudgetRequest(TypedDict):
    """The limit a paused run reached: ``used`` of ``allowed`` for ``limit`` (e.g. ``"max_tool_calls"``)."""

    limit: str
    used: int
    allowed: int


class _RunResultKeys(TypedDict):
    response: str | None
    session_id: str
    run_id: str
    status: RunStatus
    usage: Usage
    steps: int
    truncated: bool


class RunResult(_RunResultKeys, total=False):
    """What ``run``, ``resume``, ``resolve_approval`` and ``grant_budget`` return.

    ``response`` is ``None`` while the run is paused or when it failed; ``truncated`` says
    the reply was cut off by the output limit. Optional: ``approvals`` (status
    ``awaiting_approval``), ``budget_request`` (status ``awaiting_budget``), ``error``
    (status ``failed``), ``output`` (a completed run given an ``output_type``: the answer
    parsed into it), ``cancel_requested`` (``cancel_run`` of a run still running when it
    returned: its driver, wherever it is, stops it at its next step or streamed chunk).
    """

    approvals: list[ApprovalRequest]
    budget_request: BudgetRequest | None
    error: str
    output: Any
    cancel_requested: bool


class _ChatMessageKeys(TypedDict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None


class ChatMessage(_ChatMessageKeys, total=False):
    """A message in Chat Completions form. ``content`` is a list only for a user message
    that was run with content parts (see ``omnisync.content``). Optional: ``tool_calls``
    (assistant), ``tool_call_id`` (tool), ``name``."""

    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    name: str


class HistoryMessage(ChatMessage, total=False):
    """A message of ``get_session_history``; ``status``, ``seq``, ``summary``, ``partial`` and ``run_id`` only with ``include_inactive=True``.

    ``partial`` is True for a streamed reply the caller stopped midway (its text so far);
    ``run_id`` is the run that wrote the message (None for one written outside a run).
    """

    status: Literal["active", "inactive"]
    seq: int
    summary: bool
    partial: bool
    run_id: str | None


class HistoryPage(TypedDict):
    """A page of ``get_session_history_page``: its ``messages``, and the ``next_cursor`` to pass
    for the next page (None on the last)."""

    messages: list[HistoryMessage]
    next_cursor: str | None


class RunsPage(TypedDict):
    """A page of ``list_runs_page``: its ``runs``, and the ``next_cursor`` to pass for the next
    page (None on the last)."""

    runs: list[RunRecordDict]
    next_cursor: str | None


class PreviewWindow(TypedDict):
    """The memory window ``preview`` loaded: its ``mode`` and ``value`` and how many messages it held."""

    mode: Literal["sliding_window", "token_budget"]
    value: int
    messages: int


class Preview(TypedDict):
    """What ``preview`` returns: the messages the next model call would get, with their token counts."""

    messages: list[ChatMessage]
    tokens: list[int]
    total_tokens: int
    window: PreviewWindow
    summary: str | None


class RunRecordDict(TypedDict):
    """A run's stored record, as ``get_run`` and ``list_runs`` return it (times in ISO 8601)."""

    run_id: str
    agent: str
    session_id: str
    kind: Literal["run", "fold", "session"]
    status: RunStatus
    step: int
    usage: Usage
    model_calls: list[ModelCallUsage]
    tool_calls_made: int
    pending_calls: list[dict[str, Any]]
    decisions: dict[str, dict[str, Any]]
    budget: dict[str, int | None]
    budget_request: BudgetRequest | None
    loaded_seq: list[int] | None
    first_written_seq: int | None
    response: str | None
    error: str | None
    partial_response: str | None
    finish_reason: str | None
    response_format: dict[str, Any] | None
    extra_body: dict[str, Any] | None
    trace_parent: str | None
    message: str | list[ContentPart] | None
    lease_owner: str | None
    lease_until: str | None
    created_at: str | None
    updated_at: str | None
    finished_at: str | None
    expires_at: str | None
    version: int
