"""What the commands print: plain tables for people, JSON for programs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TextIO

SNIPPET = 100


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO | None = None) -> None:
    """Print ``rows`` under ``headers`` in left-aligned columns (the last one is not padded)."""
    out = out or sys.stdout
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        line = "  ".join(value.ljust(width) for value, width in zip(row[:-1], widths))
        text = f"{line}  {row[-1]}" if len(row) > 1 else row[0]
        print(text.rstrip(), file=out)


def print_json(value: Any, out: TextIO | None = None) -> None:
    json.dump(value, out or sys.stdout, ensure_ascii=False, indent=2, default=_json_default)
    (out or sys.stdout).write("\n")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def when(moment: datetime | None) -> str:
    """A time for a table: UTC, to the second."""
    return moment.strftime("%Y-%m-%d %H:%M:%SZ") if moment else "-"


def snippet(text: str | None, width: int = SNIPPET) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    if text is None:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def note(message: str) -> None:
    """A line for the person at the terminal, on stderr, so stdout stays the data."""
    print(message, file=sys.stderr)
