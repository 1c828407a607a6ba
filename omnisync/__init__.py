"""omnisync: conversation memory for LLM agents, blocking first.

Each public name is imported from its module on first use, so ``import omnisync`` loads no
HTTP client, database driver or retry library until a name that needs one is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import _logging  # noqa: F401  (installs the NullHandler on the "omnisync" logger)
from ._lazy import lazy_names

_HOMES = {  # every public name, with the module it comes from: __all__ and the lazy imports below read this
    "ApprovalRequest": "results",
    "BudgetRequest": "results",
    "ChatMessage": "results",
    "ConfigurationError": "errors",
    "ContentPart": "content",
    "DecryptionError": "errors",
    "Encryption": "encryption.keys",
    "HistoryMessage": "results",
    "HistoryPage": "results",
    "MemoryRouter": "router",
    "MissingDependencyError": "errors",
    "ModelCallUsage": "results",
    "ModelError": "errors",
    "OmniCoreAgent": "agent",
    "OmnisyncError": "errors",
    "Preview": "results",
    "PreviewWindow": "results",
    "RunError": "errors",
    "RunRecordDict": "results",
    "RunResult": "results",
    "RunsPage": "results",
    "SearchHit": "search.hits",
    "SessionUsage": "results",
    "StoreError": "errors",
    "ToolRegistry": "tools",
    "Usage": "results",
    "UserContent": "content",
}

__all__ = [  # a literal, so documentation tools that read the source find the public names (held equal to _HOMES by tests/project/test_packaging.py)
    "ApprovalRequest",
    "BudgetRequest",
    "ChatMessage",
    "ConfigurationError",
    "ContentPart",
    "DecryptionError",
    "Encryption",
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
    "SearchHit",
    "SessionUsage",
    "StoreError",
    "ToolRegistry",
    "Usage",
    "UserContent",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "__version__"})


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("omnisync")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


__getattr__: Callable[[str], Any] = lazy_names(__name__, _HOMES, {"__version__": _installed_version})

if TYPE_CHECKING:  # the same names for type checkers (tests/project/test_packaging.py holds them to _HOMES)
    from .agent import OmniCoreAgent as OmniCoreAgent
    from .content import ContentPart as ContentPart, UserContent as UserContent
    from .errors import (
        ConfigurationError as ConfigurationError,
        DecryptionError as DecryptionError,
        MissingDependencyError as MissingDependencyError,
        ModelError as ModelError,
        OmnisyncError as OmnisyncError,
        RunError as RunError,
        StoreError as StoreError,
    )
    from .results import (
        ApprovalRequest as ApprovalRequest,
        BudgetRequest as BudgetRequest,
        ChatMessage as ChatMessage,
        HistoryMessage as HistoryMessage,
        HistoryPage as HistoryPage,
        ModelCallUsage as ModelCallUsage,
        Preview as Preview,
        PreviewWindow as PreviewWindow,
        RunRecordDict as RunRecordDict,
        RunResult as RunResult,
        RunsPage as RunsPage,
        SessionUsage as SessionUsage,
        Usage as Usage,
    )
    from .encryption.keys import Encryption as Encryption
    from .router import MemoryRouter as MemoryRouter
    from .search.hits import SearchHit as SearchHit
    from .tools import ToolRegistry as ToolRegistry

    __version__: str
