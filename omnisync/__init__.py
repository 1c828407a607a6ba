"""omnisync: conversation memory for LLM agents, blocking first."""

from . import _logging  # noqa: F401  (installs the NullHandler on the "omnisync" logger)
from .agent import OmniCoreAgent
from .content import ContentPart, UserContent
from .errors import ConfigurationError, MissingDependencyError, ModelError, OmnisyncError, RunError, StoreError
from .results import (
    ApprovalRequest,
    BudgetRequest,
    ChatMessage,
    HistoryMessage,
    HistoryPage,
    ModelCallUsage,
    Preview,
    PreviewWindow,
    RunRecordDict,
    RunResult,
    RunsPage,
    SessionUsage,
    Usage,
)
from .router import MemoryRouter
from .tools import ToolRegistry

__all__ = [
    "ApprovalRequest",
    "BudgetRequest",
    "ChatMessage",
    "ConfigurationError",
    "ContentPart",
    "HistoryMessage",
    "HistoryPage",
    "MemoryRouter",
    "MissingDependencyError",
    "ModelCallUsage",
    "ModelError",
    "OmniCoreAgent",
    "OmnisyncError",
    "Preview",
    "PreviewWindow",
    "RunError",
    "RunRecordDict",
    "RunResult",
    "RunsPage",
    "SessionUsage",
    "StoreError",
    "ToolRegistry",
    "Usage",
    "UserContent",
]
