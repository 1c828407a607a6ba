"""The MongoDB store's fork: the source's documents copied as they are, a batch at a time.

The documents up to ``last_seq`` (active and inactive, summaries; not a clear's mark) are read
with one cursor and written with ``insert_many`` of :data:`COPY_BATCH` each, under new ``_id``
s and the target's session id: the same seqs, statuses, times, token counts and index terms,
so nothing is converted and nothing is indexed again. The target's next seq follows from its
newest document, as for any session. Not one snapshot (MongoDB and FerretDB have no
multi-document one here): what a fork copies is committed turns, which no run changes, but a
fold of the source running meanwhile may be copied half done; a second fork into the same
target meets the unique index, and the one that loses takes back what it wrote. O(n): one
read and n / COPY_BATCH writes, against a replay's append and page read per 500 messages and
its read of the copy again to check it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..copy_by_replay import target_taken

if TYPE_CHECKING:
    from pymongo.collection import Collection

COPY_BATCH = 1000
"""Documents per ``insert_many`` (and per batch of the reading cursor)."""
CLEARED = "cleared"  # as omnisync.stores.mongo.store marks a clear
_DUPLICATE_KEY = 11000


def copy_documents(messages: "Collection[Any]", agent: str, source: str, target: str, last_seq: int) -> int:
    """The source's documents up to ``last_seq`` inserted as the target's; how many. The target must be empty."""
    from bson import ObjectId
    from pymongo.errors import BulkWriteError, DuplicateKeyError

    if messages.find_one({"agent": agent, "session_id": target}, {"_id": 1}) is not None:
        raise target_taken(agent, target)
    query = {"agent": agent, "session_id": source, "seq": {"$lte": last_seq}, "status": {"$ne": CLEARED}}
    written: list[Any] = []
    batch: list[dict[str, Any]] = []
    try:
        for document in messages.find(query).sort("seq", 1).batch_size(COPY_BATCH):
            document["_id"], document["session_id"] = ObjectId(), target
            batch.append(document)
            if len(batch) >= COPY_BATCH:
                written.extend(messages.insert_many(batch, ordered=True).inserted_ids)
                batch = []
        if batch:
            written.extend(messages.insert_many(batch, ordered=True).inserted_ids)
    except (DuplicateKeyError, BulkWriteError) as exc:
        _take_back(messages, written + [document["_id"] for document in batch])
        errors = exc.details.get("writeErrors") if isinstance(exc, BulkWriteError) else None
        if errors is None or (errors and all(e.get("code") == _DUPLICATE_KEY for e in errors)):
            raise target_taken(agent, target) from exc  # another writer reached the target first
        raise
    except BaseException:
        _take_back(messages, written + [document["_id"] for document in batch])
        raise
    return len(written)


def _take_back(messages: "Collection[Any]", ids: list[Any]) -> None:
    """Delete what a failed copy inserted (by ``_id``: nothing of anyone else's); best effort."""
    from pymongo.errors import PyMongoError

    try:
        for start in range(0, len(ids), COPY_BATCH):
            messages.delete_many({"_id": {"$in": ids[start : start + COPY_BATCH]}})
    except PyMongoError:
        pass
