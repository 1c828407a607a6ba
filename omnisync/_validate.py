"""Small checks shared by the configuration modules."""

from __future__ import annotations

from typing import Any

from .errors import ConfigurationError


def positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def only_keys(where: str, given: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = [key for key in given if key not in allowed]
    if unknown:
        raise ConfigurationError(f"Unknown {where} key(s): {', '.join(map(str, unknown))}. Allowed: {', '.join(allowed)}")
