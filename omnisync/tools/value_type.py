"""One Python type as a JSON schema, and the check that turns a JSON value into it.

The same two backends as tool parameters (:mod:`.signature`): pydantic's ``TypeAdapter`` when
it is installed and knows the type, the hand-written subset otherwise. A run's
``output_type`` is read with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import signature, subset
from .mismatch import ArgumentsMismatch


class UnsupportedType(TypeError):
    """Neither backend can describe the type; the message says why and what to install."""


class _SubsetValue:
    def __init__(self, hint: Any) -> None:
        self._converter = subset.Compiler().compile(hint)
        self.schema: dict[str, Any] = self._converter.schema

    def validate(self, value: Any) -> Any:
        try:
            return self._converter.convert(value, ())
        except subset.Mismatch as exc:
            raise ArgumentsMismatch([exc.text]) from None


class ValueType:
    """``schema`` describes ``hint``; ``validate`` checks and coerces a parsed JSON value (ArgumentsMismatch)."""

    def __init__(self, hint: Any) -> None:
        self.hint = hint
        why_not_pydantic = "install pydantic (pip install 'omnisync[pydantic]') for every type it knows"
        with_pydantic = signature.load_pydantic()
        backend: Any = None
        if with_pydantic is not None:
            built = with_pydantic.build_value(hint)
            if isinstance(built, str):
                why_not_pydantic = f"pydantic refused it too: {built}"
            else:
                backend = built
        if backend is None:
            try:
                backend = _SubsetValue(hint)
            except subset.UnsupportedHint as exc:
                raise UnsupportedType(f"{exc}; {why_not_pydantic}") from None
        self._validate: Callable[[Any], Any] = backend.validate
        self.schema: dict[str, Any] = backend.schema
        self.backend = "subset" if isinstance(backend, _SubsetValue) else "pydantic"

    def validate(self, value: Any) -> Any:
        return self._validate(value)
