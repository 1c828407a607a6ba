"""Tool parameters through pydantic's ``TypeAdapter``: every type pydantic knows, validated in lax mode.

Importing this module imports pydantic; under a version older than 2.6 it raises ImportError, so
the hand-written subset is used instead.
"""

from __future__ import annotations

from typing import Any

import typing_extensions
from pydantic import VERSION, ConfigDict, PydanticUserError, TypeAdapter, ValidationError

from .mismatch import ArgumentsMismatch, problem

if tuple(int(part) for part in VERSION.split(".")[:2]) < (2, 6):
    raise ImportError(f"omnisync describes tools with pydantic 2.6 or later, not {VERSION}")


class PydanticParameters:
    """The parameters as one ``TypedDict`` that pydantic describes and validates."""

    def __init__(self, name: str, hints: dict[str, Any], required: list[str]) -> None:
        fields = {key: hint if key in required else typing_extensions.NotRequired[hint] for key, hint in hints.items()}
        make_typed_dict: Any = typing_extensions.TypedDict  # built at run time, which type checkers cannot follow
        arguments = make_typed_dict(f"{name}_arguments", fields)
        arguments.__pydantic_config__ = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
        self._adapter: TypeAdapter[dict[str, Any]] = TypeAdapter(arguments)
        self.schema: dict[str, Any] = tidy(self._adapter.json_schema())

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._adapter.validate_python(arguments)
        except ValidationError as exc:
            raise ArgumentsMismatch([_problem(error) for error in exc.errors(include_url=False)]) from None


def build(name: str, hints: dict[str, Any], required: list[str]) -> PydanticParameters | str:
    """The parameters, or why pydantic cannot describe them."""
    try:
        return PydanticParameters(name, hints, required)
    except (PydanticUserError, TypeError) as exc:  # a hint pydantic cannot describe
        return str(exc).split("\n", 1)[0]


def _problem(error: Any) -> str:
    if error["type"] == "missing":
        return problem(error["loc"], "is a required field and is missing")
    return problem(error["loc"], error["msg"], error["input"])


def tidy(schema: Any) -> Any:
    """Without pydantic's generated ``title`` keywords (a property named "title" stays), and with every
    object of named properties closed, as validation treats it (pydantic before 2.14 left that out)."""
    if isinstance(schema, list):
        return [tidy(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "patternProperties"):
            cleaned[key] = {name: tidy(sub) for name, sub in value.items()}
        elif key in ("default", "examples", "const", "enum"):
            cleaned[key] = value
        else:
            cleaned[key] = tidy(value)
    if cleaned.get("type") == "object" and "properties" in cleaned:
        cleaned.setdefault("additionalProperties", False)
    return cleaned


class PydanticValue:
    """One type (a model, a dataclass, a ``TypedDict``...) that pydantic describes and validates."""

    def __init__(self, hint: Any) -> None:
        self._adapter: TypeAdapter[Any] = TypeAdapter(hint)
        self.schema: dict[str, Any] = tidy(self._adapter.json_schema())

    def validate(self, value: Any) -> Any:
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise ArgumentsMismatch([_problem(error) for error in exc.errors(include_url=False)]) from None


def build_value(hint: Any) -> PydanticValue | str:
    """The type, or why pydantic cannot describe it."""
    try:
        return PydanticValue(hint)
    except (PydanticUserError, TypeError) as exc:
        return str(exc).split("\n", 1)[0]
