"""The hand-written subset of type hints: JSON schema and lax coercion, used without pydantic.

Covers str, int, float, bool, None, Any, Literal, Enum, unions and Optional, list/set/tuple
(and Sequence), dict (and Mapping), dataclasses and TypedDicts (nested, not recursive), and ``Annotated`` (metadata ignored).
Coercion follows pydantic's lax mode where the meaning is clear: ``"2"`` is the integer 2.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections import abc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .mismatch import problem

Path = tuple[str | int, ...]
SUPPORTED = "str, int, float, bool, None, Any, Literal, Enum, unions, list, set, tuple, dict, dataclasses and TypedDicts"


class Mismatch(Exception):
    """A value does not fit its hint; ``text`` says where and why."""

    def __init__(self, path: Path, message: str, *value: Any) -> None:
        super().__init__(problem(path, message, *value))
        self.text: str = str(self)


class UnsupportedHint(TypeError):
    """The subset cannot describe this hint."""


class Converter:
    """A compiled hint: its JSON schema and a function that checks and coerces a value."""

    schema: dict[str, Any]

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        raise NotImplementedError


class AnyValue(Converter):
    def __init__(self) -> None:
        self.schema: dict[str, Any] = {}

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        return value


_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_TRUE, _FALSE = {"true", "t", "yes", "y", "on", "1"}, {"false", "f", "no", "n", "off", "0"}
_NO = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _lax_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(value.strip()) if isinstance(value, str) else _NO
    except ValueError:
        return _NO


def _lax_float(value: Any) -> Any:
    try:
        parsed = float(value.strip()) if isinstance(value, str) else math.nan
    except ValueError:
        return _NO
    return parsed if math.isfinite(parsed) else _NO


def _lax_bool(value: Any) -> Any:
    word = str(value).strip().lower() if isinstance(value, (int, str)) else ""
    return word in _TRUE if word in _TRUE | _FALSE else _NO


_EXACT: dict[Any, Callable[[Any], bool]] = {
    str: lambda value: isinstance(value, str),
    int: lambda value: isinstance(value, int) and not isinstance(value, bool),
    float: _is_number,
    bool: lambda value: isinstance(value, bool),
    type(None): lambda value: value is None,
}
_LAX: dict[Any, Callable[[Any], Any]] = {
    str: lambda value: str(value) if _is_number(value) else _NO,
    int: _lax_int,
    float: _lax_float,
    bool: _lax_bool,
    type(None): lambda value: _NO,
}


class Scalar(Converter):
    """str, int, float, bool or None; ``strict`` refuses every coercion."""

    def __init__(self, kind: type) -> None:
        self.kind: type = kind
        self.json_type: str = _JSON_TYPES[kind]
        self.schema: dict[str, Any] = {"type": self.json_type}

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        if _EXACT[self.kind](value):
            return float(value) if self.kind is float else value
        coerced = _NO if strict else _LAX[self.kind](value)
        if coerced is _NO:
            raise Mismatch(path, f"expected {_article(self.json_type)}", value)
        return coerced


class Choice(Converter):
    """A ``Literal`` or an ``Enum``: one of a fixed set of JSON values."""

    def __init__(self, values: list[Any], result: Callable[[Any], Any] = lambda value: value) -> None:
        self.values: list[Any] = values
        self.result: Callable[[Any], Any] = result
        self.schema: dict[str, Any] = {"enum": values}
        json_types = {_JSON_TYPES.get(type(value)) for value in values}
        if len(json_types) == 1 and None not in json_types:
            self.schema["type"] = json_types.pop()

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        if isinstance(value, enum.Enum):
            value = value.value
        for allowed in self.values:
            if value == allowed and type(value) is type(allowed):
                return self.result(allowed)
        raise Mismatch(path, "expected one of " + ", ".join(map(repr, self.values)), value)


class AnyOf(Converter):
    """The first arm that takes the value as it is, else the first that can coerce it."""

    def __init__(self, arms: list[Converter]) -> None:
        self.arms = arms
        self.schema: dict[str, Any] = {"anyOf": [arm.schema for arm in arms]}

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        for strict_pass in (True, False) if not strict else (True,):
            for arm in self.arms:
                try:
                    return arm.convert(value, path, strict_pass)
                except Mismatch:
                    continue
        raise Mismatch(path, "expected " + " | ".join(describe(arm.schema) for arm in self.arms), value)


class Array(Converter):
    """list, set, frozenset and ``tuple[T, ...]`` (any length), or a fixed-length tuple."""

    def __init__(self, container: type, items: Converter | None = None, fixed: list[Converter] | None = None) -> None:
        self.container: type = container
        self.items: Converter | None = items
        self.fixed: list[Converter] | None = fixed
        self.schema: dict[str, Any] = {"type": "array"}
        if fixed is not None:
            self.schema.update(prefixItems=[c.schema for c in fixed], minItems=len(fixed), maxItems=len(fixed))
        else:
            self.schema["items"] = items.schema if items else {}
        if container in (set, frozenset):
            self.schema["uniqueItems"] = True

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        if not isinstance(value, (list, tuple, set, frozenset)):
            raise Mismatch(path, "expected an array", value)
        if self.fixed is not None:
            if len(value) != len(self.fixed):
                raise Mismatch(path, f"expected an array of {len(self.fixed)} items", value)
            return tuple(c.convert(v, (*path, i), strict) for i, (c, v) in enumerate(zip(self.fixed, value)))
        items = self.items or AnyValue()
        return self.container(items.convert(v, (*path, i), strict) for i, v in enumerate(value))


class Dictionary(Converter):
    """``dict[K, V]`` and ``Mapping[K, V]``: an object whose keys and values are each converted."""

    def __init__(self, keys: Converter, values: Converter) -> None:
        self.keys: Converter = keys
        self.values: Converter = values
        self.schema: dict[str, Any] = {"type": "object", "additionalProperties": values.schema or True}

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        if not isinstance(value, dict):
            raise Mismatch(path, "expected an object", value)
        return {self.keys.convert(k, (*path, k), strict): self.values.convert(v, (*path, k), strict) for k, v in value.items()}


class Record(Converter):
    """A dataclass or a TypedDict: named fields, some required, no others allowed."""

    def __init__(self, fields: dict[str, Converter], required: list[str], build: Callable[[dict[str, Any]], Any], kind: type | None) -> None:
        self.fields: dict[str, Converter] = fields
        self.required: list[str] = required
        self.build: Callable[[dict[str, Any]], Any] = build
        self.kind: type | None = kind
        self.schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: field.schema for name, field in fields.items()},
            "required": required,
            "additionalProperties": False,
        }

    def convert(self, value: Any, path: Path, strict: bool = False) -> Any:
        if self.kind is not None and isinstance(value, self.kind):
            return value
        if not isinstance(value, dict):
            raise Mismatch(path, "expected an object", value)
        for name in value:
            if name not in self.fields:
                raise Mismatch((*path, name), "is not a field here; allowed: " + ", ".join(self.fields), value[name])
        for name in self.required:
            if name not in value:
                raise Mismatch((*path, name), "is a required field and is missing")
        return self.build({name: self.fields[name].convert(v, (*path, name), strict) for name, v in value.items()})


class Compiler:
    """Turns hints into converters; refuses recursive types, which need pydantic."""

    def __init__(self) -> None:
        self._open: list[Any] = []

    def compile(self, hint: Any) -> Converter:
        if hint is Any or hint is object:
            return AnyValue()
        if hint is None or hint is type(None):
            return Scalar(type(None))
        if hint in (str, int, float, bool):
            return Scalar(hint)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is typing.Annotated:
            return self.compile(args[0])
        if origin is typing.Literal:
            return Choice(list(args))
        if origin in (typing.Union, types.UnionType):
            return AnyOf([self.compile(arg) for arg in args])
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return Choice([member.value for member in hint], hint)
        container = origin or hint
        if container in (list, set, frozenset, abc.Sequence, abc.MutableSequence):
            return Array(list if issubclass(container, abc.Sequence) else container, self.compile(args[0]) if args else None)
        if container is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return Array(tuple, self.compile(args[0]))
            return Array(tuple, fixed=[self.compile(arg) for arg in args]) if args else Array(tuple)
        if container in (dict, abc.Mapping, abc.MutableMapping):
            return Dictionary(self.compile(args[0]), self.compile(args[1])) if args else Dictionary(AnyValue(), AnyValue())
        if _is_typeddict(hint) or dataclasses.is_dataclass(hint):
            with self._opened(hint):
                return self._record(hint)
        raise UnsupportedHint(f"{_name(hint)} is not in the built-in subset ({SUPPORTED})")

    def _record(self, hint: Any) -> Record:
        hints = typing.get_type_hints(hint)
        if _is_typeddict(hint):
            fields = {name: self.compile(h) for name, h in hints.items()}
            return Record(fields, [n for n in fields if n in hint.__required_keys__], dict, None)
        own = [f for f in dataclasses.fields(hint) if f.init]
        fields = {f.name: self.compile(hints.get(f.name, Any)) for f in own}
        required = [f.name for f in own if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        return Record(fields, required, lambda values: hint(**values), hint)

    @contextmanager
    def _opened(self, hint: Any) -> Iterator[None]:
        if hint in self._open:
            raise UnsupportedHint(f"{_name(hint)} refers to itself; recursive types need pydantic")
        self._open.append(hint)
        try:
            yield
        finally:
            self._open.pop()


def describe(schema: dict[str, Any]) -> str:
    """A short name for a schema, for messages: ``integer``, ``integer | string``, ``Point``."""
    if "enum" in schema:
        return " | ".join(map(repr, schema["enum"]))
    if "anyOf" in schema:
        return " | ".join(describe(arm) for arm in schema["anyOf"])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    kind = schema.get("type")
    if kind == "array" and schema.get("items"):
        return f"array of {describe(schema['items'])}"
    return str(kind) if isinstance(kind, str) else "any"


def _is_typeddict(hint: Any) -> bool:
    """A TypedDict from typing or from typing_extensions (whose classes typing.is_typeddict misses before 3.12)."""
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _article(json_type: str) -> str:
    return "null" if json_type == "null" else ("an " if json_type[0] in "aeiou" else "a ") + json_type


def _name(hint: Any) -> str:
    return getattr(hint, "__qualname__", None) or repr(hint)
