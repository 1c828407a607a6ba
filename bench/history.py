"""Search, the write cost of the search index, and fork: SQLite and PostgreSQL (docs/history.md).

    python bench/history.py                                  # 10^5 messages, SQLite and PostgreSQL
    python bench/history.py --messages 1000000 --stores sqlite
    python bench/history.py --messages 10000 --stores sqlite postgres redis mongodb   # fork by replay too

Rows, each from one run of this script (the load average is printed above the table):

- search p50 / p99: ``store.search_messages`` of 100 queries (one or two words of middling
  frequency) over one agent's ``--messages`` messages (sessions of 1000, ~25 words each from a
  Zipf vocabulary of 20,000 words), best 10.
- append a run (2 msgs): ``store.append`` of a user message and a reply, median of 300, with the
  index (ours) and without it (baseline: the same store with the FTS5 triggers or the GIN index
  dropped and no terms written: the least work that stores the same messages). Goal: under 1.2x.
- agent.run(): a whole run (window of 20, an instant model server: bench/model_server.py), median
  of 200, with and without the index, interleaved: what the index adds to a run.
- with ``--encrypted``, the same search and append rows on an encrypted store
  (``EncryptedStore``), whose index holds keyed hashes of words (docs/history.md, "Search
  with encryption at rest"); the append's baseline is the same encrypted store with no index
  (triggers or GIN index dropped, no word hashed): what the hashed index adds to a sealed write.
- fork N: ``store.copy_session`` of a session of N messages into a new one (the source's
  history read by ``iter_history`` is the baseline: what a client-side copy must at least read);
  on Redis and MongoDB also the replay (``copy_by_replay``) they forked by before.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from omnisync.messages import Message
from omnisync.stores.sql import rows as sql_rows  # the one converter of messages to rows: where the terms are written
from omnisync.stores.base import MemoryStore

VOCABULARY = 20_000
WORDS_PER_MESSAGE = 25
SESSION_LENGTH = 1000
QUERIES = 100
APPENDS = 300
RUNS = 200
AGENT = "bench-history"


def words(seed: int) -> list[str]:
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "bi", "do", "fe", "gu"]
    found: set[str] = set()
    while len(found) < VOCABULARY:
        found.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(found)


VOCAB = words(7)
WEIGHTS = [1 / (rank + 1) for rank in range(VOCABULARY)]


def text(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCAB, weights=WEIGHTS, k=WORDS_PER_MESSAGE)).capitalize() + "."


def fill(store: MemoryStore, count: int, rng: random.Random) -> None:
    for session in range(0, count, SESSION_LENGTH):
        for start in range(0, min(SESSION_LENGTH, count - session), 500):
            batch = [Message(role="user" if i % 2 == 0 else "assistant", content=text(rng), tokens=30) for i in range(min(500, count - session - start))]
            store.append(AGENT, f"s{session // SESSION_LENGTH}", batch)


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def open_store(kind: str, folder: str) -> MemoryStore:
    if kind == "sqlite":
        from omnisync.stores.sql.sqlite import SQLiteStore

        return SQLiteStore(f"sqlite:///{folder}/{uuid.uuid4().hex}.db")
    if kind == "postgres":
        return _postgres_store()
    if kind == "redis":
        from omnisync.stores.redis.store import RedisStore

        return RedisStore.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), prefix=f"bench-{uuid.uuid4().hex[:8]}")
    from omnisync.stores.mongo.store import MongoStore

    return MongoStore.from_url(os.environ.get("MONGODB_URI", "mongodb://127.0.0.1:27017/"), db_name=f"bench_{uuid.uuid4().hex[:8]}")


def drop_index(store: MemoryStore) -> None:
    """The baseline store: no FTS5 triggers (SQLite) or GIN index (PostgreSQL), no terms written."""
    import sqlalchemy as sa

    from omnisync.stores.sql import search as sql_search

    with store.engine.begin() as conn:  # type: ignore[attr-defined]
        if conn.dialect.name == "sqlite":
            for suffix in ("insert", "delete", "update"):
                conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {sql_search.FTS_TABLE}_{suffix}"))
        else:
            conn.execute(sa.text(f"DROP INDEX IF EXISTS {sql_search.GIN_INDEX}"))


def clean(store: MemoryStore, kind: str) -> None:
    store.clear(AGENT)
    store.clear(AGENT + "-w")
    if kind == "mongodb":
        store.db.client.drop_database(store.db.name)  # type: ignore[attr-defined]


def bench_search(kind: str, store: MemoryStore, count: int, rows: list[tuple[str, ...]]) -> None:
    rng = random.Random(11)
    started = time.perf_counter()
    fill(store, count, rng)
    filled = time.perf_counter() - started
    middling = VOCAB[200:2000]
    queries = [[rng.choice(middling)] if i % 2 else [rng.choice(VOCAB[:200]), rng.choice(middling)] for i in range(QUERIES)]
    store.search_messages(AGENT, queries[0], limit=10)  # warm
    samples = [timed(lambda q=q: store.search_messages(AGENT, q, limit=10)) for q in queries]
    rows.append((kind, f"search, {count:,} msgs", f"{percentile(samples, 50) * 1e3:.2f} ms", f"{percentile(samples, 99) * 1e3:.2f} ms", "", f"filled in {filled:.0f} s"))


def bench_writes(kind: str, store: MemoryStore, baseline: MemoryStore, rows: list[tuple[str, ...]]) -> None:
    rng = random.Random(5)
    pairs = [[Message(role="user", content=text(rng), tokens=30), Message(role="assistant", content=text(rng), tokens=30)] for _ in range(APPENDS)]
    ours: list[float] = []
    base: list[float] = []
    real_terms = sql_rows.stored_terms_text
    for i, pair in enumerate(pairs):  # interleaved, so both meet the same load
        ours.append(timed(lambda: store.append(AGENT + "-w", f"w{i % 20}", pair)))
        sql_rows.stored_terms_text = lambda message: None  # type: ignore[assignment]
        try:
            base.append(timed(lambda: baseline.append(AGENT + "-w", f"w{i % 20}", pair)))
        finally:
            sql_rows.stored_terms_text = real_terms
    ours_ms, base_ms = statistics.median(ours) * 1e3, statistics.median(base) * 1e3
    rows.append((kind, "append a run (2 msgs)", f"{ours_ms:.3f} ms", "", f"{base_ms:.3f} ms", f"{ours_ms / base_ms:.2f}x"))


def bench_runs(kind: str, store: MemoryStore, baseline: MemoryStore, rows: list[tuple[str, ...]]) -> None:
    """``agent.run()`` against an instant model server (bench/model_server.py), window of 20, with and without the index."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run import _agent, _model_server

    rng = random.Random(9)
    prompts = [text(rng) for _ in range(RUNS)]
    real_terms = sql_rows.stored_terms_text
    with _model_server() as url:
        ours_agent, base_agent = _agent(store, url), _agent(baseline, url)
        ours: list[float] = []
        base: list[float] = []
        for i, prompt in enumerate(prompts):
            ours.append(timed(lambda: ours_agent.run(prompt, session_id=f"run{i % 10}")))
            sql_rows.stored_terms_text = lambda message: None  # type: ignore[assignment]
            try:
                base.append(timed(lambda: base_agent.run(prompt, session_id=f"run{i % 10}")))
            finally:
                sql_rows.stored_terms_text = real_terms
        ours_agent.cleanup()
        base_agent.cleanup()
    ours_ms, base_ms = statistics.median(ours) * 1e3, statistics.median(base) * 1e3
    rows.append((kind, "agent.run() (instant model)", f"{ours_ms:.3f} ms", "", f"{base_ms:.3f} ms", f"{ours_ms / base_ms:.2f}x"))


def bench_encrypted(kind: str, folder: str, count: int, rows: list[tuple[str, ...]]) -> None:
    """Search and append on an encrypted store: its index of keyed hashes, and what that index adds to a sealed append."""
    from omnisync.encryption import Encryption
    from omnisync.run_state.data_keys import create as save_data_key
    from omnisync.stores.encrypted import EncryptedStore

    encryption = Encryption({"bench": os.urandom(32)}, "bench")
    store = EncryptedStore(open_store(kind, folder), encryption, save_data_key=save_data_key)
    bare = open_store(kind, folder)
    drop_index(bare)
    bare.keeps_search_index = False  # type: ignore[misc]  # so the encrypting store hashes no word for it
    baseline = EncryptedStore(bare, encryption, save_data_key=save_data_key)
    try:
        bench_search(f"{kind}, encrypted", store, count, rows)
        bench_writes(f"{kind}, encrypted", store, baseline, rows)
    finally:
        for each in (store, baseline):
            clean(each, kind)
            each.close()


def bench_fork(kind: str, store: MemoryStore, length: int, rows: list[tuple[str, ...]]) -> None:
    rng = random.Random(3)
    session = f"fork-src-{length}"
    for start in range(0, length, 500):
        store.append(AGENT, session, [Message(role="user", content=text(rng), tokens=30) for _ in range(min(500, length - start))])
    took = timed(lambda: store.copy_session(AGENT, session, f"fork-{uuid.uuid4().hex[:8]}", last_seq=2**31 - 1))
    read = timed(lambda: sum(1 for _ in store.iter_history(AGENT, session, include_inactive=True)))
    rows.append((kind, f"fork {length:,} msgs", f"{took * 1e3:.0f} ms", "", f"{read * 1e3:.0f} ms (read only)", f"{took / read:.2f}x"))
    if kind in ("redis", "mongodb"):  # what a fork cost before these stores copied on their own: a replay
        from omnisync.stores.copy_by_replay import copy_by_replay

        replayed = timed(lambda: copy_by_replay(store, AGENT, session, f"fork-{uuid.uuid4().hex[:8]}", 2**31 - 1))
        rows.append((kind, f"fork {length:,} msgs by replay", f"{replayed * 1e3:.0f} ms", "", "", f"copy {took / replayed:.2f}x of replay"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres", "redis", "mongodb"])
    parser.add_argument("--encrypted", action="store_true", help="also search and append on an encrypted store (SQL stores)")
    parser.add_argument("--fork", type=int, nargs="*", default=[10_000, 100_000], help="session lengths to fork (none: no fork rows)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, cpus: {os.cpu_count()}")
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.stores:
            store = open_store(kind, folder)
            try:
                if kind in ("sqlite", "postgres"):
                    bench_search(kind, store, args.messages, rows)
                    baseline = open_store(kind, folder)
                    drop_index(baseline)
                    try:
                        bench_writes(kind, store, baseline, rows)
                        bench_runs(kind, store, baseline, rows)
                    finally:
                        clean(baseline, kind)
                        baseline.close()
                    if args.encrypted:
                        bench_encrypted(kind, folder, args.messages, rows)
                for length in args.fork:
                    bench_fork(kind, store, length, rows)
            finally:
                clean(store, kind)
                store.close()
    for name in _DATABASES:
        _drop_database(name)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    header = ("store", "row", "ours p50 / median", "ours p99", "baseline", "ratio / note")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |")


_DATABASES: list[str] = []


def _postgres_store() -> MemoryStore:
    """A store on a database of its own (dropped at the end), so no other user's rows are in its tables."""
    import sqlalchemy as sa

    from omnisync.stores.sql.store import SQLStore

    url = sa.engine.make_url(os.environ["DATABASE_URL_POSTGRES"])
    name = f"bench_history_{uuid.uuid4().hex[:8]}"
    _admin(f'CREATE DATABASE "{name}"')
    _DATABASES.append(name)
    return SQLStore.from_url(url.set(database=name).render_as_string(hide_password=False))


def _drop_database(name: str) -> None:
    _admin(f'DROP DATABASE IF EXISTS "{name}"')


def _admin(statement: str) -> None:
    import sqlalchemy as sa

    admin = sa.create_engine(os.environ["DATABASE_URL_POSTGRES"], isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(statement))
    admin.dispose()


if __name__ == "__main__":
    sys.exit(main())
