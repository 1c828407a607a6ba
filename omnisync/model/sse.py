"""Server-sent events from bytes that arrive in pieces of any size (the WHATWG event-stream rules).

Written here rather than taken from sseclient-py, which does fit requests (it reads any iterable
of byte chunks) but: its import name ``sseclient`` is also the module of the older ``sseclient``
distribution on PyPI, so having both installed breaks one of them; at the end of the stream it
hands out an event that was cut off, where the rules say to discard it, and the client must tell
a cut stream from a finished one; and it misses a blank line that follows a line ending of
another kind (``\\n\\r\\n``), merging two events into one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Event:
    """One dispatched event: its data lines joined by ``\\n``."""

    data: str
    event: str = "message"
    id: str | None = None


class EventParser:
    """Feed bytes as they arrive; get back the events they complete."""

    def __init__(self) -> None:
        self._partial_line = b""
        self._after_cr = False  # the last byte seen ended a line with CR; a LF next belongs to it
        self._at_start = True
        self._data: list[str] = []
        self._has_data = False
        self._event = ""
        self._last_id: str | None = None
        self._fields_seen = False

    @property
    def pending(self) -> bool:
        """True while part of a line or an undispatched event is held: a stream ending now was cut."""
        return bool(self._partial_line) or self._fields_seen

    def feed(self, chunk: bytes) -> list[Event]:
        if self._at_start:
            if len(self._partial_line) + len(chunk) < len(_BOM) and _BOM.startswith(self._partial_line + chunk):
                self._partial_line += chunk
                return []
            chunk, self._partial_line = self._partial_line + chunk, b""
            self._at_start = False
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM):]
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._after_cr = False
        if not chunk:
            return []
        lines = (self._partial_line + chunk).splitlines(True)
        last = lines[-1]
        if last.endswith((b"\n", b"\r")):
            self._partial_line = b""
            self._after_cr = last.endswith(b"\r")
        else:
            self._partial_line = lines.pop()
            self._after_cr = False
        events: list[Event] = []
        for line in lines:
            event = self._line(line[:-2] if line.endswith(b"\r\n") else line[:-1])
            if event is not None:
                events.append(event)
        return events

    def _line(self, raw: bytes) -> Event | None:
        if not raw:
            return self._dispatch()
        if raw[:1] == b":":
            return None  # a comment, e.g. a keep-alive
        line = raw.decode("utf-8", errors="replace")
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        else:
            return None  # retry and unknown fields: nothing for a client that does not reconnect
        self._fields_seen = True
        return None

    def _dispatch(self) -> Event | None:
        event = Event("\n".join(self._data), self._event or "message", self._last_id) if self._has_data else None
        self._data, self._has_data, self._event, self._fields_seen = [], False, "", False
        return event


def iter_events(chunks: Iterable[bytes], parser: EventParser | None = None) -> Iterator[Event]:
    """The events in a byte stream; an event cut off by its end is dropped (see ``parser.pending``)."""
    parser = parser or EventParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
