"""A tool function's parameters: their JSON schema, and the check that runs before every call.

pydantic (``pip install 'omnisync[pydantic]'``) describes and validates them when it is installed
and knows the hints; the hand-written subset in ``subset`` does otherwise.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from types import ModuleType
from typing import Any, Protocol

from ..errors import ConfigurationError
from . import subset
from .mismatch import ArgumentsMismatch


class Backend(Protocol):
    schema: dict[str, Any]

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]: ...


class SubsetParameters:
    """The parameters as a record of the hand-written subset."""

    def __init__(self, hints: dict[str, Any], required: list[str]) -> None:
        compiler = subset.Compiler()
        self._record = subset.Record({k: compiler.compile(h) for k, h in hints.items()}, required, dict, None)
        self.schema: dict[str, Any] = self._record.schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        problems, values = [], {}
        for key, value in arguments.items():
            try:
                values[key] = self._record.fields[key].convert(value, (key,))
            except subset.Mismatch as exc:
                problems.append(exc.text)
        if problems:
            raise ArgumentsMismatch(problems)
        return values


def load_pydantic() -> ModuleType | None:
    """The pydantic backend, or None when pydantic is not installed (tests replace this to force the subset)."""
    try:
        from . import with_pydantic
    except ImportError:
        return None
    return with_pydantic


class ToolParameters:
    """What a tool accepts: ``schema`` for the model, ``bind`` for each call."""

    def __init__(self, name: str, function: Callable[..., Any]) -> None:
        self.name = name
        self._parameters = [
            p for p in inspect.signature(function).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        try:
            resolved = typing.get_type_hints(function, include_extras=True)
        except Exception as exc:  # a NameError from a hint naming what is not imported, a TypeError from a non-function
            raise ConfigurationError(f"Tool {name!r}: its type hints cannot be read ({exc}); register a function whose hints name imported types.") from exc
        hints = {p.name: resolved.get(p.name, Any) for p in self._parameters}
        self.required: list[str] = [p.name for p in self._parameters if p.default is p.empty]
        self._backend = self._backend_for(hints)
        self.schema: dict[str, Any] = self._normalized(self._backend.schema)

    def _backend_for(self, hints: dict[str, Any]) -> Backend:
        with_pydantic = load_pydantic()
        why_not_pydantic = "install pydantic (pip install 'omnisync[pydantic]') for every type it knows"
        if with_pydantic is not None:
            built = with_pydantic.build(self.name, hints, self.required)
            if not isinstance(built, str):
                return typing.cast(Backend, built)
            why_not_pydantic = f"pydantic refused them too: {built}"
        try:
            return SubsetParameters(hints, self.required)
        except subset.UnsupportedHint as exc:
            raise ConfigurationError(f"Tool {self.name!r}: a parameter's type cannot be described: {exc}; {why_not_pydantic}.") from None

    def _normalized(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The same outer shape from either backend, so a request body does not depend on what is installed."""
        outer = {"type": "object", "properties": schema["properties"], "required": self.required, "additionalProperties": False}
        return outer | {key: value for key, value in schema.items() if key not in outer}

    @property
    def backend(self) -> str:
        """Which describes these parameters: "pydantic" or "subset"."""
        return "subset" if isinstance(self._backend, SubsetParameters) else "pydantic"

    def bind(self, arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments for the function, checked and coerced; raises ArgumentsMismatch."""
        missing = [key for key in self.required if key not in arguments]
        if missing:  # worded as Python words it, which models know; unknown names are the next problem
            raise ArgumentsMismatch([f"missing a required argument: {key!r}" for key in missing])
        names = [p.name for p in self._parameters]
        unknown = [key for key in arguments if key not in names]
        if unknown:
            raise ArgumentsMismatch([f"{key!r} is not a parameter" for key in unknown])
        values = self._backend.validate(arguments)
        positional = [values.pop(p.name, p.default) for p in self._parameters if p.kind is p.POSITIONAL_ONLY]
        return positional, values

    def signature_text(self) -> str:
        """``add(x: integer, y: integer)``, as the model sees the types."""
        properties = self.schema.get("properties", {})
        return f"{self.name}(" + ", ".join(f"{key}: {subset.describe(properties.get(key, {}))}" for key in properties) + ")"
