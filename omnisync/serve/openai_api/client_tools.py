"""A response's ``tools`` of type ``function``: tools the client runs.

They are given to the model beside the agent's own; a call to one ends the run (see
``Tool.runs_on_client``), the response ending with its ``function_call`` items, and the
client's next request brings their results as ``function_call_output`` items, which are
written into the session before the run that answers them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...tools import ToolRegistry
from ...tools.registry import Tool
from ...tools.signature import ToolParameters
from .errors import OpenAIError, unsupported


def _runs_on_the_client() -> str:
    return "Error: this tool runs on the client; its result comes with the client's next request."


class DeclaredTool(Tool):
    """A client's function tool: its name, description and JSON schema as the request declared them."""

    declared: dict[str, Any]

    def __init__(self, name: str, description: str, parameters: dict[str, Any]) -> None:
        super().__init__(name, _runs_on_the_client, description, ToolParameters(name, _runs_on_the_client), runs_on_client=True)
        object.__setattr__(self, "declared", parameters)

    @property
    def parameters(self) -> dict[str, Any]:
        return self.declared


class WithClientTools(ToolRegistry):
    """An agent's tools and a request's client tools, the agent's first."""

    def __init__(self, own: ToolRegistry, declared: Sequence[DeclaredTool]) -> None:
        super().__init__()
        self._own = own
        self._declared = {tool.name: tool for tool in declared}

    def get(self, name: str) -> Tool | None:
        return self._own.get(name) or self._declared.get(name)

    def names(self) -> list[str]:
        return [*self._own.names(), *self._declared]

    def schemas(self) -> list[dict[str, Any]]:
        return [*self._own.schemas(), *(tool.schema() for tool in self._declared.values())]

    def __len__(self) -> int:
        return len(self._own) + len(self._declared)


def declared_tools(tools: Any, own: ToolRegistry) -> list[dict[str, Any]]:
    """The request's function tools as ``{name, description, parameters}``, checked; a 400 naming what is not supported."""
    if not isinstance(tools, list):
        raise OpenAIError(400, "tools must be a list", "tools", "invalid_type")
    found: list[dict[str, Any]] = []
    for n, tool in enumerate(tools):
        where = f"tools[{n}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise unsupported(f"{where}.type", f"tools of type {kind!r} (only 'function': the agent's own tools run on the server)")
        name, parameters = tool.get("name"), tool.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(name, str) or not name or own.get(name) is not None or name in (f["name"] for f in found):
            raise OpenAIError(400, f"{where}.name must be a name of its own (the agent has tools: {', '.join(own.names()) or 'none'})", f"{where}.name", "invalid_value")
        if not isinstance(parameters, dict):
            raise OpenAIError(400, f"{where}.parameters must be a JSON schema object", f"{where}.parameters", "invalid_type")
        found.append({"name": name, "description": str(tool.get("description") or name), "parameters": parameters})
    return found


def registry_with(own: ToolRegistry, declared: Sequence[dict[str, Any]]) -> ToolRegistry:
    return WithClientTools(own, [DeclaredTool(t["name"], t["description"], t["parameters"]) for t in declared]) if declared else own
