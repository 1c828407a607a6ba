"""The MongoDB store's indexes: what its queries and compare-and-sets rely on, created once
when a store opens (idempotent)."""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure

from ..._logging import logger
from .search import TERMS_INDEX

SEQ_INDEX = "omnisync_seq"
WINDOW_INDEX = "omnisync_window"
RUN_INDEX = "omnisync_run_version"
RUN_PAGE_INDEX = "omnisync_run_page"
RUN_TTL_INDEX = "omnisync_run_ttl"
EVENTS_INDEX = "omnisync_run_events"
EVENTS_READ_INDEX = "omnisync_run_events_read"
EVENTS_TTL_INDEX = "omnisync_run_events_ttl"

NOT_IMPLEMENTED = 238  # the server's code for a feature it does not have


def ensure(messages: Any, runs: Any, events: Any, where: str) -> bool:
    """Create every index; True if the server expires runs itself (a TTL index; FerretDB v1 has
    none, and then expired runs are hidden and pruned)."""
    messages.create_index([("agent", ASCENDING), ("session_id", ASCENDING), ("seq", ASCENDING)], unique=True, name=SEQ_INDEX)
    messages.create_index(
        [("agent", ASCENDING), ("session_id", ASCENDING), ("status", ASCENDING), ("seq", ASCENDING)],
        name=WINDOW_INDEX,
    )
    messages.create_index([("agent", ASCENDING), ("terms", ASCENDING)], name=TERMS_INDEX)
    runs.create_index([("agent", ASCENDING), ("run_id", ASCENDING), ("version", ASCENDING)], unique=True, name=RUN_INDEX)
    runs.create_index(
        [("agent", ASCENDING), ("created_at", ASCENDING), ("run_id", ASCENDING), ("version", DESCENDING)], name=RUN_PAGE_INDEX
    )
    try:
        runs.create_index("expires_at", expireAfterSeconds=0, name=RUN_TTL_INDEX)
        expires_itself = True
    except OperationFailure as exc:
        if exc.code != NOT_IMPLEMENTED:
            raise
        logger.debug("%s: the server has no TTL indexes; expired runs are hidden and pruned", where)
        expires_itself = False
    events.create_index([("agent", ASCENDING), ("run_id", ASCENDING), ("first", ASCENDING)], unique=True, name=EVENTS_INDEX)
    events.create_index([("agent", ASCENDING), ("run_id", ASCENDING), ("last", ASCENDING)], name=EVENTS_READ_INDEX)
    if expires_itself:
        events.create_index("expires_at", expireAfterSeconds=0, name=EVENTS_TTL_INDEX)
    return expires_itself
