"""What is wrong with a tool call's arguments, in words the model can act on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_MISSING = object()


def problem(path: Sequence[str | int], message: str, value: Any = _MISSING) -> str:
    """One line: where, what was expected, and (when it helps) what came."""
    where = ".".join(map(str, path)) or "arguments"
    shown = "" if value is _MISSING else f" (got {_short_repr(value)})"
    return f"{where}: {message}{shown}"


def _short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ArgumentsMismatch(ValueError):
    """The arguments do not fit the tool's parameters; ``problems`` lists each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
