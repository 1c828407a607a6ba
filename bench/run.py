"""omnisync's store and run benchmark: medians and ratios at 10^2..10^5 messages per session.

    python bench/run.py                       # every store, 10^2..10^5 (5-6 minutes on 2 cores)
    python bench/run.py --quick               # 10^2 and 10^4, fewer repetitions
    python bench/run.py --stores sqlite,redis
    python bench/run.py --lengths 100,1000

Each store runs in a worker process of its own (so its memory figure is its own); the
instant model server runs in another. The table goes to stdout and to bench/results.md.
It is a measurement, not a test: it asserts nothing. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import workload as w  # noqa: E402

STORES = ("in_memory", "sqlite", "postgres", "redis", "mongodb")
# Ours ÷ raw sqlite3, at most: loads are issue 15's target (1.3x), a write commits a transaction of ours.
SQLITE_LIMITS = {"write": 2.0, "load20": 1.3, "load200": 1.3}
STORE_TITLES = {
    "in_memory": "in-process",
    "sqlite": "SQLite file",
    "postgres": "PostgreSQL",
    "redis": "Redis",
    "mongodb": "MongoDB (FerretDB)",
}
FULL_LENGTHS = (100, 1_000, 10_000, 100_000)
QUICK_LENGTHS = (100, 10_000)
# FerretDB v1 (SQLite backend) pushes no filter, sort or limit down: every query scans the
# whole collection (~0.4 ms a document here), so 10^4 takes seconds an operation and 10^5 a
# minute. It runs to 10^3 unless --mongodb-lengths says otherwise.
MONGODB_DEFAULT_MAX = 1_000
FULL_BUDGET = w.Budget(seconds=1.0, max_reps=200, min_reps=5, warmup=5)
QUICK_BUDGET = w.Budget(seconds=0.3, max_reps=50, min_reps=3, warmup=3)
SLOW_BUDGET = w.Budget(seconds=1.0, max_reps=5, min_reps=2, warmup=1)  # FerretDB
GROWTH = 0.2  # a measured write or run lands in a session holding N to 1.2 N messages
RUN_WINDOW = 20  # the agent's memory_config: sliding_window of 20 messages
SYSTEM = "You are a helpful assistant for a software team. Answer briefly and precisely."

OPS = (
    ("write", "write (1 run: user + reply)"),
    ("load20", "load window of 20"),
    ("load200", "load window of 200"),
    ("tokens2k", f"load token window {w.TOKEN_BUDGET:,}"),
    ("tokens20k", f"load token window {w.LARGE_TOKEN_BUDGET:,}"),
    ("run", f"agent run() (window {RUN_WINDOW}, instant model)"),
    ("http_requests", "  model HTTP POST alone (requests)"),
    ("http_client", "  model HTTP POST alone (http.client)"),
)
OURS = "omnisync"


# --- the worker: one store ---------------------------------------------------------------


def sessions_for(length: int, budget: w.Budget) -> int:
    """Enough sessions that the measured writes and runs keep each within N..1.2 N messages."""
    added = 2 * 2 * w.calls_per_operation(budget)  # writes and runs, two messages each
    return max(1, math.ceil(added / (GROWTH * length)))


class Setup:
    """Our store, the raw baseline and the peers for one kind, and how to size and clean them."""

    def __init__(self, kind: str, directory: str, counter: Any) -> None:
        import backends as b

        self.kind = kind
        self.notes: list[str] = []
        self.cleanups: list[Any] = []
        self.peers: list[Any] = []
        self.skipped: dict[str, str] = {}
        self.filled: Any = lambda: None  # called once every contender has filled its sessions
        if kind == "in_memory":
            from omnisync.stores.in_memory import InMemoryStore

            self.store = InMemoryStore()
            self.raw = b.RawInProcess()
            self.storage = lambda: None
        elif kind == "sqlite":
            from omnisync.stores.registry import KINDS

            self.path = os.path.join(directory, "omnisync.db")
            self.store = KINDS["sql"].build(f"sqlite:///{self.path}", {})  # what MemoryRouter("sql", url=...) opens
            b.count_sql(self.store.engine, counter)
            own = self.store._threads.get(self.store._describe)  # type: ignore[attr-defined]  # the sqlite3 path's connection
            own.set_trace_callback(lambda sql: counter.hit(sql.split(None, 1)[0].upper()))
            self.raw = b.RawSQLite(os.path.join(directory, "raw.db"), counter)
            self.storage = self._sqlite_storage
            for peer in b.peers_for("sqlite", directory):
                if isinstance(peer, Exception):
                    self.skipped[str(peer).split(" is not")[0]] = str(peer)
                else:
                    self.peers.append(peer)
        elif kind == "postgres":
            self._postgres(b, counter)
        elif kind == "redis":
            self._redis(b, counter)
        elif kind == "mongodb":
            self._mongodb(b, counter)
        else:
            raise ValueError(kind)

    # PostgreSQL: a database of the benchmark's own, so nothing of the tests' is touched.
    def _postgres(self, b: Any, counter: Any) -> None:
        import psycopg
        from sqlalchemy.engine import make_url

        from omnisync.stores.registry import KINDS
        from omnisync.stores.sql.store import SQLStore

        url = os.environ.get("DATABASE_URL_POSTGRES")
        if not url:
            raise b.Unavailable("DATABASE_URL_POSTGRES is not set")
        given = make_url(url)
        libpq = given.set(drivername="postgresql")
        bench_db = "omnisync_bench"
        try:
            with psycopg.connect(libpq.render_as_string(hide_password=False), autocommit=True, connect_timeout=5) as admin:
                if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (bench_db,)).fetchone():
                    admin.execute(f'CREATE DATABASE "{bench_db}"')
        except psycopg.Error as exc:
            raise b.Unavailable(f"PostgreSQL at {given.host}:{given.port} is not usable: {exc}") from exc
        conninfo = libpq.set(database=bench_db).render_as_string(hide_password=False)
        tables = "omnisync_messages, omnisync_sessions, omnisync_runs, omnisync_schema, raw_messages, raw_sessions"
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {tables}")
        self.store = KINDS["sql"].build(given.set(database=bench_db).render_as_string(hide_password=False), {})
        assert isinstance(self.store, SQLStore)
        b.count_sql(self.store.engine, counter)
        self.raw = b.RawPostgres(conninfo)
        self._conninfo = conninfo

        def drop() -> None:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(f"DROP TABLE IF EXISTS {tables}")

        self.cleanups.append(drop)
        self.storage = self._postgres_storage

        def analyze() -> None:
            """Statistics for both sides' freshly filled tables, so neither waits on autovacuum for a good plan."""
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute("ANALYZE omnisync_messages, omnisync_sessions, raw_messages, raw_sessions")

        self.filled = analyze

    def _redis(self, b: Any, counter: Any) -> None:
        import redis

        from omnisync.stores.registry import KINDS

        url = os.environ.get("REDIS_URL")
        if not url:
            raise b.Unavailable("REDIS_URL is not set")
        self.prefix = f"omnisync-bench-{os.getpid()}"
        client = redis.Redis.from_url(url, socket_connect_timeout=5)
        try:
            client.ping()
        except redis.RedisError as exc:
            raise b.Unavailable(f"Redis at {url} is not reachable: {exc}") from exc
        self.client = client
        b.count_redis(counter)
        self.store = KINDS["redis"].build(url, {"prefix": self.prefix})
        self.raw = b.RawRedis(client, f"{self.prefix}-raw")
        self.storage = self._redis_storage

        def drop() -> None:
            for pattern in (f"{self.prefix}:*", f"{self.prefix}-raw:*"):
                batch = []
                for key in client.scan_iter(match=pattern, count=1000):
                    batch.append(key)
                    if len(batch) >= 1000:
                        client.delete(*batch)
                        batch = []
                if batch:
                    client.delete(*batch)

        self.cleanups.append(drop)

    def _mongodb(self, b: Any, counter: Any) -> None:
        import pymongo

        from omnisync.stores.registry import KINDS

        uri = os.environ.get("MONGODB_URI")
        if not uri:
            raise b.Unavailable("MONGODB_URI is not set")
        self.db_name = "omnisync_bench"
        with pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000) as probe:
            try:
                info = probe.server_info()
            except pymongo.errors.PyMongoError as exc:
                raise b.Unavailable(f"MongoDB at {uri} is not reachable: {exc}") from exc
            probe.drop_database(self.db_name)
        if info.get("ferretdbVersion"):
            self.notes.append(f"server: FerretDB {info['ferretdbVersion']} (wire version {info.get('version')})")
        options = {"db_name": self.db_name, "collection": "messages", "event_listeners": [b.mongo_listener(counter)]}
        self.store = KINDS["mongodb"].build(uri, options)
        client: Any = self.store.client  # type: ignore[attr-defined]
        self.client = client
        self.raw = b.RawMongo(client[self.db_name])
        self.storage = self._mongo_storage
        self.cleanups.append(lambda: client.drop_database(self.db_name))

    # --- bytes per message ---------------------------------------------------------------

    def _sqlite_storage(self) -> dict[str, Any]:
        import sqlite3

        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            messages = conn.execute("SELECT count(*) FROM omnisync_messages").fetchone()[0]
            try:
                rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
                size = sum(n for name, n in rows if "omnisync_messages" in name or "omnisync_sessions" in name)
                how = "dbstat: pages of omnisync_messages, its indexes and the seq counters"
            except sqlite3.OperationalError:
                page = conn.execute("PRAGMA page_size").fetchone()[0]
                size = page * conn.execute("PRAGMA page_count").fetchone()[0]
                how = "file pages (no dbstat): includes run records"
        finally:
            conn.close()
        return {"bytes": size, "messages": messages, "how": how}

    def _postgres_storage(self) -> dict[str, Any]:
        import psycopg

        with psycopg.connect(self._conninfo, autocommit=True) as conn:
            size = conn.execute(
                "SELECT pg_total_relation_size('omnisync_messages') + pg_total_relation_size('omnisync_sessions')"
            ).fetchone()[0]
            messages = conn.execute("SELECT count(*) FROM omnisync_messages").fetchone()[0]
        return {"bytes": int(size), "messages": int(messages), "how": "pg_total_relation_size (table, TOAST, indexes)"}

    def _redis_storage(self) -> dict[str, Any]:
        client = self.client
        size = messages = 0
        for key in client.scan_iter(match=f"{self.prefix}:*", count=1000):
            name = key.decode()
            if ":run:" in name or name.endswith(":runs"):
                continue  # run records are not messages
            size += int(client.memory_usage(key, samples=0) or 0)
            if name.endswith(":active") or name.endswith(":inactive"):
                messages += int(client.zcard(key))
        return {"bytes": size, "messages": messages, "how": "MEMORY USAGE SAMPLES 0 of every message key"}

    def _mongo_storage(self) -> dict[str, Any]:
        stats = self.client[self.db_name].command({"collStats": "messages"})
        size = int(stats.get("totalSize") or (stats.get("storageSize", 0) + stats.get("totalIndexSize", 0)))
        return {"bytes": size, "messages": int(stats.get("count", 0)), "how": "collStats totalSize (data + indexes)"}

    def close(self) -> None:
        for contender in (self.raw, *self.peers):
            with contextlib.suppress(Exception):
                contender.close()
        for cleanup in self.cleanups:
            with contextlib.suppress(Exception):
                cleanup()
        with contextlib.suppress(Exception):
            self.store.close()


def _agent(store: Any, model_url: str) -> Any:
    from omnisync import MemoryRouter, OmniCoreAgent

    return OmniCoreAgent(
        name=w.AGENT,
        system_instruction=SYSTEM,
        model_config={"provider": "openai", "model": "gpt-4o-mini", "base_url": model_url, "api_key": "bench", "max_retries": 0},
        memory_router=MemoryRouter(store=store),
        agent_config={"memory_config": {"mode": "sliding_window", "value": RUN_WINDOW}},
    )


def _http_floors(model_url: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    """The model call alone, with the body a run sends: what run() cannot go below."""
    import http.client
    from urllib.parse import urlparse

    import requests

    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "system", "content": SYSTEM}, *history, w.chat(0)]})
    session = requests.Session()
    session.headers["Authorization"] = "Bearer bench"
    url = f"{model_url}/chat/completions"
    parsed = urlparse(model_url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port)

    def with_requests() -> Any:
        return session.post(url, data=body, headers={"Content-Type": "application/json"}, timeout=60).json()

    def with_http_client() -> Any:
        connection.request("POST", f"{parsed.path}/chat/completions", body=body, headers={"Content-Type": "application/json"})
        return json.loads(connection.getresponse().read())

    return {"http_requests": with_requests, "http_client": with_http_client}


def worker(kind: str, lengths: list[int], budget: w.Budget, model_url: str) -> dict[str, Any]:
    import backends as b

    result: dict[str, Any] = {
        "kind": kind,
        "lengths": lengths,
        "ops": {},
        "round_trips": {},
        "storage": {},
        "fill_seconds": {},
        "sessions": {},
        "checks": {},
        "skipped": {},
        "notes": [],
        "memory": {"start": w.process_memory()},
    }
    counter = b.RoundTrips()
    directory = tempfile.mkdtemp(prefix=f"omnisync-bench-{kind}-")
    try:
        setup = Setup(kind, directory, counter)
    except b.Unavailable as exc:
        shutil.rmtree(directory, ignore_errors=True)
        result["unavailable"] = str(exc)
        return result
    result["skipped"].update(setup.skipped)
    result["notes"] += setup.notes
    ours, raw = b.Ours(setup.store), setup.raw
    agent = _agent(setup.store, model_url)
    result["notes"].append(f"agent token counter: {getattr(agent.token_counter, '__name__', 'tiktoken (offline cache)')}")

    def record(op: str, label: str, length: int, sample: w.Sample) -> None:
        result["ops"].setdefault(op, {}).setdefault(label, {})[str(length)] = {"median_ns": sample.median_ns, "reps": sample.reps}

    def log(message: str) -> None:
        print(f"[{kind}] {message}", file=sys.stderr, flush=True)

    try:
        sessions: dict[int, list[str]] = {}
        for length in lengths:  # ours first, so its storage and memory figures are its own
            sessions[length] = [f"len{length}-s{k}" for k in range(sessions_for(length, budget))]
            result["sessions"][str(length)] = len(sessions[length])
            started = time.perf_counter()
            for session in sessions[length]:
                ours.fill(session, length)
            result["fill_seconds"][str(length)] = round(time.perf_counter() - started, 2)
            storage = setup.storage()  # cumulative: every session filled so far
            if storage is not None:
                storage["bytes_per_message"] = storage["bytes"] / max(storage["messages"], 1)
                result["storage"][str(length)] = storage
            log(f"{length:>7,} messages x {len(sessions[length])} sessions filled in {result['fill_seconds'][str(length)]} s")
        result["memory"]["after_largest"] = w.process_memory()
        result["memory"]["messages_held"] = sum(n * len(s) for n, s in sessions.items())
        for contender in (raw, *setup.peers):
            started = time.perf_counter()
            for length in lengths:
                for session in sessions[length]:
                    contender.fill(session, length)
            log(f"{contender.label} filled in {time.perf_counter() - started:.1f} s")
        setup.filled()
        contenders = [ours, raw, *setup.peers]

        def measure(op: str, fns: dict[tuple[str, int], Any]) -> None:
            """Every contender at every length, interleaved call by call: noise hits them alike."""
            keyed = {f"{label}@{length}": fn for (label, length), fn in fns.items()}
            for key, sample in w.measure(keyed, budget).items():
                label, _, length = key.rpartition("@")
                record(op, label, int(length), sample)

        for op, n in (("load20", 20), ("load200", 200)):
            measure(op, {(c.label, L): (lambda c=c, L=L, n=n: c.load(sessions[L][0], n)) for c in contenders for L in lengths})
            result["checks"][op] = {str(L): {c.label: len(c.load(sessions[L][0], n)) for c in contenders} for L in lengths}
            log(f"{op} measured")
        for op, tokens in (("tokens2k", w.TOKEN_BUDGET), ("tokens20k", w.LARGE_TOKEN_BUDGET)):
            measure(op, {(c.label, L): (lambda c=c, L=L, t=tokens: c.tokens(sessions[L][0], t)) for c in (ours, raw) for L in lengths})
            result["checks"][op] = {str(L): {c.label: len(c.tokens(sessions[L][0], tokens)) for c in (ours, raw)} for L in lengths}
            log(f"{op} measured")

        if kind != "in_memory":
            for length in sorted({lengths[0], lengths[-1]}):
                first = sessions[length][0]
                result["round_trips"][str(length)] = {
                    "write": {c.label: counter.of(lambda c=c: c.write(first)) for c in (ours, raw)},
                    "load20": {c.label: counter.of(lambda c=c: c.load(first, 20)) for c in (ours, raw)},
                    "load200": {c.label: counter.of(lambda c=c: c.load(first, 200)) for c in (ours, raw)},
                    "tokens2k": {c.label: counter.of(lambda c=c: c.tokens(first, w.TOKEN_BUDGET)) for c in (ours, raw)},
                    "tokens20k": {c.label: counter.of(lambda c=c: c.tokens(first, w.LARGE_TOKEN_BUDGET)) for c in (ours, raw)},
                }

        rotations = {(c.label, L): itertools.cycle(sessions[L]) for c in contenders for L in lengths}
        measure("write", {(c.label, L): (lambda c=c, L=L: c.write(next(rotations[(c.label, L)]))) for c in contenders for L in lengths})
        log("write measured")

        runs = {L: itertools.cycle(sessions[L]) for L in lengths}
        fns: dict[tuple[str, int], Any] = {(OURS, L): (lambda L=L: agent.run(w.USER_TEXTS[0], session_id=next(runs[L]))) for L in lengths}
        floors = _http_floors(model_url, [m.to_chat() for m in ours.load(sessions[lengths[0]][0], RUN_WINDOW)])
        keyed = {f"{OURS}@{L}": fn for (_, L), fn in fns.items()} | floors
        for key, sample in w.measure(keyed, budget).items():
            if "@" in key:
                record("run", OURS, int(key.rpartition("@")[2]), sample)
            else:
                record(key, "floor", lengths[0], sample)  # it does not depend on the session: one figure
        if kind != "in_memory":
            for length in sorted({lengths[0], lengths[-1]}):
                first = sessions[length][0]
                result["round_trips"][str(length)]["run"] = {OURS: counter.of(lambda: agent.run(w.USER_TEXTS[0], session_id=first))}
        log("runs measured")
        result["memory"]["end"] = w.process_memory()
    except Exception:  # noqa: BLE001 - report what broke, keep what was measured
        result["error"] = traceback.format_exc()
    finally:
        with contextlib.suppress(Exception):
            agent.cleanup()
        setup.close()
        shutil.rmtree(directory, ignore_errors=True)
    return result


# --- the table ---------------------------------------------------------------------------


def _power(length: int) -> str:
    exponent = round(math.log10(length))
    return f"10^{exponent}" if 10**exponent == length else f"{length:,}"


def _us(ns: float | None) -> str:
    if ns is None:
        return "–"
    us = ns / 1000
    if us < 10:
        return f"{us:.2f}"
    if us < 100:
        return f"{us:.1f}"
    return f"{us:,.0f}"


def _median(result: dict[str, Any], op: str, label: str, length: int) -> float | None:
    entry = result["ops"].get(op, {}).get(label, {}).get(str(length))
    return entry["median_ns"] if entry else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _flatness(result: dict[str, Any], op: str, label: str = OURS) -> tuple[float | None, int, int]:
    """Largest length's median over the smallest's, from the first length whose window is full.

    At 10^2 a window of 200 (or of 20,000 tokens) is the whole session, 100 messages: less work
    than at 10^5. So the ratio starts at the first length whose window is bounded by its limit,
    not by the session's end (it returns fewer messages than the session holds).
    """
    measured = [n for n in result["lengths"] if _median(result, op, label, n) is not None]
    if len(measured) < 2:
        return None, 0, 0
    counts = result.get("checks", {}).get(op, {})
    returned = {n: counts.get(str(n), {}).get(label) for n in measured}
    # full: the window's bound, not the session's end, stopped it
    low = next((n for n in measured if returned[n] is None or returned[n] < n), measured[0])
    if low == measured[-1]:
        return None, 0, 0
    return _ratio(_median(result, op, label, measured[-1]), _median(result, op, label, low)), low, measured[-1]


def _labels(result: dict[str, Any], op: str) -> list[str]:
    found = list(result["ops"].get(op, {}))
    return sorted(found, key=lambda label: (label != OURS, label != "floor", label))


def render(results: list[dict[str, Any]], lengths: list[int], meta: dict[str, Any]) -> str:
    head = [_power(n) for n in lengths]
    first, last = lengths[0], lengths[-1]
    lines = [
        "| Store | Operation | Implementation | " + " | ".join(head) + f" | {_power(last)} ÷ {_power(first)} |",
        "|" + "---|" * (4 + len(lengths)),
    ]
    for result in results:
        title = STORE_TITLES[result["kind"]]
        if result.get("unavailable"):
            lines.append(f"| {title} | – | skipped: {result['unavailable']} |" + " |" * (len(lengths) + 1))
            continue
        for op, op_title in OPS:
            for label in _labels(result, op):
                cells = []
                for n in lengths:
                    value = _median(result, op, label, n)
                    if value is None:
                        cells.append("n/a" if n not in result["lengths"] else "–")
                        continue
                    cell = _us(value)
                    if label not in (OURS, "floor"):
                        ratio = _ratio(_median(result, op, OURS, n), value)
                        cell += f" (×{ratio:.2f})" if ratio else ""
                    cells.append(cell)
                flat, low, high = _flatness(result, op, label)
                flat_cell = f"{flat:.2f}" if flat else "–"
                notes = [f"from {_power(low)}"] if flat and low != first else []
                notes += [f"to {_power(high)}"] if flat and high != last else []
                flat_cell += f" ({', '.join(notes)})" if notes else ""
                name = "ours" if label == OURS else ("floor" if label == "floor" else label)
                lines.append(f"| {title} | {op_title} | {name} | " + " | ".join(cells) + f" | {flat_cell} |")
        storage = result.get("storage", {})
        if storage:
            cells = [f"{storage[str(n)]['bytes_per_message']:,.0f}" if str(n) in storage else "n/a" for n in lengths]
            lines.append(f"| {title} | bytes stored per message | ours | " + " | ".join(cells) + " | |")
        memory = result.get("memory", {}).get("after_largest")
        if memory:
            start = result["memory"]["start"].get("VmRSS", 0)
            held = result["memory"].get("messages_held", 0)
            cells = ["" for _ in lengths[:-1]] + [f"{memory.get('VmRSS', 0):,.0f} MiB"]
            if result["lengths"][-1] != last:
                cells[-1] = f"n/a ({memory.get('VmRSS', 0):,.0f} MiB at {_power(result['lengths'][-1])})"
            lines.append(
                f"| {title} | process RSS after the largest fill ({held:,} messages; {start:,.0f} MiB at start) | ours | "
                + " | ".join(cells) + " | |"
            )
    return "\n".join(lines)


def _round_trip_table(results: list[dict[str, Any]]) -> str:
    lines = ["| Store | Operation | ours | raw |", "|---|---|---|---|"]
    for result in results:
        trips = result.get("round_trips", {})
        if not trips:
            continue
        largest = trips[max(trips, key=int)]
        for op, by_label in largest.items():
            cells = []
            for label in (OURS, next((k for k in by_label if k != OURS), None)):
                if label is None or label not in by_label:
                    cells.append("–")
                    continue
                count, names = by_label[label]
                cells.append(f"{count} ({', '.join(names)})" if len(names) <= 8 else f"{count}")
            lines.append(f"| {STORE_TITLES[result['kind']]} | {op} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _targets(results: list[dict[str, Any]], lengths: list[int]) -> list[str]:
    by_kind = {r["kind"]: r for r in results if not r.get("unavailable")}
    first, last = lengths[0], lengths[-1]
    lines = []

    def mark(ok: bool | None) -> str:
        return "n/a" if ok is None else ("MET" if ok else "MISSED")

    # flat
    misses, checked = [], 0
    for kind, result in by_kind.items():
        for op in ("write", "load20", "load200", "tokens2k", "tokens20k", "run"):
            ratio, low, high = _flatness(result, op)
            if ratio is None:
                continue
            checked += 1
            if ratio > 1.3:
                span = "" if (low, high) == (first, last) else f" ({_power(high)} ÷ {_power(low)})"
                misses.append(f"{STORE_TITLES[kind]} {op} {ratio:.2f}{span}")
    capped = [f"{STORE_TITLES[k]} only to {_power(r['lengths'][-1])}" for k, r in by_kind.items() if r["lengths"][-1] != last]
    lines.append(
        f"- Flat (every store and operation, {_power(last)} ≤ 1.3 × {_power(first)}): "
        f"{mark(not misses if checked else None)}" + (f"; over: {', '.join(misses)}" if misses else "")
        + (f" ({'; '.join(capped)})" if capped else "")
    )
    # close to the metal
    sqlite = by_kind.get("sqlite")
    if sqlite:
        parts, ok = [], True
        for op, limit in SQLITE_LIMITS.items():
            ratios = [_ratio(_median(sqlite, op, OURS, n), _median(sqlite, op, "raw sqlite3", n)) for n in sqlite["lengths"]]
            worst = max((r for r in ratios if r), default=None)
            ok = ok and worst is not None and worst <= limit
            parts.append(f"{op} worst ×{worst:.2f} (limit {limit})" if worst else f"{op} –")
        limits = "/".join(f"{limit:g}x" for limit in SQLITE_LIMITS.values())
        lines.append(f"- SQLite {'/'.join(SQLITE_LIMITS)} within {limits} of raw sqlite3 at every length: {mark(ok)}: " + ", ".join(parts))
    for kind in ("redis", "mongodb"):
        result = by_kind.get(kind)
        if not result or not result.get("round_trips"):
            continue
        trips = result["round_trips"][max(result["round_trips"], key=int)]
        counts = {op: trips[op][OURS][0] for op in ("load20", "load200", "tokens2k") if op in trips}
        lines.append(
            f"- {STORE_TITLES[kind]} window loads in one round trip: {mark(all(c == 1 for c in counts.values()))}: "
            + ", ".join(f"{op} {c}" for op, c in counts.items())
        )
    if sqlite:
        at = 10_000 if 10_000 in sqlite["lengths"] else sqlite["lengths"][-1]
        for peer in ("openai-agents SQLiteSession", "langchain SQLChatMessageHistory"):
            if peer not in sqlite["ops"].get("write", {}):
                lines.append(f"- Ahead of {peer}: n/a (not importable)")
                continue
            speedups = {op: _ratio(_median(sqlite, op, peer, at), _median(sqlite, op, OURS, at)) for op in ("write", "load20")}
            ok = all(s is not None and s >= 3 for s in speedups.values())
            target = " (target)" if peer.startswith("openai") else " (for reference)"
            lines.append(
                f"- ≥3x faster than {peer} at {_power(at)}{target}: {mark(ok)}: "
                + ", ".join(f"{op} {s:.2f}x" for op, s in speedups.items() if s)
            )
        run_last = _median(sqlite, "run", OURS, sqlite["lengths"][-1])
        run_first = _median(sqlite, "run", OURS, sqlite["lengths"][0])
        if run_last:
            lines.append(
                f"- SQLite run() < 3 ms median at {_power(sqlite['lengths'][-1])}: {mark(run_last < 3e6)} ({_us(run_last)} µs)"
            )
            flat = _ratio(run_last, run_first)
            lines.append(
                f"- SQLite run() {_power(sqlite['lengths'][-1])} ≤ 1.3 × {_power(sqlite['lengths'][0])}: "
                f"{mark(flat <= 1.3 if flat else None)}" + (f" ({flat:.2f})" if flat else "")
            )
    modes, checked = [], 0
    for kind, result in by_kind.items():
        for op in ("load20", "load200", "tokens2k", "tokens20k"):
            ratio, low, high = _flatness(result, op)
            if ratio is None:
                continue
            checked += 1
            if ratio > 1.3:
                span = "" if (low, high) == (first, last) else f" ({_power(high)} ÷ {_power(low)})"
                modes.append(f"{STORE_TITLES[kind]} {op} {ratio:.2f}{span}")
    lines.append(
        f"- Issue 4, both memory modes flat on every backend (sliding_window = load 20/200, token_budget = token windows): "
        f"{mark(not modes if checked else None)}" + (f"; over: {', '.join(modes)}" if modes else "")
    )
    return lines


def report(results: list[dict[str, Any]], lengths: list[int], meta: dict[str, Any]) -> str:
    parts = [
        "## Results",
        "",
        f"Medians in µs ({meta.get('revision', 'unknown revision')}; {meta['when']}, {meta['machine']}; {meta['mode']}; "
        f"whole run {meta['seconds']:.0f} s). "
        "In a raw or peer row, (×r) is ours ÷ it: below 1 we are faster. The last column is the "
        f"operation's own {_power(lengths[-1])} ÷ {_power(lengths[0])}. Messages average "
        f"{w.mean_chars():.0f} characters ({w.mean_tokens():.0f} tokens as counted at write).",
        "",
        render(results, lengths, meta),
        "",
        "### Targets",
        "",
        *_targets(results, lengths),
        "",
        "### Requests per operation (at the largest length)",
        "",
        "Redis: socket requests; MongoDB: commands; SQL: statements, BEGIN/COMMIT and pool pings as SQLAlchemy issues them.",
        "",
        _round_trip_table(results),
    ]
    notes = []
    for result in results:
        title = STORE_TITLES[result["kind"]]
        for note in result.get("notes", []):
            notes.append(f"- {title}: {note}")
        for name, reason in result.get("skipped", {}).items():
            notes.append(f"- {title}: skipped {name}: {reason}")
        if result.get("sessions"):
            spread = ", ".join(f"{_power(int(n))}: {k}" for n, k in result["sessions"].items())
            notes.append(f"- {title}: sessions per length (writes and runs rotate over them): {spread}; fill s: "
                         + ", ".join(f"{_power(int(n))}: {s}" for n, s in result["fill_seconds"].items()))
        for op, by_length in result.get("checks", {}).items():
            for n, counts in by_length.items():
                if len(set(counts.values())) > 1:
                    notes.append(f"- {title}: {op} at {_power(int(n))} returned different counts: {counts}")
        if result.get("error"):
            notes.append(f"- {title}: the worker failed part-way:\n\n```\n{result['error'].strip()}\n```")
    if notes:
        parts += ["", "### Notes", "", *notes]
    return "\n".join(parts) + "\n"


# --- the driver --------------------------------------------------------------------------


def _services_env() -> None:
    """Fill the servers' URLs (REDIS_URL, DATABASE_URL_POSTGRES, ...) from scripts/services.sh env if unset."""
    wanted = ("REDIS_URL", "REDIS_CLUSTER_URL", "DATABASE_URL_POSTGRES", "DATABASE_URL_PGBOUNCER", "MONGODB_URI")
    if all(os.environ.get(k) for k in wanted):
        return
    script = os.path.join(ROOT, "scripts", "services.sh")
    if not os.path.exists(script):
        return
    try:
        out = subprocess.run(["bash", script, "env"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return
    for line in out.splitlines():
        if line.startswith("export ") and "=" in line:
            key, value = line[len("export "):].split("=", 1)
            os.environ.setdefault(key, value.strip().strip("'\""))


@contextlib.contextmanager
def _model_server() -> Any:
    process = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "model_server.py"), "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        if not url.startswith("http://"):
            raise RuntimeError("the model server did not start")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _revision() -> str:
    """The commit measured, and whether the library differed from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "omnisync"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    if not head:
        return "unknown revision"
    return f"{head} with uncommitted changes to omnisync/" if dirty else head


def _parse_lengths(text: str) -> list[int]:
    return sorted({int(float(part)) for part in text.split(",") if part.strip()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="omnisync store and run benchmark (prints a Markdown table)")
    parser.add_argument("--quick", action="store_true", help="10^2 and 10^4 only, fewer repetitions")
    parser.add_argument("--stores", default=",".join(STORES), help=f"comma-separated, of: {', '.join(STORES)}")
    parser.add_argument("--lengths", help="comma-separated session lengths (default 100,1000,10000,100000)")
    parser.add_argument(
        "--mongodb-lengths", help=f"lengths for MongoDB (default: the others up to {MONGODB_DEFAULT_MAX:,}; FerretDB scans)"
    )
    parser.add_argument("--out", default=os.path.join(HERE, "results.md"), help="where the Markdown goes too ('' for nowhere)")
    parser.add_argument("--render", metavar="RESULTS_JSON", help="print the report of an earlier run's results.json again")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-lengths", help=argparse.SUPPRESS)
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    parser.add_argument("--json-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    budget = QUICK_BUDGET if args.quick else FULL_BUDGET

    if args.worker:
        lengths = _parse_lengths(args.worker_lengths)
        if args.worker == "mongodb":
            budget = SLOW_BUDGET
        result = worker(args.worker, lengths, budget, args.model_url)
        with open(args.json_out, "w", encoding="utf-8") as out:
            json.dump(result, out)
        return 0

    if args.render:
        with open(args.render, encoding="utf-8") as handle:
            saved = json.load(handle)
        print(report(saved["results"], saved["lengths"], saved["meta"]))
        return 0

    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = sorted(set(stores) - set(STORES))
    if unknown:
        parser.error(f"unknown store(s): {', '.join(unknown)}; use {', '.join(STORES)}")
    lengths = _parse_lengths(args.lengths) if args.lengths else list(QUICK_LENGTHS if args.quick else FULL_LENGTHS)
    mongo_lengths = (
        _parse_lengths(args.mongodb_lengths) if args.mongodb_lengths else [n for n in lengths if n <= MONGODB_DEFAULT_MAX] or lengths[:1]
    )
    _services_env()
    started = time.perf_counter()
    results = []
    with _model_server() as model_url, tempfile.TemporaryDirectory(prefix="omnisync-bench-") as scratch:
        for kind in stores:
            out = os.path.join(scratch, f"{kind}.json")
            store_lengths = mongo_lengths if kind == "mongodb" else lengths
            command = [
                sys.executable, os.path.abspath(__file__), "--worker", kind,
                "--worker-lengths", ",".join(map(str, store_lengths)), "--model-url", model_url, "--json-out", out,
            ]
            if args.quick:
                command.append("--quick")
            print(f"[{kind}] lengths {', '.join(_power(n) for n in store_lengths)}", file=sys.stderr, flush=True)
            code = subprocess.call(command, cwd=ROOT)
            if code != 0 or not os.path.exists(out):
                results.append({"kind": kind, "lengths": store_lengths, "unavailable": f"worker exited with {code}", "ops": {}})
                continue
            with open(out, encoding="utf-8") as handle:
                results.append(json.load(handle))
    meta = {
        "revision": _revision(),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "mode": "--quick" if args.quick else "full",
        "seconds": time.perf_counter() - started,
    }
    text = report(results, lengths, meta)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
        json_path = os.path.splitext(args.out)[0] + ".json"
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump({"meta": meta, "lengths": lengths, "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
