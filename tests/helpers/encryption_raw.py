"""What a store holds, read and changed with each backend's own driver, past every omnisync read path:
for the tests of encryption at rest (tests/encryption/test_encryption.py)."""

from __future__ import annotations

import json
from typing import Any

from omnisync.stores.base import MemoryStore

SQL_TABLES = ("omnisync_sessions", "omnisync_messages", "omnisync_runs", "omnisync_run_events")


def raw_text(store: MemoryStore) -> str:
    """Every row, key and document the store holds, as one text to search."""
    if store.kind == "in_memory":
        held: Any = store
        return repr((held._sessions, held._runs, held._events))
    if store.kind == "sql":
        import sqlalchemy as sa

        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            return repr([conn.execute(sa.text(f"SELECT * FROM {table}")).all() for table in SQL_TABLES])
    if store.kind == "redis":
        client = store.client  # type: ignore[attr-defined]
        found = []
        for key in client.scan_iter(match=f"{store.prefix}:*", count=1000):  # type: ignore[attr-defined]
            kind = client.type(key).decode()
            read = {"string": client.get, "hash": client.hgetall, "zset": lambda k: client.zrange(k, 0, -1), "set": client.smembers, "list": lambda k: client.lrange(k, 0, -1)}
            found.append((key, read[kind](key)))
        return repr(found)
    database = store.db  # type: ignore[attr-defined]
    return repr([list(database[name].find()) for name in database.list_collection_names()])


def raw_count(store: MemoryStore, agent: str, session_id: str) -> int:
    """How many message rows the session holds, counted by the driver."""
    if store.kind == "in_memory":
        return len(store._sessions[(agent, session_id)].messages)  # type: ignore[attr-defined]
    if store.kind == "sql":
        import sqlalchemy as sa

        with store.engine.connect() as conn:  # type: ignore[attr-defined]
            query = "SELECT count(*) FROM omnisync_messages WHERE agent = :a AND session_id = :s"
            return int(conn.execute(sa.text(query), {"a": agent, "s": session_id}).scalar_one())
    if store.kind == "redis":
        active, inactive, _ = store._session_keys(agent, session_id)  # type: ignore[attr-defined]
        return int(store.client.zcard(active)) + int(store.client.zcard(inactive))  # type: ignore[attr-defined]
    return int(store.messages.count_documents({"agent": agent, "session_id": session_id}))  # type: ignore[attr-defined]


def copy_row(store: MemoryStore, agent: str, session_id: str, seq: int, to_agent: str, to_session: str, to_seq: int) -> None:
    """Copy the message at ``seq`` as the driver holds it to another agent, session or seq (an active message)."""
    if store.kind == "in_memory":
        import dataclasses

        held: Any = store
        source = next(m for m in held._sessions[(agent, session_id)].messages if m.seq == seq)
        target = held._sessions[(to_agent, to_session)]
        copied = dataclasses.replace(source, agent=to_agent, session_id=to_session, seq=to_seq)
        target.replace_all(sorted([*target.messages, copied], key=lambda m: m.seq))
        return
    if store.kind == "sql":
        import sqlalchemy as sa

        columns = "role, content, tool_calls, tool_call_id, name, status, run_id, tokens, created_at_us, metadata"
        with store.engine.begin() as conn:  # type: ignore[attr-defined]
            conn.execute(
                sa.text(
                    f"INSERT INTO omnisync_messages (agent, session_id, seq, {columns}) SELECT :ta, :ts, :tq, {columns} "
                    "FROM omnisync_messages WHERE agent = :a AND session_id = :s AND seq = :q"
                ),
                {"a": agent, "s": session_id, "q": seq, "ta": to_agent, "ts": to_session, "tq": to_seq},
            )
        return
    if store.kind == "redis":
        source = store._session_keys(agent, session_id)[0]  # type: ignore[attr-defined]
        target = store._session_keys(to_agent, to_session)[0]  # type: ignore[attr-defined]
        member = json.loads(store.client.zrangebyscore(source, seq, seq)[0])  # type: ignore[attr-defined]
        member["seq"] = to_seq
        store.client.zadd(target, {json.dumps(member): to_seq})  # type: ignore[attr-defined]
        return
    document = store.messages.find_one({"agent": agent, "session_id": session_id, "seq": seq})  # type: ignore[attr-defined]
    document.pop("_id")
    store.messages.insert_one({**document, "agent": to_agent, "session_id": to_session, "seq": to_seq})  # type: ignore[attr-defined]
