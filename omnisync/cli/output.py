"""What the commands print: plain tables for people, JSON for programs."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, TextIO, TypeVar, cast

T = TypeVar("T")

SNIPPET = 100


TABLE_CHUNK = 500


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO | None = None) -> None:
    """Print ``rows`` under ``headers`` in left-aligned columns (the last one is not padded).

    Rows are printed as they come, ``TABLE_CHUNK`` at a time, each chunk aligned to the widest
    cell seen so far: a short listing is one table, and a long one is never held whole."""
    stream = sys.stdout if out is None else out
    widths = [len(str(h)) for h in headers]
    chunk: list[list[str]] = [[str(h) for h in headers]]
    for row in rows:
        chunk.append(["" if v is None else str(v) for v in row])
        if len(chunk) >= TABLE_CHUNK:
            widths = _print_aligned(chunk, widths, stream)
            chunk = []
    _print_aligned(chunk, widths, stream)


def _print_aligned(cells: list[list[str]], widths: list[int], out: TextIO) -> list[int]:
    widths = [max([width, *(len(row[i]) for row in cells)]) for i, width in enumerate(widths)]
    for row in cells:
        line = "  ".join(value.ljust(width) for value, width in zip(row[:-1], widths))
        print((f"{line}  {row[-1]}" if len(row) > 1 else row[0]).rstrip(), file=out)
    return widths


def nonempty(items: Iterator[T]) -> Iterator[T] | None:
    """``items`` whole, or None if there are none (its first page read to know)."""
    first = next(items, _NONE)
    return None if first is _NONE else itertools.chain([cast(T, first)], items)


_NONE = object()


def print_json_items(items: Iterable[Any], out: TextIO | None = None) -> None:
    """A JSON array of ``items``, written one item at a time (what :func:`print_json` writes for a list)."""
    stream = sys.stdout if out is None else out
    opening = "["
    for item in items:
        body = json.dumps(item, ensure_ascii=False, indent=2, default=_json_default)
        stream.write(opening + "\n  " + body.replace("\n", "\n  "))
        opening = ","
    stream.write("[]\n" if opening == "[" else "\n]\n")


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
