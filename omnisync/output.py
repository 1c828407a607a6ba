"""A run's ``output_type``: the ``response_format`` its model calls ask for, and its answer read into that type.

``output_type`` is a JSON schema (a dict), or a type: a dataclass, a ``TypedDict``, a pydantic
model, or any hint :mod:`omnisync.tools.value_type` describes. A type's answer is checked
and coerced into it; a schema's answer is parsed JSON, returned as it is. The request asks
for ``strict`` adherence when the schema allows OpenAI's strict mode (an object whose every
object has all its properties required and no others allowed), and for best effort otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import BadRequestError, ConfigurationError, OutputValidationError, StructuredOutputUnsupportedError
from .tools.mismatch import ArgumentsMismatch
from .tools.value_type import UnsupportedType, ValueType

_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")
_FENCED = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)
_REFUSED_WORDS = ("response_format", "json_schema", "structured output")
_SHOWN_ANSWER = 200
_SCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMAS = ("items", "prefixItems", "anyOf", "oneOf", "allOf", "additionalProperties", "not")


class OutputType:
    """What a run's answer must be: its schema's ``response_format``, and ``parse`` for the answer."""

    def __init__(self, name: str, schema: dict[str, Any], value_type: ValueType | None = None) -> None:
        self.name = name
        self.schema = schema
        self.value_type = value_type
        self.response_format: dict[str, Any] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": fits_strict_mode(schema)},
        }

    @classmethod
    def of(cls, output_type: Any) -> OutputType:
        """The OutputType for what a caller passed as ``output_type``; ConfigurationError when none can be made."""
        if isinstance(output_type, dict):
            if not output_type:
                raise ConfigurationError("output_type is an empty dict: pass a JSON schema, or a dataclass, TypedDict or pydantic model")
            if output_type.get("type") == "json_schema" and isinstance(output_type.get("json_schema"), dict):
                return cls.stored(output_type)  # a whole response_format, as OpenAI's docs write it
            return cls(_name(output_type.get("title")) or "output", output_type)
        if isinstance(output_type, (str, bytes, int, float, bool)) or output_type is None:
            raise ConfigurationError(
                f"output_type must be a JSON schema (a dict) or a type such as a dataclass, TypedDict or pydantic model, "
                f"not {output_type!r}"
            )
        try:
            value_type = ValueType(output_type)
        except UnsupportedType as exc:
            raise ConfigurationError(f"output_type {output_type!r} cannot be described as a JSON schema: {exc}") from None
        if not value_type.schema:
            raise ConfigurationError(f"output_type {output_type!r} allows any JSON value: pass a type that says the answer's shape")
        name = _name(getattr(output_type, "__name__", None)) or _name(repr(output_type)) or "output"
        return cls(name, value_type.schema, value_type)

    @classmethod
    def stored(cls, response_format: dict[str, Any]) -> OutputType:
        """A resumed run's output, when resume is given no ``output_type``: the same schema, its answer parsed JSON."""
        json_schema = response_format.get("json_schema") or {}
        return cls(json_schema.get("name") or "output", json_schema.get("schema") or {})

    def parse(self, text: str | None, run_id: str | None = None) -> Any:
        """The answer as a value of this type; OutputValidationError (with the raw text) when it is not one."""
        shown = _shown(text)
        if text is None or not text.strip():
            raise OutputValidationError(
                f"the model gave no answer text, so there is nothing to read as {self.name}", text=text, problems=["empty answer"], run_id=run_id
            )
        fenced = _FENCED.match(text.strip())
        try:
            value = json.loads(fenced.group(1) if fenced else text)
        except json.JSONDecodeError as exc:
            problem = f"not JSON: {exc.msg} at position {exc.pos}"
            raise OutputValidationError(
                f"the model's answer is {problem}, so it cannot be read as {self.name}: {shown}", text=text, problems=[problem], run_id=run_id
            ) from None
        if self.value_type is None:
            return value
        try:
            return self.value_type.validate(value)
        except ArgumentsMismatch as exc:
            raise OutputValidationError(
                f"the model's answer does not fit {self.name}: {exc}; the answer was: {shown}", text=text, problems=exc.problems, run_id=run_id
            ) from None


def refused(error: BadRequestError, response_format: dict[str, Any]) -> StructuredOutputUnsupportedError | None:
    """A 400 that refuses structured output, said plainly; None when the 400 is about something else."""
    said = str(error.body).lower()
    if not any(word in said for word in _REFUSED_WORDS):
        return None
    name = response_format.get("json_schema", {}).get("name", "output")
    return StructuredOutputUnsupportedError(
        f"the server does not support structured output (response_format json_schema, asked for by output_type {name}): "
        f"{error.message}. Use a model or server that supports json_schema response formats, or run without output_type "
        "and read the answer yourself",
        status_code=error.status_code,
        request_id=error.request_id,
        body=error.body,
    )


def fits_strict_mode(schema: Any, root: bool = True) -> bool:
    """True when every object in the schema lists all its properties as required and allows no others."""
    if isinstance(schema, list):
        return all(fits_strict_mode(item, root=False) for item in schema)
    if not isinstance(schema, dict):
        return True
    if root and schema.get("type") != "object":
        return False
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required") or []) != set(properties):
            return False
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            if not all(fits_strict_mode(sub, root=False) for sub in value.values()):
                return False
        elif key in _SUBSCHEMAS and not fits_strict_mode(value, root=False):
            return False
    return True


def _name(text: Any) -> str:
    return _NAME_CHARACTERS.sub("_", text).strip("_")[:64] if isinstance(text, str) else ""


def _shown(text: str | None) -> str:
    if text is None:
        return "None"
    return repr(text if len(text) <= _SHOWN_ANSWER else text[:_SHOWN_ANSWER] + "...")
