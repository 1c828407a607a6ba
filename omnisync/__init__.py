"""omnisync: conversation memory for LLM agents, blocking first."""

from . import _logging  # noqa: F401  (installs the NullHandler on the "omnisync" logger)
from .agent import OmniCoreAgent
from .errors import ConfigurationError, MissingDependencyError, ModelError, OmnisyncError, RunError, StoreError
from .router import MemoryRouter
from .tools import ToolRegistry

__all__ = [
    "ConfigurationError",
    "MemoryRouter",
    "MissingDependencyError",
    "ModelError",
    "OmniCoreAgent",
    "OmnisyncError",
    "RunError",
    "StoreError",
    "ToolRegistry",
]
