"""Messages copied field by field (for speed) keep every field a dataclasses.replace would keep."""

from __future__ import annotations

from dataclasses import fields, replace

from omnisync.messages import ACTIVE, Message, utcnow
from omnisync.stores.session_replay import fresh as _fresh


def _every_field_set(**given: object) -> Message:
    """A message whose every field holds a value of its own (a field added later included)."""
    return Message(**{**{f.name: object() for f in fields(Message)}, **given})  # type: ignore[arg-type]


def test_placed_keeps_every_field_but_where_and_when_it_was_written():
    message, when = _every_field_set(), utcnow()
    placed = message.placed(agent="a", session_id="s", seq=2, created_at=when)
    assert placed == replace(message, agent="a", session_id="s", seq=2, created_at=when)


def test_a_restored_message_keeps_every_field_but_its_place():
    message = _every_field_set(metadata={"k": 1})
    assert _fresh(message) == replace(message, status=ACTIVE, seq=None, created_at=None, agent="", session_id="")
