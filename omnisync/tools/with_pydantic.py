"""Tool parameters through pydantic's ``TypeAdapter``: every type pydantic knows, validated in lax mode.

Importing this module imports pydantic; ``signature`` imports it only when pydantic is installed.
"""

from __future__ import annotations

from typing import Any

import pydantic
import typing_extensions

from .mismatch import ArgumentsMismatch, problem


class PydanticParameters:
    """The parameters as one ``TypedDict`` that pydantic describes and validates."""

    def __init__(self, name: str, hints: dict[str, Any], required: list[str]) -> None:
        fields = {key: hint if key in required else typing_extensions.NotRequired[hint] for key, hint in hints.items()}
        make_typed_dict: Any = typing_extensions.TypedDict  # built at run time, which type checkers cannot follow
        arguments = make_typed_dict(f"{name}_arguments", fields)
        arguments.__pydantic_config__ = pydantic.ConfigDict(extra="forbid", coerce_numbers_to_str=True)
        self._adapter: pydantic.TypeAdapter[dict[str, Any]] = pydantic.TypeAdapter(arguments)
        self.schema = without_titles(self._adapter.json_schema())

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._adapter.validate_python(arguments)
        except pydantic.ValidationError as exc:
            raise ArgumentsMismatch([_problem(error) for error in exc.errors(include_url=False)]) from None


def build(name: str, hints: dict[str, Any], required: list[str]) -> PydanticParameters | str:
    """The parameters, or why pydantic cannot describe them."""
    try:
        return PydanticParameters(name, hints, required)
    except pydantic.PydanticUserError as exc:
        return str(exc).split("\n", 1)[0]


def _problem(error: Any) -> str:
    if error["type"] == "missing":
        return problem(error["loc"], "is a required field and is missing")
    return problem(error["loc"], error["msg"], error["input"])


def without_titles(schema: Any) -> Any:
    """The schema without pydantic's generated ``title`` keywords (a property named "title" stays)."""
    if isinstance(schema, list):
        return [without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "patternProperties"):
            cleaned[key] = {name: without_titles(sub) for name, sub in value.items()}
        elif key in ("default", "examples", "const", "enum"):
            cleaned[key] = value
        else:
            cleaned[key] = without_titles(value)
    return cleaned
