"""ToolRegistry: typed Python functions as Chat Completions function tools."""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ConfigurationError

_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    dict: {"type": "object"},
    list: {"type": "array"},
}


@dataclass(frozen=True)
class Tool:
    name: str
    function: Callable[..., Any]
    description: str
    parameters: dict[str, Any]
    requires_approval: bool = False

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def call(self, arguments: str) -> str:
        """Run the tool on the model's JSON arguments; any failure becomes a result that says so."""
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"Error: the arguments for {self.name} are not valid JSON ({exc.msg}); send a JSON object."
        if not isinstance(parsed, dict):
            return f"Error: the arguments for {self.name} must be a JSON object, not {type(parsed).__name__}."
        try:
            inspect.signature(self.function).bind(**parsed)
        except TypeError as exc:
            expected = ", ".join(f"{name}: {spec.get('type', 'any')}" for name, spec in self.parameters["properties"].items())
            return f"Error: the arguments do not fit {self.name}({expected}): {exc}"
        try:
            result = self.function(**parsed)
        except Exception as exc:  # the model should hear about it, and the run go on
            return f"Error: {self.name} raised {type(exc).__name__}: {exc}"
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


class ToolRegistry:
    """The tools an agent may call. Register with ``@tools.register_tool()``."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register_tool(self, name: str | None = None, requires_approval: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
            tool_name = name or function.__name__
            if inspect.iscoroutinefunction(function):
                raise ConfigurationError(
                    f"Tool {tool_name!r} is an async function; tools run in the agent's own thread, so register "
                    "a plain function (call asyncio.run inside it if it must await)."
                )
            if tool_name in self._tools:
                raise ConfigurationError(f"A tool named {tool_name!r} is already registered; give this one another name.")
            self._tools[tool_name] = Tool(
                name=tool_name,
                function=function,
                description=inspect.getdoc(function) or tool_name,
                parameters=parameters_schema(function),
                requires_approval=requires_approval,
            )
            return function

        return decorator

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]

    def __len__(self) -> int:
        return len(self._tools)


def parameters_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """A JSON schema for the function's parameters, from its type hints."""
    hints = typing.get_type_hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        properties[parameter.name] = _json_type(hints.get(parameter.name, str))
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _json_type(hint: Any) -> dict[str, Any]:
    if hint in _JSON_TYPES:
        return dict(_JSON_TYPES[hint])
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _json_type(args[0])
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(hint))}
    if origin in (list, tuple, set):
        return {"type": "array", "items": _json_type(args[0]) if args else {}}
    if origin is dict:
        return {"type": "object"}
    return {"type": "string"}
