"""ToolRegistry: typed Python functions as Chat Completions function tools."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from ..errors import ConfigurationError
from .awaiting import await_to_completion
from .mismatch import ArgumentsMismatch
from .signature import ToolParameters

P = ParamSpec("P")
R = TypeVar("R")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Tool:
    """One registered function, its schema for the model, and how to call it with the model's arguments."""

    name: str
    function: Callable[..., Any]
    description: str
    signature: ToolParameters
    requires_approval: bool = False
    runs_on_client: bool = False
    """A tool the caller runs (OpenAI's function tools, see omnisync.serve.openai_api): a call to it
    ends the run, and its result is written into the session before the next run."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (``FunctionParameters`` in OpenAI's API)."""
        return self.signature.schema

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def call(self, arguments: str | Mapping[str, Any] | None) -> str:
        """Run the tool on the model's arguments (a JSON string, or an object some servers send).

        Arguments are checked and coerced first; any failure becomes a result that says so.
        """
        if isinstance(arguments, Mapping):
            parsed: Any = dict(arguments)
        else:
            try:
                parsed = json.loads(arguments or "{}")
            except json.JSONDecodeError as exc:
                return f"Error: the arguments for {self.name} are not valid JSON ({exc.msg}); send a JSON object."
        if not isinstance(parsed, dict):
            return f"Error: the arguments for {self.name} must be a JSON object, not {type(parsed).__name__}."
        try:
            args, kwargs = self.signature.bind(parsed)
        except ArgumentsMismatch as exc:
            return f"Error: the arguments do not fit {self.signature.signature_text()}: {exc}"
        try:
            result = self.function(*args, **kwargs)
            if inspect.isawaitable(result):  # an async def tool
                result = await_to_completion(result)
        except Exception as exc:  # the model should hear about it, and the run go on
            return f"Error: {self.name} raised {type(exc).__name__}: {exc}"
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


class ToolRegistry:
    """The tools an agent may call. Register with ``@tools.register_tool()``."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register_tool(self, name: str | None = None, requires_approval: bool = False) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """Register the decorated function (plain or ``async def``) as a tool; the function itself is returned unchanged.

        An async tool is awaited to completion when it is called (see :mod:`omnisync.tools.awaiting`).
        """

        def decorator(function: Callable[P, R]) -> Callable[P, R]:
            tool_name = name or str(getattr(function, "__name__", ""))
            if not _NAME.match(tool_name):
                raise ConfigurationError(
                    f"Tool name {tool_name!r} is not allowed: use 1 to 64 letters, digits, underscores or dashes "
                    "(pass name= to register_tool)."
                )
            if tool_name in self._tools:
                raise ConfigurationError(f"A tool named {tool_name!r} is already registered; give this one another name.")
            self._tools[tool_name] = Tool(
                name=tool_name,
                function=function,
                description=inspect.getdoc(function) or tool_name,
                signature=ToolParameters(tool_name, function),
                requires_approval=requires_approval,
            )
            return function

        return decorator

    def get(self, name: str) -> Tool | None:
        """The tool registered under ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """The registered tools' names, in the order they were registered."""
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Each tool as the ``tools`` entry a Chat Completions request sends (``{"type": "function", ...}``)."""
        return [tool.schema() for tool in self._tools.values()]

    def __len__(self) -> int:
        return len(self._tools)
