"""omnisync: conversation memory for LLM agents, blocking first."""

from . import _logging  # noqa: F401  (installs the NullHandler on the "omnisync" logger)
from .agent import OmniCoreAgent
from .content import ContentPart, UserContent
from .errors import ConfigurationError, MissingDependencyError, ModelError, OmnisyncError, RunError, StoreError
from .results import ApprovalRequest, BudgetRequest, ChatMessage, HistoryMessage, Preview, PreviewWindow, RunRecordDict, RunResult, Usage
from .router import MemoryRouter
from .tools import ToolRegistry

__all__ = [
    "ApprovalRequest",
    "BudgetRequest",
    "ChatMessage",
    "ConfigurationError",
    "ContentPart",
    "HistoryMessage",
    "MemoryRouter",
    "MissingDependencyError",
    "ModelError",
    "OmniCoreAgent",
    "OmnisyncError",
    "Preview",
    "PreviewWindow",
    "RunError",
    "RunRecordDict",
    "RunResult",
    "StoreError",
    "ToolRegistry",
    "Usage",
    "UserContent",
]
