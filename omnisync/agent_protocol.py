"""What every agent offers, local or remote: the public methods ``OmniCoreAgent`` and ``RemoteAgent`` share.

Code written against :class:`Agent` runs with either, unchanged (a server's client, a test
double, a queue worker). ``omnisync.aio`` offers the same methods, awaited.
"""

from __future__ import annotations

from typing import Any, Protocol, TypedDict, runtime_checkable

from .content import UserContent
from .results import HistoryMessage, HistoryPage, RunRecordDict, RunResult, RunsPage, SessionUsage
from .streaming import EventStream


class SessionSummary(TypedDict):
    """One session in a page of ``list_sessions_page``."""

    session_id: str
    message_count: int
    last_activity: str | None  # ISO 8601


class SessionsPage(TypedDict):
    """A page of ``list_sessions_page``: its ``sessions``, and the ``next_cursor`` to pass for the
    next page (None on the last)."""

    sessions: list[SessionSummary]
    next_cursor: str | None


@runtime_checkable
class Agent(Protocol):
    """The public methods of an agent, whether it runs here (OmniCoreAgent) or behind a server (RemoteAgent)."""

    name: str

    def run(self, message: UserContent, session_id: str | None = None, on_busy: str = "wait", output_type: Any = None) -> RunResult: ...

    def stream(self, message: UserContent, session_id: str | None = None, on_busy: str = "wait", output_type: Any = None) -> EventStream: ...

    def resume(self, run_id: str, output_type: Any = None) -> RunResult: ...

    def resume_stream(self, run_id: str, output_type: Any = None) -> EventStream: ...

    def resolve_approval(self, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> RunResult: ...

    def grant_budget(self, run_id: str, extra_tool_calls: int = 0, extra_tokens: int = 0, extra_steps: int = 0) -> RunResult: ...

    def cancel_run(self, run_id: str, reason: str | None = None) -> RunResult: ...

    def get_run(self, run_id: str) -> RunRecordDict: ...

    def list_runs(self, status: str | None = None, session_id: str | None = None) -> list[RunRecordDict]: ...

    def list_runs_page(self, *, status: str | None = None, session_id: str | None = None, cursor: str | None = None, limit: int = 100) -> RunsPage: ...

    def get_session_usage(self, session_id: str) -> SessionUsage: ...

    def get_session_history(self, session_id: str, include_inactive: bool = False) -> list[HistoryMessage]: ...

    def get_session_history_page(self, session_id: str, *, cursor: str | None = None, limit: int = 100, include_inactive: bool = False) -> HistoryPage: ...

    def list_sessions_page(self, *, cursor: str | None = None, limit: int = 100) -> SessionsPage: ...

    def clear_session_history(self, session_id: str | None = None) -> int: ...

    def cleanup(self) -> None: ...
