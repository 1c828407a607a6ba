"""The contenders for each store: ours, the raw driver doing the same work, and the peers.

Every contender has the same four operations on a session it has filled:

- ``write(session)``: one run's writes, a user message and an assistant reply in one atomic
  step, with seq assigned inside the write (ours: one ``store.append``);
- ``load(session, n)``: the newest ``n`` messages, oldest first;
- ``tokens(session, budget)``: the newest messages that fit ``budget`` tokens (counted at write);
- ``fill(session, count)``: setup, in chunks of :data:`~workload.FILL_CHUNK`.

The raw baselines store the same rows (same columns, same keys, same indexes) and assign seq
the same way, in one transaction (or one Lua script, or the same find-then-insert), and hand
back what their driver gives (tuples, dicts, decoded JSON): the floor a hand-written store
would stand on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import sqlite3
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import workload as w
from omnisync.messages import Message
from omnisync.search.terms import message_terms
from omnisync.stores.base import MemoryStore

SEQ_STEP = 2
TOKEN_PAGE = 256


class Unavailable(Exception):
    """A contender that cannot run here (server down, package missing): skipped, with the reason."""


# --- ours -----------------------------------------------------------------------------


class Ours:
    """One of our stores, driven through the MemoryStore contract."""

    label = "omnisync"

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._next: dict[str, int] = {}
        self._pairs = itertools.cycle([w.messages(i, 2) for i in range(0, 128, 2)])

    def fill(self, session: str, count: int) -> None:
        start = self._next.get(session, 0)
        for offset in range(0, count, w.FILL_CHUNK):
            self.store.append(w.AGENT, session, w.messages(start + offset, min(w.FILL_CHUNK, count - offset)))
        self._next[session] = start + count

    def write(self, session: str) -> Any:
        return self.store.append(w.AGENT, session, next(self._pairs))

    def load(self, session: str, n: int) -> list[Message]:
        return self.store.window(w.AGENT, session, max_messages=n)

    def tokens(self, session: str, budget: int) -> list[Message]:
        return self.store.window(w.AGENT, session, max_tokens=budget)

    def close(self) -> None:
        self.store.close()


# --- raw: in-process ------------------------------------------------------------------


class RawInProcess:
    """A dict of lists of tuples behind one lock."""

    label = "raw dict+list"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        self._last: dict[tuple[str, str], int] = {}
        self._pairs = itertools.cycle([[w.record(i, "") for i in (j, j + 1)] for j in range(0, 128, 2)])

    def _append(self, session: str, records: list[dict[str, Any]]) -> None:
        now = w.utcnow()
        key = (w.AGENT, session)
        with self._lock:
            log = self._sessions.setdefault(key, [])
            seq = self._last.get(key, 0)
            for r in records:
                seq += SEQ_STEP
                log.append((seq, r["role"], r["content"], r["tokens"], r["run_id"], now, "active"))
            self._last[key] = seq

    def fill(self, session: str, count: int) -> None:
        start = len(self._sessions.get((w.AGENT, session), []))
        self._append(session, [w.record(i, "") for i in range(start, start + count)])

    def write(self, session: str) -> None:
        self._append(session, next(self._pairs))

    def load(self, session: str, n: int) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._sessions[(w.AGENT, session)][-n:]

    def tokens(self, session: str, budget: int) -> list[tuple[Any, ...]]:
        with self._lock:
            log = self._sessions[(w.AGENT, session)]
            spent, index = 0, len(log)
            while index > 0 and spent + log[index - 1][3] <= budget:
                index -= 1
                spent += log[index][3]
            return log[index:]

    def drop(self) -> None:
        with self._lock:
            self._sessions.clear()

    def close(self) -> None:
        self.drop()


# --- raw: SQL (sqlite3 and psycopg) ---------------------------------------------------

_COLUMNS = "agent, session_id, seq, role, content, tool_calls, tool_call_id, name, status, run_id, tokens, created_at_us, metadata, terms"
# What a load reads: the columns the store reads, in its order (omnisync.stores.sql.store.MESSAGE_COLUMNS),
# not the three its WHERE clause fixes. tests/project/test_bench_baselines.py holds every raw SQL
# baseline to the statements the store sends (statement_shape), so a ratio compares like with like.
_READ = ("role", "content", "tool_calls", "tool_call_id", "name", "metadata", "tokens", "run_id", "seq", "created_at_us")
_TOKENS, _SEQ = _READ.index("tokens"), _READ.index("seq")
_AT = {name: i for i, name in enumerate(_COLUMNS.split(", "))}
_APPENDED = ("role", "content", "tool_calls", "tool_call_id", "name", "status", "run_id", "tokens", "metadata", "terms")
# The search index the store keeps (omnisync/stores/sql_search.py), kept here alike: the same
# terms column, written by the same insert, and the same FTS5 table or GIN index over it.


class _RawSQL:
    """The SQL store's work in the SQL it sends, on tables of the baseline's own (``raw_``)."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}
        self._pairs = itertools.cycle([[w.record(i, "") for i in (j, j + 1)] for j in range(0, 128, 2)])

    def _rows(self, session: str, records: list[dict[str, Any]], last: int, now: Any) -> list[tuple[Any, ...]]:
        first = last - SEQ_STEP * (len(records) - 1)
        return [
            (w.AGENT, session, first + SEQ_STEP * i, r["role"], r["content"], None, None, None, "active",
             r["run_id"], r["tokens"], now, None, message_terms(r["content"]))  # empty tool calls and metadata are NULL
            for i, r in enumerate(records)
        ]

    def _append(self, session: str, records: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def fill(self, session: str, count: int) -> None:
        start = self._next.get(session, 0)
        for offset in range(0, count, w.FILL_CHUNK):
            self._append(session, [w.record(i, "") for i in range(start + offset, start + min(count, offset + w.FILL_CHUNK))])
        self._next[session] = start + count

    def write(self, session: str) -> None:
        self._append(session, next(self._pairs))

    def _window(self, session: str, n: int, before: int | None = None) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def load(self, session: str, n: int) -> list[tuple[Any, ...]]:
        return self._window(session, n)[::-1]

    def tokens(self, session: str, budget: int) -> list[tuple[Any, ...]]:
        chosen: list[tuple[Any, ...]] = []
        spent, before = 0, None
        while True:
            page = self._window(session, TOKEN_PAGE, before)
            for row in page:
                spent += max(row[_TOKENS], 1)
                if spent > budget:
                    return chosen[::-1]
                chosen.append(row)
            if len(page) < TOKEN_PAGE:
                return chosen[::-1]
            before = page[-1][_SEQ]


def _window_sql(where: str, limit: str) -> str:
    read = ", ".join(f"raw_messages.{name}" for name in _READ)
    return f"SELECT {read} FROM raw_messages WHERE {where} ORDER BY raw_messages.seq DESC LIMIT {limit}"


class RawSQLite(_RawSQL):
    """Plain ``sqlite3``, the same pragmas as ours (WAL, synchronous=NORMAL), the same tables and index."""

    label = "raw sqlite3"
    # The statements SQLAlchemy compiles for the store (an OFFSET bound to 0 with every LIMIT).
    upsert = (
        "INSERT INTO raw_sessions (agent, session_id, last_seq, updated_at_us) VALUES (?, ?, ?, ?) ON CONFLICT (agent, session_id) "
        "DO UPDATE SET last_seq = (raw_sessions.last_seq + ?), updated_at_us = ? RETURNING last_seq"
    )
    insert = f"INSERT INTO raw_messages ({_COLUMNS}) VALUES ({', '.join('?' * 14)})"
    _where = "raw_messages.agent = ? AND raw_messages.session_id = ? AND raw_messages.status = ?"
    window = _window_sql(_where, "? OFFSET ?")
    window_before = _window_sql(f"{_where} AND raw_messages.seq < ?", "? OFFSET ?")

    def __init__(self, path: str, counter: "RoundTrips | None" = None) -> None:
        super().__init__()
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        if counter is not None:  # every statement sqlite3 runs (an executemany runs one per row)
            self.conn.set_trace_callback(lambda sql: counter.hit(sql.split(None, 1)[0].upper()))
        self.conn.execute("PRAGMA busy_timeout = 30000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.executescript(
            """
            CREATE TABLE IF NOT EXISTS raw_sessions (
                agent VARCHAR(255) NOT NULL, session_id VARCHAR(255) NOT NULL, last_seq INTEGER NOT NULL,
                updated_at_us BIGINT NOT NULL, PRIMARY KEY (agent, session_id));
            CREATE TABLE IF NOT EXISTS raw_messages (
                agent VARCHAR(255) NOT NULL, session_id VARCHAR(255) NOT NULL, seq INTEGER NOT NULL,
                role VARCHAR(32) NOT NULL, content TEXT, tool_calls TEXT, tool_call_id VARCHAR(255),
                name VARCHAR(255), status VARCHAR(16) NOT NULL, run_id VARCHAR(64), tokens INTEGER NOT NULL,
                created_at_us BIGINT NOT NULL, metadata TEXT, terms TEXT, PRIMARY KEY (agent, session_id, seq));
            CREATE INDEX IF NOT EXISTS ix_raw_messages_window ON raw_messages (agent, session_id, status, seq);
            CREATE VIRTUAL TABLE IF NOT EXISTS raw_messages_fts USING fts5(terms, content='raw_messages', content_rowid='rowid',
                tokenize='unicode61 remove_diacritics 0');
            CREATE TRIGGER IF NOT EXISTS raw_messages_fts_insert AFTER INSERT ON raw_messages WHEN new.terms IS NOT NULL
                BEGIN INSERT INTO raw_messages_fts(rowid, terms) VALUES (new.rowid, new.terms); END;
            """
        )

    def _append(self, session: str, records: list[dict[str, Any]]) -> None:
        now = w.micros()
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            step = SEQ_STEP * len(records)
            last = conn.execute(self.upsert, (w.AGENT, session, step, now, step, now)).fetchone()[0]
            conn.executemany(self.insert, self._rows(session, records, last, now))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _window(self, session: str, n: int, before: int | None = None) -> list[tuple[Any, ...]]:
        if before is None:
            return self.conn.execute(self.window, (w.AGENT, session, "active", n, 0)).fetchall()
        return self.conn.execute(self.window_before, (w.AGENT, session, "active", before, n, 0)).fetchall()

    def close(self) -> None:
        self.conn.close()


class RawPostgres(_RawSQL):
    """Plain ``psycopg`` 3 on one connection in autocommit, unprepared: a write and a read are one statement each,
    the store's own (its one-statement append; the window SELECT as SQLAlchemy renders it, casts and all)."""

    label = "raw psycopg"
    append = (
        "WITH counter AS (INSERT INTO raw_sessions (agent, session_id, last_seq, updated_at_us) "
        "VALUES (%(agent)s, %(session_id)s, %(step)s, %(now)s) ON CONFLICT (agent, session_id) DO UPDATE "
        "SET last_seq = raw_sessions.last_seq + excluded.last_seq, updated_at_us = excluded.updated_at_us RETURNING last_seq) "
        f"INSERT INTO raw_messages (agent, session_id, seq, {', '.join(_APPENDED)}, created_at_us) "
        f"SELECT %(agent)s, %(session_id)s, counter.last_seq + given.seq, {', '.join('given.' + c for c in _APPENDED)}, %(now)s "
        "FROM counter, unnest(CAST(%(seqs)s AS INTEGER[]), "
        + ", ".join(f"CAST(%({c})s AS {'INTEGER' if c == 'tokens' else 'TEXT'}[])" for c in _APPENDED)
        + f") AS given(seq, {', '.join(_APPENDED)}) RETURNING seq"
    )
    _where = (
        "raw_messages.agent = %(agent)s::VARCHAR AND raw_messages.session_id = %(session_id)s::VARCHAR "
        "AND raw_messages.status = %(status_1)s::VARCHAR"
    )
    window = _window_sql(_where, "%(limit)s::INTEGER")
    window_before = _window_sql(f"{_where} AND raw_messages.seq < %(before)s::INTEGER", "%(limit)s::INTEGER")

    def __init__(self, conninfo: str) -> None:
        """What it sends is counted where psycopg sends it (``count_sql``), as ours is."""
        import psycopg

        super().__init__()
        self.conn = psycopg.connect(conninfo, autocommit=True, prepare_threshold=None)  # never prepared, as ours (poolers)
        self.conn.execute(
            """
            CREATE TABLE IF NOT EXISTS raw_sessions (
                agent VARCHAR(255) NOT NULL, session_id VARCHAR(255) NOT NULL, last_seq INTEGER NOT NULL,
                updated_at_us BIGINT NOT NULL, PRIMARY KEY (agent, session_id));
            CREATE TABLE IF NOT EXISTS raw_messages (
                agent VARCHAR(255) NOT NULL, session_id VARCHAR(255) NOT NULL, seq INTEGER NOT NULL,
                role VARCHAR(32) NOT NULL, content TEXT, tool_calls TEXT, tool_call_id VARCHAR(255),
                name VARCHAR(255), status VARCHAR(16) NOT NULL, run_id VARCHAR(64), tokens INTEGER NOT NULL,
                created_at_us BIGINT NOT NULL, metadata TEXT, terms TEXT, PRIMARY KEY (agent, session_id, seq));
            CREATE INDEX IF NOT EXISTS ix_raw_messages_window ON raw_messages (agent, session_id, status, seq);
            CREATE INDEX IF NOT EXISTS ix_raw_messages_terms ON raw_messages USING gin (to_tsvector('simple'::regconfig, terms));
            """
        )

    def _append(self, session: str, records: list[dict[str, Any]]) -> None:
        rows = self._rows(session, records, 0, None)  # seq relative to the counter's new value
        params: dict[str, Any] = {name: [row[_AT[name]] for row in rows] for name in _APPENDED}
        params.update(agent=w.AGENT, session_id=session, step=SEQ_STEP * len(rows), now=w.micros(), seqs=[row[2] for row in rows])
        max(seq for (seq,) in self.conn.execute(self.append, params))

    def _window(self, session: str, n: int, before: int | None = None) -> list[tuple[Any, ...]]:
        params: dict[str, Any] = {"agent": w.AGENT, "session_id": session, "status_1": "active", "limit": n}
        if before is None:
            return self.conn.execute(self.window, params).fetchall()
        return self.conn.execute(self.window_before, {**params, "before": before}).fetchall()

    def close(self) -> None:
        self.conn.close()


# --- raw: Redis -----------------------------------------------------------------------

# KEYS: the session's zset, its counter hash, the agent's sessions set. ARGV: now (µs), members
# (each the message's JSON without its leading "{": the script puts "{"seq":N," in front).
_RAW_APPEND = """
local n = #ARGV - 1
local last = redis.call('HINCRBY', KEYS[2], 'seq', 2 * n)
local seq = last - 2 * n
local args = {}
for i = 2, #ARGV do
  seq = seq + 2
  args[#args + 1] = seq
  args[#args + 1] = '{"seq":' .. seq .. ',' .. ARGV[i]
end
redis.call('ZADD', KEYS[1], unpack(args))
redis.call('HSET', KEYS[2], 'last', ARGV[1])
redis.call('SADD', KEYS[3], KEYS[1])
return last
"""


class RawRedis:
    """redis-py commands: a write is one Lua script (HINCRBY + ZADD), a read one ZREVRANGEBYSCORE."""

    label = "raw redis-py"

    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self._script = client.register_script(_RAW_APPEND)
        self._next: dict[str, int] = {}
        self._pairs = itertools.cycle([[w.record(i, "") for i in (j, j + 1)] for j in range(0, 128, 2)])

    def _keys(self, session: str) -> list[str]:
        return [f"{self.prefix}:{session}:z", f"{self.prefix}:{session}:meta", f"{self.prefix}:sessions"]

    def _append(self, session: str, records: list[dict[str, Any]]) -> None:
        now = w.utcnow()
        stamp = now.isoformat()
        micros = int(now.timestamp() * 1_000_000)
        members = [w.dumps({**r, "created_at": stamp})[1:] for r in records]
        self._script(keys=self._keys(session), args=[micros, *members])

    def fill(self, session: str, count: int) -> None:
        start = self._next.get(session, 0)
        for offset in range(0, count, w.FILL_CHUNK):
            self._append(session, [w.record(i, "") for i in range(start + offset, start + min(count, offset + w.FILL_CHUNK))])
        self._next[session] = start + count

    def write(self, session: str) -> None:
        self._append(session, next(self._pairs))

    def load(self, session: str, n: int) -> list[dict[str, Any]]:
        members = self.client.zrevrangebyscore(self._keys(session)[0], "+inf", "-inf", start=0, num=n)
        return [json.loads(m) for m in reversed(members)]

    def tokens(self, session: str, budget: int) -> list[dict[str, Any]]:
        key = self._keys(session)[0]
        chosen: list[dict[str, Any]] = []
        spent, highest = 0, "+inf"
        while True:
            page = [json.loads(m) for m in self.client.zrevrangebyscore(key, highest, "-inf", start=0, num=TOKEN_PAGE)]
            for item in page:
                spent += max(item["tokens"], 1)
                if spent > budget:
                    return chosen[::-1]
                chosen.append(item)
            if len(page) < TOKEN_PAGE:
                return chosen[::-1]
            highest = f"({page[-1]['seq']}"

    def close(self) -> None:
        pass


# --- raw: MongoDB ---------------------------------------------------------------------


class RawMongo:
    """pymongo on a collection with the same two indexes: the newest seq by one indexed read, then insert_many."""

    label = "raw pymongo"

    def __init__(self, db: Any, name: str = "raw_messages") -> None:
        from pymongo import ASCENDING

        self.coll = db[name]
        self.coll.create_index([("agent", ASCENDING), ("session_id", ASCENDING), ("seq", ASCENDING)], unique=True)
        self.coll.create_index([("agent", ASCENDING), ("session_id", ASCENDING), ("status", ASCENDING), ("seq", ASCENDING)])
        self._next: dict[str, int] = {}
        self._pairs = itertools.cycle([[w.record(i, "") for i in (j, j + 1)] for j in range(0, 128, 2)])

    def _append(self, session: str, records: list[dict[str, Any]]) -> None:
        now = w.utcnow()
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        newest = self.coll.find_one({"agent": w.AGENT, "session_id": session}, {"seq": 1}, sort=[("seq", -1)])
        first = newest["seq"] + SEQ_STEP if newest else SEQ_STEP
        docs = [
            {"agent": w.AGENT, "session_id": session, "seq": first + SEQ_STEP * i, "status": "active",
             "role": r["role"], "content": r["content"], "tool_calls": None, "tool_call_id": None, "name": None,
             "run_id": r["run_id"], "tokens": r["tokens"], "created_at": now, "metadata": "{}"}
            for i, r in enumerate(records)
        ]
        self.coll.insert_many(docs, ordered=True)

    def fill(self, session: str, count: int) -> None:
        start = self._next.get(session, 0)
        for offset in range(0, count, w.FILL_CHUNK):
            self._append(session, [w.record(i, "") for i in range(start + offset, start + min(count, offset + w.FILL_CHUNK))])
        self._next[session] = start + count

    def write(self, session: str) -> None:
        self._append(session, next(self._pairs))

    def _page(self, session: str, n: int, before: int | None = None) -> list[dict[str, Any]]:
        query: dict[str, Any] = {"agent": w.AGENT, "session_id": session, "status": "active"}
        if before is not None:
            query["seq"] = {"$lt": before}
        return list(self.coll.find(query).sort("seq", -1).limit(n))

    def load(self, session: str, n: int) -> list[dict[str, Any]]:
        return self._page(session, n)[::-1]

    def tokens(self, session: str, budget: int) -> list[dict[str, Any]]:
        chosen: list[dict[str, Any]] = []
        spent, before = 0, None
        while True:
            page = self._page(session, TOKEN_PAGE, before)
            for doc in page:
                spent += max(doc["tokens"], 1)
                if spent > budget:
                    return chosen[::-1]
                chosen.append(doc)
            if len(page) < TOKEN_PAGE:
                return chosen[::-1]
            before = page[-1]["seq"]

    def close(self) -> None:
        pass


# --- peers (SQLite) -------------------------------------------------------------------


class AgentsSQLiteSession:
    """The OpenAI Agents SDK's ``SQLiteSession`` on a file, driven from one event loop; loads use ``limit``."""

    label = "openai-agents SQLiteSession"
    tokens = None

    def __init__(self, path: str) -> None:
        try:
            from agents.memory import SQLiteSession
        except Exception as exc:  # noqa: BLE001 - any import failure means "not here"
            raise Unavailable(f"openai-agents is not importable ({exc.__class__.__name__}: {exc})") from exc
        self._cls = SQLiteSession
        self.path = path
        self.loop = asyncio.new_event_loop()
        self._sessions: dict[str, Any] = {}
        self._pairs = itertools.cycle([[w.chat(i), w.chat(i + 1)] for i in range(0, 128, 2)])

    def _session(self, session_id: str) -> Any:
        found = self._sessions.get(session_id)
        if found is None:
            found = self._sessions[session_id] = self._cls(session_id, db_path=self.path)
        return found

    def fill(self, session: str, count: int) -> None:
        target = self._session(session)
        for offset in range(0, count, w.FILL_CHUNK):
            items = [w.chat(i) for i in range(offset, min(count, offset + w.FILL_CHUNK))]
            self.loop.run_until_complete(target.add_items(items))

    def write(self, session: str) -> None:
        self.loop.run_until_complete(self._session(session).add_items(next(self._pairs)))

    def load(self, session: str, n: int) -> list[Any]:
        return self.loop.run_until_complete(self._session(session).get_items(limit=n))

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        self.loop.close()


class LangChainSQLHistory:
    """LangChain's ``SQLChatMessageHistory`` on a SQLite file; it has no limit, so a load reads all and slices."""

    label = "langchain SQLChatMessageHistory"
    tokens = None

    def __init__(self, path: str) -> None:
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*langchain.*")
        try:
            import sqlalchemy as sa
            from langchain_community.chat_message_histories import SQLChatMessageHistory
            from langchain_core.messages import AIMessage, HumanMessage
        except Exception as exc:  # noqa: BLE001
            raise Unavailable(f"langchain-community is not importable ({exc.__class__.__name__}: {exc})") from exc
        self._cls = SQLChatMessageHistory
        self._human, self._ai = HumanMessage, AIMessage
        self.engine = sa.create_engine(f"sqlite:///{path}")
        self._sessions: dict[str, Any] = {}
        self._pairs = itertools.cycle([[self._message(i), self._message(i + 1)] for i in range(0, 128, 2)])

    def _message(self, index: int) -> Any:
        item = w.chat(index)
        return (self._human if item["role"] == "user" else self._ai)(content=item["content"])

    def _session(self, session_id: str) -> Any:
        found = self._sessions.get(session_id)
        if found is None:
            found = self._sessions[session_id] = self._cls(session_id=session_id, connection=self.engine)
        return found

    def fill(self, session: str, count: int) -> None:
        target = self._session(session)
        for offset in range(0, count, w.FILL_CHUNK):
            target.add_messages([self._message(i) for i in range(offset, min(count, offset + w.FILL_CHUNK))])

    def write(self, session: str) -> None:
        self._session(session).add_messages(next(self._pairs))

    def load(self, session: str, n: int) -> list[Any]:
        return self._session(session).messages[-n:]

    def close(self) -> None:
        self.engine.dispose()


def peers_for(kind: str, directory: str) -> list[Any]:
    """The peers doing the same work on the same kind of store, each on a file of its own."""
    if kind != "sqlite":
        return []
    found = []
    for cls, name in ((AgentsSQLiteSession, "agents.db"), (LangChainSQLHistory, "langchain.db")):
        try:
            found.append(cls(os.path.join(directory, name)))
        except Unavailable as exc:
            found.append(exc)
    return found


# --- counting what reaches the server -------------------------------------------------


class RoundTrips:
    """Counts what one operation sends: Redis socket writes, MongoDB commands, SQL statements."""

    def __init__(self) -> None:
        self.count = 0
        self.names: list[str] = []

    def hit(self, name: str) -> None:
        self.count += 1
        self.names.append(name)

    def of(self, fn: Callable[[], Any]) -> tuple[int, list[str]]:
        self.count, self.names = 0, []
        fn()
        return self.count, list(self.names)


def count_redis(counter: RoundTrips) -> None:
    """Every ``send_packed_command`` is one request on the socket (a pipeline is one too)."""
    from redis.connection import AbstractConnection

    original = AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> Any:
        counter.hit("redis")
        return original(self, command, check_health)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]


def mongo_listener(counter: RoundTrips) -> Any:
    from pymongo import monitoring

    class _Listener(monitoring.CommandListener):
        def started(self, event: Any) -> None:
            counter.hit(event.command_name)

        def succeeded(self, event: Any) -> None:
            pass

        def failed(self, event: Any) -> None:
            pass

    return _Listener()


def count_sql(engine: Any, counter: RoundTrips) -> None:
    """Statements, commits, rollbacks and pool pings (each a round trip on PostgreSQL). On
    PostgreSQL the statements are counted where psycopg sends them, whoever calls it (SQLAlchemy,
    the store's own path on the driver, the raw baseline); elsewhere as SQLAlchemy runs them."""
    from sqlalchemy import event

    postgres = engine.dialect.name == "postgresql"
    if postgres:
        import psycopg

        execute = psycopg.Cursor.execute

        def counted(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            counter.hit(str(query).split(None, 1)[0].upper())
            return execute(cursor, query, *args, **kwargs)

        psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    else:

        @event.listens_for(engine, "before_cursor_execute")
        def _statement(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            counter.hit(statement.split(None, 1)[0].upper())

    def autocommit(conn: Any) -> bool:
        """In autocommit, psycopg sends no BEGIN, COMMIT or ROLLBACK, though SQLAlchemy's events fire."""
        return postgres and bool(conn.connection.driver_connection.autocommit)

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        if postgres and not autocommit(conn):  # psycopg sends BEGIN itself before the first statement
            counter.hit("BEGIN")

    @event.listens_for(engine, "commit")
    def _commit(conn: Any) -> None:
        if not autocommit(conn):
            counter.hit("COMMIT")

    @event.listens_for(engine, "rollback")
    def _rollback(conn: Any) -> None:
        if not autocommit(conn):
            counter.hit("ROLLBACK")

    ping = engine.dialect.do_ping

    def counted_ping(dbapi_connection: Any) -> Any:
        counter.hit("PING")
        return ping(dbapi_connection)

    engine.dialect.do_ping = counted_ping


# --- what each side sends ----------------------------------------------------------------

_LITERAL = re.compile(r"'(?:[^']|'')*'|\b\d+\b|\bNULL\b")
_QUALIFIER = re.compile(r"\b(?:raw|omnisync)_\w+\.(?=\w)")


def statement_shape(sql: str) -> str:
    """A statement with its values as ``?`` (sqlite3's trace shows them inline), its column
    names unqualified, one space between words, and the baseline's ``raw_`` tables named as
    the store's: two sides sending the same statement have the same shape. A bound value's cast
    is its type without a length (``::VARCHAR(255)`` is ``::VARCHAR``): SQLAlchemy 2.0's floor
    renders one where later releases render the other, and the cast changes no work."""
    sql = _QUALIFIER.sub("", _LITERAL.sub("?", sql))
    sql = sql.replace("::VARCHAR(?)", "::VARCHAR")
    return " ".join(sql.replace("raw_", "omnisync_").split())


@contextlib.contextmanager
def sent_statements(sqlite_connections: Sequence[sqlite3.Connection] = ()) -> Iterator[list[str]]:
    """Every statement sent meanwhile: what psycopg's cursors execute (ours through SQLAlchemy
    and the raw baseline alike) and what the given sqlite3 connections run (an executemany
    runs one per row)."""
    sent: list[str] = []
    for connection in sqlite_connections:
        connection.set_trace_callback(sent.append)
    restore = None
    try:
        import psycopg

        execute = psycopg.Cursor.execute

        def recorded(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append(query.decode() if isinstance(query, bytes) else query if isinstance(query, str) else repr(query))  # the store sends bytes
            return execute(self, query, *args, **kwargs)

        psycopg.Cursor.execute = recorded  # type: ignore[method-assign]
        restore = lambda: setattr(psycopg.Cursor, "execute", execute)  # noqa: E731
    except ImportError:
        pass
    try:
        yield sent
    finally:
        for connection in sqlite_connections:
            connection.set_trace_callback(None)
        if restore is not None:
            restore()
