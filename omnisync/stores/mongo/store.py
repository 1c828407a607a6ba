"""The MongoDB store, on pymongo: the same code for MongoDB and for FerretDB v1.

Three collections, named after ``collection`` (default ``messages``):

- ``messages``: one document per message, with a unique index on (agent, session_id, seq)
  and the window index (agent, session_id, status, seq). A window is one query,
  ``find(active, seq < before).sort(seq desc).limit(n)``; history reads every document
  (no cap on a session's length). A clear leaves one "cleared" mark at the top of the
  session, which every read leaves out, so seq never goes back.
- ``messages_runs``: one document per saved version of a run: the record as JSON (exact to
  the microsecond) plus the queried fields, times as BSON datetimes in UTC. A unique index
  on (agent, run_id, version), and a TTL index on ``expires_at`` where the server has one.
- ``messages_run_events``: a run's events, one document per append holding ids ``first`` to
  ``last`` (``events``: ``{n: name, d: data as JSON text}``, as FerretDB has no nested arrays); a unique index on (agent, run_id, first), one on (agent, run_id, last) for reads
  from a cursor, and the runs' TTL index. An append gives the run's events its ``expires_at``
  (an update that only ever sets one value), and pruning a run deletes them.

The one write both servers make atomic is an insert under a unique index, so every
compare-and-set here is an insert that the index refuses when someone got there first:

- seq: the session's highest seq, rounded up to even, plus 2 (one indexed read), claimed by
  inserting the step; a duplicate key means another process took it: take the step back
  and try the next free numbers (see :meth:`MongoStore.append`).
- a clear: its mark takes the seq above the newest (:meth:`MongoStore.clear`).
- a fold: its summary takes ``last_seq + 1``, then checks the range (:meth:`MongoStore.fold`).
- a run's events: an append takes the ids after the run's highest (:meth:`MongoStore.append_events`).
- a run save: it inserts version ``expected + 1`` and then checks that version is the newest
  and follows a live ``expected`` (:meth:`MongoStore.save_run`); several records (a session's
  lease and the run taking it) in one insert, one check and one clean-up
  (:meth:`MongoStore.save_runs`).

What FerretDB v1.24 (SQLite backend) lacks, as probed, and why the design above works on both:

- Atomic updates. 4 threads doing 100 ``find_one_and_update($inc)`` each on one document
  ended at 63, with values handed out twice; ``update_one`` with a version filter let 400
  "successful" compare-and-sets through for 162 versions. (FerretDB issue #3040: the SQLite
  handler reads and writes an update without a transaction.) So no ``$inc`` counter, no
  conditional-update lease, no update-based compare-and-set: unique inserts instead, which
  held under the same load (400 of 400 distinct). The only updates left only ever set
  ``status`` to "inactive", which concurrent writers cannot get wrong.
- Multi-document transactions ("unknown field startTransaction"). Nothing uses them; each
  method's docstring says what a reader can see half-way and why nothing is lost.
- TTL indexes ("expireAfterSeconds is not implemented yet"): the index is created where the
  server has it (:attr:`MongoStore.expires_runs_itself`). Either way an expired run is gone
  to every read, creating a run over it is allowed, and ``prune_runs`` deletes it.
- ``$group`` accumulators other than ``$sum``/``$count`` (no ``$max``, ``$first``, ``$last``),
  and a projection in ``findAndModify``. A page of sessions counts with ``$group``/``$sum``
  and takes the last activity (the latest ``created_at``) with ``$max`` in the same
  ``$group``; where the server answers "not implemented", it reads each session's latest
  message instead (one indexed ``find_one`` per session).
- Index use: FerretDB creates and lists the indexes, but its SQLite backend's explain shows a
  scan with no filter, sort or limit pushdown. The queries are the ones MongoDB answers from
  the indexes with bounded scans.

A page of sessions (:meth:`MongoStore.sessions_page`), in (agent, session_id) order: BSON's
binary comparison of strings, the byte order of UTF-8, which is Python's order of ``str``
(FerretDB v1 sorts the same, as probed with case, accents and characters past U+FFFF). First
the page's ids: ``find`` after the cursor, sorted by (agent, session_id), ``limit`` documents
at a time, each round trip reading on past the last id it saw, so every document it reads
belongs to a session of the page. Then one ``$group`` over those sessions' documents. So a
page reads the documents of the sessions it lists, none of the others; a cleared session's
mark is passed over like any other document that is not a message.
- Field names with "." or a leading "$" (MongoDB 5+ takes them in nested documents; NUL is
  never allowed in a BSON key). ``metadata`` and ``tool_calls`` are free JSON, so they are
  stored as JSON text and round-trip exactly on both; so are a user message's content
  parts, in ``content_parts`` (``content`` is then null), which documents written before
  parts existed do not have.
NUL characters inside string values are stored as themselves on both.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote, urlsplit

from ... import _env
from ..._logging import logger
from ...errors import ConfigurationError, MissingDependencyError, StoreError
from ...messages import ACTIVE, INACTIVE, Message, utcnow
from ...run_record import FINISHED_STATUSES, RunRecord
from ..registry import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT
from ...search.hits import Found
from . import copy as mongo_copy
from ..base import (
    MAX_EVENTS_READ,
    SEQ_STEP,
    MemoryStore,
    RunCursor,
    StoredEvent,
    SessionInfo,
    check_events,
    events_limit,
    page_limit,
    run_conflict,
)

try:
    import pymongo
    from bson import ObjectId
    from pymongo import ASCENDING, DESCENDING
    from pymongo.collection import Collection
    from pymongo.cursor import Cursor
    from pymongo.database import Database
    from pymongo.errors import BulkWriteError, DuplicateKeyError, InvalidName, OperationFailure, PyMongoError
    from pymongo.errors import ConfigurationError as MongoConfigurationError
except ImportError as _missing:  # pragma: no cover - exercised by the missing-extra test
    raise MissingDependencyError(
        "MongoDB memory requires optional dependency 'pymongo'. Install it with: pip install 'omnisync[mongodb]'"
    ) from _missing

from . import indexes, search as mongo_search
from .documents import as_utc, document_message, message_document, run_document

RUNS_PAGE_SCAN = 500
"""The most run documents one step of :meth:`MongoStore.runs_page` reads."""
APPEND_TRIES = 100
"""How many times an append tries the next free seqs while other processes take them first."""

CLEARED = "cleared"
"""The status of the mark a clear leaves at the top of a session: never a message."""
_STORED = {"status": {"$ne": CLEARED}}

_DUPLICATE_KEY = 11000


class MongoStore(MemoryStore):
    """Messages and runs in MongoDB (``MONGODB_URI``) or a wire-compatible server such as FerretDB."""

    kind = "mongodb"
    keeps_search_index = True

    def __init__(
        self,
        client: "pymongo.MongoClient[Any]",
        db_name: str | None = None,
        collection: str | None = None,
        *,
        ensure_indexes: bool = True,
    ) -> None:
        """Use ``client`` (:meth:`close` leaves it open). ``ensure_indexes=False`` skips creating
        the indexes, for a user who may not (run :meth:`ensure_indexes` once elsewhere)."""
        self.client = client
        self._owns_client = False
        name = _name("collection", collection if collection is not None else _env.mongodb_collection())
        try:
            self.db: Database[Any] = client[_name("db_name", db_name if db_name is not None else _env.mongodb_db_name())]
            self.messages: Collection[Any] = self.db[name]
            self.runs: Collection[Any] = self.db[f"{name}_runs"]
            self.events: Collection[Any] = self.db[f"{name}_run_events"]
        except InvalidName as exc:
            raise ConfigurationError(f"MongoDB store: {exc}") from exc
        self.expires_runs_itself: bool | None = None
        """Whether the server expires runs by the TTL index (None until :meth:`ensure_indexes` ran)."""
        self._groups_max = True  # until the server says $max in $group is not implemented (FerretDB v1)
        if ensure_indexes:
            self.ensure_indexes()

    @classmethod
    def from_url(
        cls, url: str, db_name: str | None = None, collection: str | None = None, *, ensure_indexes: bool = True, **client_options: Any
    ) -> "MongoStore":
        """A store on a client of its own; ``client_options`` go to ``MongoClient`` (``tz_aware`` is always on).

        ``connect_timeout`` and ``timeout`` (seconds, 5 and 30 by default) bound finding the
        server and each operation, unless MongoClient's own ``...TimeoutMS`` options are given.

        The database: ``db_name`` if given, else the one named in the URL
        (``mongodb://host/mydb``), else ``MONGODB_DB_NAME``, else ``omnisync``.
        """
        if db_name is None:
            db_name = _database_in(url)
        connect_ms = int(client_options.pop("connect_timeout", DEFAULT_CONNECT_TIMEOUT) * 1000)
        timeout_ms = int(client_options.pop("timeout", DEFAULT_TIMEOUT) * 1000)
        client_options.setdefault("connectTimeoutMS", connect_ms)
        client_options.setdefault("serverSelectionTimeoutMS", connect_ms)
        client_options.setdefault("socketTimeoutMS", timeout_ms)
        client_options["tz_aware"] = True
        client_options.setdefault("appname", "omnisync")
        try:
            client: pymongo.MongoClient[Any] = pymongo.MongoClient(url, **client_options)
        except MongoConfigurationError as exc:
            raise ConfigurationError(f"MongoDB store: bad MONGODB_URI or client option: {exc}") from exc
        try:
            store = cls(client, db_name, collection, ensure_indexes=ensure_indexes)
        except BaseException:
            client.close()
            raise
        store._owns_client = True
        return store

    @property
    def database_system(self) -> str | None:
        return "mongodb"

    def ensure_indexes(self) -> None:
        """Create the indexes the queries and the compare-and-sets rely on (idempotent)."""
        with self._errors("creating indexes"):
            self.expires_runs_itself = indexes.ensure(self.messages, self.runs, self.events, self._describe())

    def _describe(self) -> str:
        return f"MongoDB store {self.db.name}.{self.messages.name}"

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except PyMongoError as exc:
            logger.debug("%s: %s failed: %s", self._describe(), action, exc)
            raise StoreError(f"{self._describe()}: {action} failed: {exc.__class__.__name__}: {exc}") from exc

    # --- messages -------------------------------------------------------------------

    def append(self, agent: str, session_id: str, messages: Sequence[Message]) -> list[Message]:
        """Insert the step with one ordered ``insert_many`` at the next free even seqs.

        The unique index decides who gets a seq: a step that meets a taken one deletes what it
        inserted (by ``_id``, so nothing of anyone else's) and tries the numbers after, up to
        :data:`APPEND_TRIES` times. Each document is written atomically and in seq order;
        without transactions a reader may see the first messages of a step before the rest,
        or (under contention) a message that is then moved to a higher seq. A failed append
        takes its messages back before raising StoreError (best effort if the server is gone).
        A cleared session's mark counts as its newest seq, so seq never goes back.
        """
        key = _session(agent, session_id)
        if not messages:
            return []
        with self._errors(f"appending to session {session_id!r}"):
            for _ in range(APPEND_TRIES):
                started = time.monotonic()
                now = _now()
                first = self._next_seq(key)
                written = [
                    m.placed(agent=agent, session_id=session_id, seq=first + SEQ_STEP * i, created_at=now)
                    for i, m in enumerate(messages)
                ]
                documents = [{"_id": ObjectId(), **message_document(m)} for m in self.as_stored(written)]
                try:
                    self.messages.insert_many(documents, ordered=True)
                    return written
                except PyMongoError as exc:
                    self._take_back([doc["_id"] for doc in documents])
                    if not _only_duplicates(exc):
                        raise
                time.sleep(random.uniform(0, time.monotonic() - started))  # out of step with the winner
        raise StoreError(f"{self._describe()}: appending to session {session_id!r} lost the race for a seq {APPEND_TRIES} times")

    def _next_seq(self, key: dict[str, str]) -> int:
        newest = self.messages.find_one(key, {"seq": 1}, sort=[("seq", DESCENDING)])
        return (int(newest["seq"]) // SEQ_STEP + 1) * SEQ_STEP if newest else SEQ_STEP

    def _take_back(self, ids: list[ObjectId]) -> None:
        try:
            self.messages.delete_many({"_id": {"$in": ids}})
        except PyMongoError as exc:
            logger.warning("%s: could not take back the messages of a failed append: %s", self._describe(), exc)

    def replace_values(self, agent: str, session_id: str, messages: Sequence[Message]) -> int:
        found = 0
        with self._errors(f"rewriting values of session {session_id!r}"):
            for message in messages:
                document = message_document(message)
                values = {name: document[name] for name in ("content", "content_parts", "tool_calls", "metadata", "terms")}
                found += self.messages.update_one({**_session(agent, session_id), "seq": message.seq}, {"$set": values}).matched_count
        return found

    def window_query(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> "Cursor[Any]":
        """The one bounded query :meth:`latest` runs, for ``explain()`` in tests and benchmarks."""
        query: dict[str, Any] = {**_session(agent, session_id), "status": ACTIVE}
        if before_seq is not None:
            query["seq"] = {"$lt": _integer("before_seq", before_seq)}
        limit = _integer("limit", limit)
        # batch_size: the whole window in the first reply, one round trip (no getMore)
        return self.messages.find(query).sort("seq", DESCENDING).limit(limit).batch_size(max(limit, 1))

    def latest(self, agent: str, session_id: str, limit: int, before_seq: int | None = None) -> list[Message]:
        cursor = self.window_query(agent, session_id, limit, before_seq)
        if limit <= 0:  # limit(0) would mean "no limit"
            return []
        with self._errors(f"reading the window of session {session_id!r}"):
            return [document_message(doc) for doc in cursor]

    def history(self, agent: str, session_id: str, include_inactive: bool = False) -> list[Message]:
        query = {**_session(agent, session_id), "status": {"$ne": CLEARED} if include_inactive else ACTIVE}
        with self._errors(f"reading the history of session {session_id!r}"):
            return [document_message(doc) for doc in self.messages.find(query).sort("seq", ASCENDING)]

    def history_page(
        self, agent: str, session_id: str, after_seq: int | None, limit: int, include_inactive: bool = False
    ) -> list[Message]:
        if limit <= 0:
            return []
        status: Any = {"$ne": CLEARED} if include_inactive else ACTIVE
        query: dict[str, Any] = {**_session(agent, session_id), "status": status}
        if after_seq is not None:
            query["seq"] = {"$gt": int(after_seq)}
        with self._errors(f"reading a page of the history of session {session_id!r}"):
            return [document_message(doc) for doc in self.messages.find(query).sort("seq", ASCENDING).limit(limit)]

    def delete_message(self, agent: str, session_id: str, seq: int) -> bool:
        """The message becomes a "cleared" mark (no content), which no read returns and which keeps the seq counter (see :meth:`clear`)."""
        key = _session(agent, session_id)
        with self._errors("deleting a message"):
            found = self.messages.find_one_and_replace({**key, "seq": seq, **_STORED}, {**key, "seq": seq, "status": CLEARED, "created_at": _now()})
        return found is not None

    def clear(self, agent: str, session_id: str | None = None) -> int:
        """Delete the messages under a "cleared" mark one above the session's newest seq.

        The mark is inserted first (so a concurrent append either lands above it and stays, or
        reads it as the newest seq) and keeps the seq from going back; the last one stays.
        """
        if session_id is not None:
            keys = [_session(agent, session_id)]
        else:
            pipeline: list[dict[str, Any]] = [{"$match": {"agent": _text("agent", agent), **_STORED}}, {"$group": {"_id": "$session_id"}}]
            with self._errors("clearing"):
                keys = [{"agent": agent, "session_id": group["_id"]} for group in self.messages.aggregate(pipeline)]
        with self._errors("clearing"):
            return sum(self._clear_session(key) for key in keys)

    def _clear_session(self, key: dict[str, str]) -> int:
        for _ in range(APPEND_TRIES):
            newest = self.messages.find_one(key, {"seq": 1, "status": 1}, sort=[("seq", DESCENDING)])
            if newest is None:
                return 0
            mark = int(newest["seq"]) + (newest["status"] != CLEARED)  # after a clear that failed half-way: its mark
            if mark != newest["seq"]:
                try:
                    self.messages.insert_one({**key, "seq": mark, "status": CLEARED, "created_at": _now()})
                except DuplicateKeyError:  # a message came in meanwhile: mark above it
                    continue
            cleared = self.messages.delete_many({**key, "seq": {"$lt": mark}, **_STORED}).deleted_count
            self.messages.delete_many({**key, "seq": {"$lt": mark}, "status": CLEARED})
            return int(cleared)
        raise StoreError(f"{self._describe()}: clearing session {key['session_id']!r} lost the race {APPEND_TRIES} times")

    def sessions_page(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> list[SessionInfo]:
        """The page's ids by a walk of the keys, then one ``$group`` (see the module docstring)."""
        limit = page_limit(limit)
        if agent is not None:
            _text("agent", agent)
            if after is not None and after[0] > agent:  # BSON compares strings as Python does
                return []
        with self._errors("listing sessions"):
            keys = self._session_keys(agent, after, limit)
            return self._session_infos(keys) if keys else []

    def _session_keys(self, agent: str | None, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (agent, session_id) with stored messages, in order, after ``after``."""
        keys: list[tuple[str, str]] = []
        while len(keys) < limit:
            want = limit - len(keys)
            query = {**_after(agent, after), **_STORED}
            documents = self.messages.find(query, {"agent": 1, "session_id": 1, "_id": 0}).sort(_KEY_ORDER).limit(want)
            read = 0
            for doc in documents.batch_size(want):
                read += 1
                key = (doc["agent"], doc["session_id"])
                if not keys or keys[-1] != key:
                    keys.append(key)
            if read < want:
                break
            after = keys[-1]  # on past the rest of its documents
        return keys[:limit]

    def _session_infos(self, keys: list[tuple[str, str]]) -> list[SessionInfo]:
        """The sessions ``keys`` with their counts and last activity, in the order of ``keys``."""
        by_agent: dict[str, list[str]] = {}
        for agent, session_id in keys:
            by_agent.setdefault(agent, []).append(session_id)
        match = {"$or": [{"agent": agent, "session_id": {"$in": ids}} for agent, ids in by_agent.items()], **_STORED}
        group: dict[str, Any] = {"_id": {"agent": "$agent", "session_id": "$session_id"}, "count": {"$sum": 1}}
        groups = None
        if self._groups_max:
            try:
                groups = list(self.messages.aggregate([{"$match": match}, {"$group": {**group, "last": {"$max": "$created_at"}}}]))
            except OperationFailure as exc:
                if exc.code != indexes.NOT_IMPLEMENTED:
                    raise
                self._groups_max = False
        if groups is None:
            groups = list(self.messages.aggregate([{"$match": match}, {"$group": group}]))
            for found in groups:
                key = {**found["_id"], **_STORED}
                newest = self.messages.find_one(key, {"created_at": 1}, sort=[("created_at", DESCENDING)])
                found["last"] = newest.get("created_at") if newest is not None else None
        counted = {(g["_id"]["agent"], g["_id"]["session_id"]): g for g in groups}
        return [
            SessionInfo(agent, session_id, int(g["count"]), as_utc(g["last"]))
            for agent, session_id in keys
            if (g := counted.get((agent, session_id))) is not None  # else cleared meanwhile
        ]

    def fold(
        self,
        agent: str,
        session_id: str,
        summary: Message,
        *,
        first_seq: int,
        last_seq: int,
        expected_count: int,
        delete: bool,
    ) -> Message | None:
        """The compare-and-set, without a transaction, in four steps:

        1. Count the active messages in ``[first_seq, last_seq]``; not ``expected_count``: None.
        2. Insert the summary at ``last_seq + 1``, active. The unique index refuses a second
           summary of the same range: None.
        3. Count again; not ``expected_count``: delete the summary, None.
        4. Mark the range's active messages inactive (or delete them). None retired (the
           session was cleared, or another fold retired them): delete the summary, None.
           Then sweep the range again until a pass finds nothing active.

        Nothing is lost in any interleaving: a message is retired only after a summary of it
        is stored, so a fold that dies half-way leaves the summary *and* the originals active
        (a reader in between sees both too), never neither. Two folds of one session with
        different ranges end with one active summary. The shorter one's summary lies inside
        the longer one's range: whichever counts second sees the other's work and withdraws,
        or both counted first and the longer one's sweep retires the shorter one's summary
        with the messages it covers. The sweep is needed because a multi-document update
        (MongoDB's as well as FerretDB's) is no snapshot: a summary inserted while it runs
        can be passed over.
        """
        key = _session(agent, session_id)
        first, last = _integer("first_seq", first_seq), _integer("last_seq", last_seq)
        if _integer("expected_count", expected_count) <= 0:
            return None
        written = summary.placed(agent=agent, session_id=session_id, seq=last + 1, created_at=_now())
        document = {"_id": ObjectId(), **message_document(written)}
        in_range = {**key, "status": ACTIVE, "seq": {"$gte": first, "$lte": last}}
        with self._errors(f"folding session {session_id!r}"):
            if self.messages.count_documents(in_range) != expected_count:
                return None
            try:
                self.messages.insert_one(document)
            except DuplicateKeyError:
                return None
            try:
                holds = self.messages.count_documents(in_range) == expected_count
            except PyMongoError:
                self._take_back([document["_id"]])
                raise
            if not holds:
                self.messages.delete_one({"_id": document["_id"]})
                return None
            if self._retire(in_range, delete) == 0:
                self.messages.delete_one({"_id": document["_id"]})
                return None
            for _ in range(APPEND_TRIES):  # until a pass finds nothing: see the docstring
                if self._retire(in_range, delete) == 0:
                    break
        return written

    def copy_session(self, agent: str, source_session_id: str, target_session_id: str, *, last_seq: int) -> int:
        """The source's documents copied as they are, a batch of 1000 at a time (mongo_copy.py)."""
        with self._errors(f"forking session {source_session_id!r}"):
            return mongo_copy.copy_documents(self.messages, agent, source_session_id, target_session_id, last_seq)

    def deactivate(self, agent: str, session_id: str, *, first_seq: int, last_seq: int, expected_count: int) -> bool:
        """Count the range's active messages, then mark them inactive (an update that only sets
        ``status`` to inactive, which concurrent writers cannot get wrong); False, and nothing
        changed, when the count is not ``expected_count``."""
        in_range = {**_session(agent, session_id), "status": ACTIVE, "seq": {"$gte": _integer("first_seq", first_seq), "$lte": _integer("last_seq", last_seq)}}
        with self._errors(f"marking messages of session {session_id!r} inactive"):
            if expected_count < 1 or self.messages.count_documents(in_range) != expected_count:
                return False
            self._retire(in_range, delete=False)
        return True

    def search_messages(
        self,
        agent: str,
        terms: Sequence[str],
        *,
        session_id: str | None = None,
        limit: int = 10,
        before: datetime | None = None,
        after: datetime | None = None,
    ) -> list[Found]:
        """The documents' ``terms`` arrays, matched with ``$all`` on a multikey index and ranked with BM25 (mongo_search.py)."""
        if not terms or limit < 1:
            return []
        with self._errors("searching messages"):
            return mongo_search.search_documents(self.messages, document_message, agent, terms, session_id, limit, before, after)

    def reindex(self, agent: str | None = None) -> int:
        with self._errors("rebuilding the search terms"):
            return mongo_search.reindex_documents(self.messages, document_message, agent, self.sealed_terms)

    def _retire(self, in_range: dict[str, Any], delete: bool) -> int:
        if delete:
            return int(self.messages.delete_many(in_range).deleted_count)
        return int(self.messages.update_many(in_range, {"$set": {"status": INACTIVE}}).modified_count)

    # --- runs -----------------------------------------------------------------------

    def save_run(self, record: RunRecord, expected_version: int | None) -> RunRecord:
        """Insert version ``expected + 1``, then check it is the newest and follows a live ``expected``.

        The unique index refuses a second save over the same version; the check after the
        insert refuses a save over a version that is not the newest any more or never was
        (the inserted document is deleted again). Readers take the newest version, so a save
        that is refused never shows. Older versions are deleted once the new one holds.
        """
        key = _run_key(record.agent, record.run_id)
        _text("session_id", record.session_id)
        version = (_integer("expected_version", expected_version) if expected_version is not None else 0) + 1
        saved = record.evolve(version=version)
        document = {"_id": ObjectId(), **run_document(saved)}
        with self._errors(f"saving run {record.run_id!r}"):
            if expected_version is None:
                self._forget_if_expired(key)
            try:
                self.runs.insert_one(document)
            except DuplicateKeyError as exc:
                raise run_conflict(record, expected_version) from exc
            if not self._is_newest(key, version):
                self.runs.delete_one({"_id": document["_id"]})
                raise run_conflict(record, expected_version)
            try:
                self.runs.delete_many({**key, "version": {"$lt": version}})
            except PyMongoError as exc:  # readers skip them; the next save deletes them
                logger.warning("%s: could not delete the old versions of run %r: %s", self._describe(), record.run_id, exc)
        return saved

    def save_runs(self, saves: Sequence[tuple[RunRecord, int | None]]) -> list[RunRecord]:
        """:meth:`save_run` of several records in three commands, not three each.

        One ordered ``insert_many`` of every new version, one ``find`` checking each is the
        newest and follows a live expected version, one ``delete_many`` of the old versions.
        All or none: when one does not fit, every version this call inserted is deleted again
        (as a refused :meth:`save_run` is, a reader may see one meanwhile). A create that meets
        a record of its id (which may have expired) takes the slower way, one save at a time.
        """
        saved = [record.evolve(version=(_integer("expected_version", v) if v is not None else 0) + 1) for record, v in saves]
        for record in saved:
            _text("session_id", record.session_id)
        keys = [_run_key(record.agent, record.run_id) for record in saved]
        documents = [{"_id": ObjectId(), **run_document(record)} for record in saved]
        creates = any(v is None for _, v in saves)
        with self._errors(f"saving runs {', '.join(repr(r.run_id) for r in saved)}"):
            try:
                self.runs.insert_many(documents, ordered=True)
            except BulkWriteError as exc:
                inserted = documents[: exc.details.get("nInserted", 0)]
                self._take_back_runs(inserted)
                if not _only_duplicates(exc):
                    raise
                if creates:
                    return super().save_runs(saves)
                raise run_conflict(*saves[len(inserted)]) from exc
            recent = {"$or": [{**key, "version": {"$gte": record.version - 1}} for key, record in zip(keys, saved)]}
            found: dict[str, list[dict[str, Any]]] = {}
            for doc in self.runs.find(recent, {"run_id": 1, "version": 1, "expires_at": 1}).sort("version", DESCENDING):
                found.setdefault(doc["run_id"], []).append(doc)
            unfit = [i for i, record in enumerate(saved) if not _is_newest(found.get(record.run_id, []), record.version)]
            if unfit:
                self._take_back_runs(documents)
                if creates:
                    return super().save_runs(saves)
                raise run_conflict(*saves[unfit[0]])
            older = [{**key, "version": {"$lt": record.version}} for key, record in zip(keys, saved) if record.version > 1]
            if older:
                try:
                    self.runs.delete_many({"$or": older})
                except PyMongoError as exc:  # readers skip them; the next save deletes them
                    logger.warning("%s: could not delete the old versions of runs: %s", self._describe(), exc)
        return saved

    def _take_back_runs(self, documents: list[dict[str, Any]]) -> None:
        if documents:
            self.runs.delete_many({"_id": {"$in": [doc["_id"] for doc in documents]}})

    def _forget_if_expired(self, key: dict[str, str]) -> None:
        """Delete a run whose newest version has expired (by ``_id``: a new version is never hit)."""
        versions = list(self.runs.find(key, {"version": 1, "expires_at": 1}).sort("version", DESCENDING))
        if versions and _expired(versions[0], utcnow()):
            self.runs.delete_many({"_id": {"$in": [v["_id"] for v in versions]}})

    def _is_newest(self, key: dict[str, str], version: int) -> bool:
        recent = {**key, "version": {"$gte": version - 1}}
        return _is_newest(list(self.runs.find(recent, {"version": 1, "expires_at": 1}).sort("version", DESCENDING)), version)

    def load_run(self, agent: str, run_id: str) -> RunRecord | None:
        with self._errors(f"loading run {run_id!r}"):
            newest = self.runs.find_one(_run_key(agent, run_id), {"data": 1, "expires_at": 1}, sort=[("version", DESCENDING)])
        if newest is None or _expired(newest, utcnow()):
            return None
        return RunRecord.from_json(newest["data"])

    def list_runs(self, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
        query: dict[str, Any] = {"agent": _text("agent", agent)}
        if session_id is not None:
            query["session_id"] = _text("session_id", session_id)
        if status is not None:
            query["status"] = _text("status", status)
        order = [("created_at", ASCENDING), ("run_id", ASCENDING), ("version", DESCENDING)]
        with self._errors("listing runs"):
            found = list(self.runs.find(query, {"run_id": 1, "version": 1, "expires_at": 1, "data": 1}).sort(order))
            newest = _newest_versions(found)
            if status is not None and found:  # a newer version may have left this status
                ids = list({doc["run_id"] for doc in found})
                newest = _newest_versions(self.runs.find({"agent": agent, "run_id": {"$in": ids}}, {"run_id": 1, "version": 1}))
        now = utcnow()
        return [
            RunRecord.from_json(doc["data"])
            for doc in found
            if doc["version"] == newest[doc["run_id"]] and not _expired(doc, now)
        ]

    def _page_of_runs(
        self, agent: str, after: RunCursor | None, limit: int, status: str | None, session_id: str | None, kind: str
    ) -> list[RunRecord]:
        """Steps of two queries, each of at most RUNS_PAGE_SCAN documents: the run documents
        after the cursor in (created_at, run_id) order (the page index), then the newest
        version of each run found, so a run whose newer version left the status asked for is
        not listed. Leases and claims share the collection and are read and skipped, so a
        page whose runs are far apart takes a step for each RUNS_PAGE_SCAN documents between.
        ``created_at`` is compared to the millisecond, as BSON keeps it."""
        query: dict[str, Any] = {"agent": _text("agent", agent), "created_at": {"$ne": None}}
        if session_id is not None:
            query["session_id"] = _text("session_id", session_id)
        if status is not None:
            query["status"] = _text("status", status)
        order = [("created_at", ASCENDING), ("run_id", ASCENDING), ("version", DESCENDING)]
        fields = {"run_id": 1, "version": 1, "created_at": 1, "expires_at": 1, "data": 1}
        place = None if after is None else (_millis(after[0]), _text("run_id", after[1]))
        found: list[RunRecord] = []
        while True:
            step = dict(query)
            if place is not None:
                step["$or"] = [{"created_at": {"$gt": place[0]}}, {"created_at": place[0], "run_id": {"$gt": place[1]}}]
            with self._errors("reading a page of runs"):
                docs = list(self.runs.find(step, fields).sort(order).limit(RUNS_PAGE_SCAN))
                ids = list({doc["run_id"] for doc in docs})
                newest = _newest_versions(self.runs.find({"agent": agent, "run_id": {"$in": ids}}, {"run_id": 1, "version": 1})) if ids else {}
            now = utcnow()
            for doc in docs:
                if doc["version"] != newest.get(doc["run_id"]) or _expired(doc, now):
                    continue
                record = RunRecord.from_json(doc["data"])
                if record.kind == kind:
                    found.append(record)
                    if len(found) == limit:
                        return found
            if len(docs) < RUNS_PAGE_SCAN:
                return found
            place = (docs[-1]["created_at"], docs[-1]["run_id"])

    def run_agents(self) -> list[str]:
        with self._errors("listing the agents of run records"):
            return sorted(self.runs.distinct("agent"))

    def prune_runs(self, agent: str, finished_before: datetime) -> int:
        """Delete the runs that finished before ``finished_before``, and any run past its ``expires_at``."""
        if not isinstance(finished_before, datetime):
            raise ConfigurationError(f"finished_before must be a datetime, not {type(finished_before).__name__}")
        before, now = as_utc(finished_before), utcnow()
        candidates = {
            "agent": _text("agent", agent),
            "$or": [
                {"status": {"$in": list(FINISHED_STATUSES)}, "finished_at": {"$lt": before}},
                {"expires_at": {"$lte": now}},
            ],
        }
        fields = {"run_id": 1, "version": 1, "status": 1, "finished_at": 1, "expires_at": 1}
        with self._errors("pruning runs"):
            ids = list({doc["run_id"] for doc in self.runs.find(candidates, {"run_id": 1})})
            if not ids:
                return 0
            runs: dict[str, list[dict[str, Any]]] = {}
            for doc in self.runs.find({"agent": agent, "run_id": {"$in": ids}}, fields).sort("version", DESCENDING):
                runs.setdefault(doc["run_id"], []).append(doc)
            doomed = [versions for versions in runs.values() if _expired(versions[0], now) or _finished_before(versions[0], before)]
            if doomed:
                self.events.delete_many({"agent": agent, "run_id": {"$in": [versions[0]["run_id"] for versions in doomed]}})
                self.runs.delete_many({"_id": {"$in": [doc["_id"] for versions in doomed for doc in versions]}})
        return len(doomed)

    # --- a run's events -------------------------------------------------------------

    def append_events(self, agent: str, run_id: str, events: Sequence[tuple[str, dict[str, Any]]]) -> int:
        """One document per append, ``first`` to ``last``: ``first`` is the run's highest
        ``last`` + 1 (one indexed read), claimed by the insert under the unique index on
        ``first``. A writer that read a stale ``last`` meets the document that followed it
        (whose ``first`` is that ``last`` + 1) and tries again, so ids never overlap and a
        reader never sees a gap. The documents take the run's ``expires_at`` at each append: the
        server appends a run's ending after the save that gives it one, so every event expires
        with the run, and saving a run costs no write here."""
        key = _run_key(agent, run_id)
        checked = check_events(events)
        with self._errors(f"appending events of run {run_id!r}"):
            for attempt in range(APPEND_TRIES):
                newest = self.events.find_one(key, {"last": 1, "expires_at": 1}, sort=[("last", DESCENDING)])
                last = int(newest["last"]) if newest else 0
                if not checked:
                    return last
                run = self.runs.find_one(key, {"expires_at": 1}, sort=[("version", DESCENDING)])
                expires = run.get("expires_at") if run else None
                stored = self.events_as_stored(agent, run_id, last + 1, events, checked)
                document = {**key, "first": last + 1, "last": last + len(checked), "events": [{"n": name, "d": data} for name, data in stored]}
                try:
                    self.events.insert_one({**document, "expires_at": expires})
                except DuplicateKeyError:
                    time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
                    continue
                if newest is not None and as_utc(newest.get("expires_at")) != as_utc(expires):  # the run's expiry changed: its events follow
                    self.events.update_many(key, {"$set": {"expires_at": expires}})
                return last + len(checked)
        raise StoreError(f"{self._describe()}: events of run {run_id!r} were not appended: other writers took the next ids {APPEND_TRIES} times")

    def replace_events(self, agent: str, run_id: str, events: Sequence[StoredEvent]) -> int:
        """Each event's data set in the document holding its id (one update each)."""
        found = 0
        with self._errors(f"rewriting events of run {run_id!r}"):
            for event in events:
                where = {**_run_key(agent, run_id), "first": {"$lte": event.id}, "last": {"$gte": event.id}}
                document = self.events.find_one(where, {"first": 1})
                if document is not None:
                    data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
                    found += self.events.update_one({"_id": document["_id"]}, {"$set": {f"events.{event.id - int(document['first'])}.d": data}}).matched_count
        return found

    def read_events(self, agent: str, run_id: str, after: int = 0, limit: int = MAX_EVENTS_READ) -> list[StoredEvent]:
        limit = events_limit(after, limit)
        query = {**_run_key(agent, run_id), "last": {"$gt": after}}
        found: list[StoredEvent] = []
        with self._errors(f"reading events of run {run_id!r}"):
            for doc in self.events.find(query, {"first": 1, "events": 1}).sort("first", ASCENDING).limit(limit):
                for id_, event in enumerate(doc["events"], int(doc["first"])):
                    if id_ > after and len(found) < limit:
                        found.append(StoredEvent(id_, event["n"], json.loads(event["d"])))
        return found

    def close(self) -> None:
        if self._owns_client:
            self.client.close()


# --- helpers ------------------------------------------------------------------------


def _text(name: str, value: object) -> str:
    """``value`` if it is a string: anything else (a dict like {"$gt": ""}) never reaches a query."""
    if not isinstance(value, str):
        raise ConfigurationError(f"{name} must be a string, not {type(value).__name__}: {value!r:.60}")
    return value


def _integer(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigurationError(f"{name} must be an integer, not {type(value).__name__}: {value!r:.60}")
    return value


def _name(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"MongoDB store: {name} must be a non-empty string, not {value!r:.60}")
    return value


def _session(agent: object, session_id: object) -> dict[str, str]:
    return {"agent": _text("agent", agent), "session_id": _text("session_id", session_id)}


_KEY_ORDER = [("agent", ASCENDING), ("session_id", ASCENDING)]


def _after(agent: str | None, after: tuple[str, str] | None) -> dict[str, Any]:
    """The filter of ``agent``'s (None: every agent's) documents after the cursor ``after``."""
    if after is not None:
        _session(*after)  # strings, never an operator
    if agent is None:
        if after is None:
            return {}
        return {"$or": [{"agent": {"$gt": after[0]}}, {"agent": after[0], "session_id": {"$gt": after[1]}}]}
    if after is None or after[0] < agent:
        return {"agent": agent}
    return {"agent": agent, "session_id": {"$gt": after[1]}}


def _run_key(agent: object, run_id: object) -> dict[str, str]:
    return {"agent": _text("agent", agent), "run_id": _text("run_id", run_id)}


def _only_duplicates(exc: PyMongoError) -> bool:
    """Whether a failed insert failed only because a seq was taken."""
    if isinstance(exc, DuplicateKeyError):
        return True
    if not isinstance(exc, BulkWriteError):
        return False
    details = exc.details
    errors = details.get("writeErrors") or []
    return bool(errors) and not details.get("writeConcernErrors") and all(e.get("code") == _DUPLICATE_KEY for e in errors)


def _is_newest(found: list[dict[str, Any]], version: int) -> bool:
    """Whether ``version`` is the newest of a run's versions ``found`` (newest first, from ``version - 1`` up),
    and follows a live ``version - 1``: so no save came between, and none was made over an expired record."""
    if not found or found[0]["version"] != version:
        return False
    if version == 1:
        return True
    return len(found) > 1 and found[1]["version"] == version - 1 and not _expired(found[1], utcnow())


def _newest_versions(docs: Any) -> dict[str, int]:
    newest: dict[str, int] = {}
    for doc in docs:
        newest[doc["run_id"]] = max(newest.get(doc["run_id"], 0), int(doc["version"]))
    return newest


def _expired(doc: dict[str, Any], now: datetime) -> bool:
    expires = as_utc(doc.get("expires_at"))
    return expires is not None and expires <= now


def _finished_before(doc: dict[str, Any], before: datetime | None) -> bool:
    finished = as_utc(doc.get("finished_at"))
    return doc["status"] in FINISHED_STATUSES and finished is not None and before is not None and finished < before


def _now() -> datetime:
    """The current UTC time at BSON's millisecond precision, so what append returns is what reads return."""
    now = utcnow()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _millis(moment: datetime) -> datetime:
    """``moment`` in UTC cut to the millisecond: what BSON keeps of a time, so a cursor compares alike."""
    utc = moment.astimezone(timezone.utc)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def _database_in(url: str) -> str | None:
    """The database a MongoDB URL names in its path (no DNS look-up, even for mongodb+srv)."""
    return unquote(urlsplit(url).path.lstrip("/")) or None
