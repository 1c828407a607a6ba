"""Peak memory of whole-session work on SQLite, PostgreSQL and Redis, at 10^4 and 10^6 messages in one session.

For each store and length, one session is filled through the store's own append, in batches of
2,000 (with ``--what runs``: one message, and that many run records of about 2 KB through
``save_runs``, 1,000 a batch). Then each operation runs in a fresh Python process, which reports
its peak RSS (VmHWM in /proc/self/status) when done:

- iterate: every message of the session through ``store.iter_history`` (pages of 500), or every
           run record through ``store.iter_records``;
- export:  ``export_jsonl`` of the store to a file;
- copy:    ``copy_store`` into an empty store of the same kind (counts verified at the end).

Plus ``baseline``: a process that imports omnisync and opens the store, and nothing more.
The last column is peak RSS at the longest length over the shortest (goal: within 1.5x).
A measurement, not a test: it asserts nothing about the figures.

Where each store's data goes, all of it removed at the end, after a failure or SIGTERM too:

- sqlite:   a file per length in a temporary directory (or in ``--dir``, kept for the next run,
            which reuses a source that holds the whole session); copies into a new file beside it;
- postgres: a database of the bench's own per length on DATABASE_URL_POSTGRES's server, copies
            into another new one; both dropped (the database the URL names is never written);
- redis:    a key prefix of the bench's own per length on REDIS_URL's server, copies under
            another; every key under them deleted.

A store whose server cannot be reached is skipped, and the table says why. Unset URLs are read
from ``scripts/services.sh env``, as ``bench/run.py`` does.

    python bench/transfer_memory.py                      # all three at 10^4 and 10^6: 16 minutes on 2 cores
    python bench/transfer_memory.py --stores sqlite --lengths 10000,100000 --dir /tmp/tm
    python bench/transfer_memory.py --lengths 10000,1000000 --store-lengths redis=10000,100000
    python bench/transfer_memory.py --what runs --lengths 2000,100000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

AGENT, SESSION = "assistant", "long"
STORES = ("sqlite", "postgres", "redis")
OPERATIONS = ("baseline", "iterate", "export", "copy")
FILL_BATCH = 2000
RUNS_BATCH = 1000
WHATS = ("messages", "runs")

Spec = dict[str, Any]
"""What ``omnisync.router.build_store`` opens: ``{"kind": ..., "url": ..., "options": {...}}``."""


class Unavailable(Exception):
    """The store's server cannot be reached or used: the store is skipped, with this reason."""


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def open_store(spec: Spec) -> Any:
    from omnisync.router import build_store

    return build_store(spec["kind"], spec["url"], **spec["options"])


# --- where each store's data goes ---------------------------------------------------------


class SQLitePlace:
    def __init__(self, scratch: Path, keep: Path | None, what: str) -> None:
        self.base = (keep or scratch / "sqlite") / what
        self.base.mkdir(parents=True, exist_ok=True)
        self.what = what

    def _file(self, length: int, name: str) -> Spec:
        work = self.base / str(length)
        work.mkdir(exist_ok=True)
        return {"kind": "sql", "url": f"sqlite:///{work / name}", "options": {}}

    def source(self, length: int) -> Spec:
        return self._file(length, "source.db")

    def filled(self, length: int) -> bool:
        """A source kept from an earlier run with ``--dir`` is reused if it holds the whole session."""
        if not (self.base / str(length) / "source.db").exists():
            return False
        with open_store(self.source(length)) as store:
            if held(store, self.what) == length:
                return True
        self._remove(length, "source.db")
        return False

    def fresh_target(self, length: int) -> Spec:
        self._remove(length, "copy.db")
        return self._file(length, "copy.db")

    def _remove(self, length: int, name: str) -> None:
        for suffix in ("", "-wal", "-shm"):
            (self.base / str(length) / (name + suffix)).unlink(missing_ok=True)

    def done(self, length: int) -> None:
        self._remove(length, "copy.db")

    def close(self) -> None:
        """The files go with the scratch directory, unless they are in ``--dir``."""


class PostgresPlace:
    """Databases of the bench's own, created from template0 and dropped with FORCE (as ``tests/helpers/backends.py`` does)."""

    def __init__(self) -> None:
        import sqlalchemy as sa

        url = os.environ.get("DATABASE_URL_POSTGRES")
        if not url:
            raise Unavailable("DATABASE_URL_POSTGRES is not set")
        self.url = sa.engine.make_url(url)
        self.admin = sa.create_engine(url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
        try:
            with self.admin.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError as exc:
            self.admin.dispose()
            raise Unavailable(f"PostgreSQL at {self.url.host}:{self.url.port} is not reachable: {str(exc).splitlines()[0]}") from exc
        self.stem = f"omnisync_tm_{uuid.uuid4().hex[:10]}"
        self.made: set[str] = set()

    def _sql(self, statement: str) -> None:
        import sqlalchemy as sa

        with self.admin.connect() as conn:
            conn.execute(sa.text(statement))

    def _drop(self, name: str, seconds: float = 30.0) -> None:
        """Tried again while the server refuses: FORCE cannot end an autovacuum worker that a
        large write started on the database (another role's process); it ends by itself."""
        import sqlalchemy as sa

        deadline = time.monotonic() + seconds
        while True:
            try:
                self._sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                break
            except sa.exc.ProgrammingError as exc:
                if "must be a member of the role" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self.made.discard(name)

    def _fresh(self, name: str) -> Spec:
        self._drop(name)
        self.made.add(name)
        self._sql(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
        return self._spec(name)

    def _spec(self, name: str) -> Spec:
        return {"kind": "sql", "url": self.url.set(database=name).render_as_string(hide_password=False), "options": {}}

    def source(self, length: int) -> Spec:
        name = f"{self.stem}_{length}"
        return self._spec(name) if name in self.made else self._fresh(name)

    def filled(self, length: int) -> bool:
        return False

    def fresh_target(self, length: int) -> Spec:
        return self._fresh(f"{self.stem}_copy")

    def done(self, length: int) -> None:
        self._drop(f"{self.stem}_{length}")
        self._drop(f"{self.stem}_copy")

    def close(self) -> None:
        try:
            for name in sorted(self.made):
                self._drop(name)
        finally:
            self.admin.dispose()


class RedisPlace:
    """Key prefixes of the bench's own; every key under them unlinked."""

    def __init__(self) -> None:
        import redis

        url = os.environ.get("REDIS_URL")
        if not url:
            raise Unavailable("REDIS_URL is not set")
        self.url = url
        self.client = redis.Redis.from_url(url, socket_connect_timeout=5)
        try:
            self.client.ping()
        except redis.RedisError as exc:
            self.client.close()
            where = self.client.connection_pool.connection_kwargs  # the URL may hold a password
            raise Unavailable(f"Redis at {where.get('host')}:{where.get('port')} is not reachable: {exc}") from exc
        self.stem = f"omnisync-tm-{uuid.uuid4().hex[:10]}"

    def _spec(self, prefix: str) -> Spec:
        return {"kind": "redis", "url": self.url, "options": {"prefix": prefix}}

    def _forget(self, pattern: str) -> None:
        batch: list[bytes] = []
        for key in self.client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) == 1000:
                self.client.unlink(*batch)
                batch = []
        if batch:
            self.client.unlink(*batch)

    def source(self, length: int) -> Spec:
        return self._spec(f"{self.stem}-{length}")

    def filled(self, length: int) -> bool:
        return False

    def fresh_target(self, length: int) -> Spec:
        self._forget(f"{self.stem}-copy:*")
        return self._spec(f"{self.stem}-copy")

    def done(self, length: int) -> None:
        self._forget(f"{self.stem}-{length}:*")
        self._forget(f"{self.stem}-copy:*")

    def close(self) -> None:
        try:
            self._forget(f"{self.stem}-*")
        finally:
            self.client.close()


def place_for(name: str, scratch: Path, keep: Path | None, what: str) -> SQLitePlace | PostgresPlace | RedisPlace:
    if name == "sqlite":
        return SQLitePlace(scratch, keep, what)
    if name == "postgres":
        return PostgresPlace()
    return RedisPlace()


# --- the work -----------------------------------------------------------------------------


def held(store: Any, what: str) -> int:
    if what == "runs":
        return sum(1 for _ in store.iter_records(AGENT))
    return sum(i.message_count for i in store.iter_sessions(AGENT))


def fill(spec: Spec, length: int, what: str) -> float:
    from omnisync.messages import Message, utcnow
    from omnisync.run_record import COMPLETED, RunRecord

    started = time.perf_counter()
    with open_store(spec) as store:
        if what == "runs":
            store.append(AGENT, SESSION, [Message(role="user", content="hello", tokens=1)])
            made = utcnow()
            for start in range(0, length, RUNS_BATCH):
                records = [
                    RunRecord(run_id=f"run_{i:08d}", agent=AGENT, session_id=SESSION, status=COMPLETED, response="lorem ipsum " * 170, created_at=made)
                    for i in range(start, min(start + RUNS_BATCH, length))
                ]
                store.save_runs([(record, None) for record in records])
            return time.perf_counter() - started
        for start in range(0, length, FILL_BATCH):
            batch = [
                Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i}: " + "lorem ipsum dolor sit amet " * 4, tokens=30)
                for i in range(start, min(start + FILL_BATCH, length))
            ]
            store.append(AGENT, SESSION, batch)
    return time.perf_counter() - started


def child(operation: str, scratch: Path) -> None:
    """One operation in this (fresh) process, on the stores read from stdin; prints ``<peak MiB> <records seen> <seconds>``."""
    from omnisync.transfer import copy_store, export_jsonl

    specs = json.loads(sys.stdin.read())
    runs = specs["what"] == "runs"
    started = time.perf_counter()
    seen = 0
    with open_store(specs["source"]) as store:
        if operation == "iterate":
            records = store.iter_records(AGENT) if runs else store.iter_history(AGENT, SESSION, include_inactive=True)
            for _ in records:
                seen += 1
        elif operation == "export":
            seen = export_jsonl(store, scratch / "export.jsonl").lines - (1 if runs else 0)  # the one message
        elif operation == "copy":
            with open_store(specs["target"]) as target:
                report = copy_store(store, target)
                seen = report.runs if runs else report.written.total
    print(f"{peak_rss_mib():.1f} {seen} {time.perf_counter() - started:.1f}")


def measure(operation: str, source: Spec, target: Spec | None, scratch: Path, length: int, what: str) -> tuple[float, float]:
    """Peak MiB and seconds of ``operation`` in a fresh process (the URLs go through stdin, not argv)."""
    (scratch / "export.jsonl").unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, __file__, "--child", operation, str(scratch)],
        input=json.dumps({"source": source, "target": target, "what": what}), capture_output=True, text=True,
    )
    (scratch / "export.jsonl").unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"{operation} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    peak, seen, seconds = done.stdout.split()
    if operation != "baseline" and int(seen) != length:
        raise RuntimeError(f"{operation} saw {int(seen):,} {what}, not {length:,}")
    return float(peak), float(seconds)


@contextlib.contextmanager
def terminated_cleanly() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so every ``finally`` that removes data still runs."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_store(place: Any, name: str, lengths: list[int], scratch: Path, what: str) -> tuple[dict[tuple[str, int], tuple[float, float]], dict[int, float]]:
    results: dict[tuple[str, int], tuple[float, float]] = {}
    fills: dict[int, float] = {}
    try:
        for length in lengths:
            source = place.source(length)
            if not place.filled(length):
                fills[length] = fill(source, length, what)
                print(f"[{name}] filled {length:,} {what} in {fills[length]:.0f} s", file=sys.stderr, flush=True)
            for operation in OPERATIONS:
                target = place.fresh_target(length) if operation == "copy" else None
                results[operation, length] = measure(operation, source, target, scratch, length, what)
                peak, seconds = results[operation, length]
                print(f"[{name}] {operation} at {length:,}: peak {peak:.1f} MiB, {seconds:.1f} s", file=sys.stderr, flush=True)
            place.done(length)
    finally:
        place.close()
    return results, fills


def table(
    stores: list[str], lengths_of: dict[str, list[int]], results: dict[str, Any], skipped: dict[str, str], fills: dict[str, dict[int, float]], what: str
) -> str:
    columns = sorted({n for name in stores for n in lengths_of[name]})
    header = [f"peak RSS at {n:,} {what}" for n in columns] + ["longest / shortest"]
    lines = ["| store | operation | " + " | ".join(header) + " |", "|---" * (len(header) + 2) + "|"]
    for name in stores:
        if name in skipped:
            lines.append(f"| {name} | – | skipped: {skipped[name]} |" + " |" * len(columns))
            continue
        lengths = lengths_of[name]
        for operation in OPERATIONS:
            cells = []
            for n in columns:
                found = results[name].get((operation, n))
                cells.append(f"{found[0]:.1f} MiB ({found[1]:.0f} s)" if found else "–")
            ratio = results[name][operation, lengths[-1]][0] / results[name][operation, lengths[0]][0]
            lines.append(f"| {name} | {operation} | " + " | ".join(cells) + f" | {ratio:.2f}x |")
    filled = [f"{name} {n:,} in {s:.0f} s" for name in stores for n, s in sorted(fills.get(name, {}).items())]
    if filled:
        lines += ["", "Filled: " + ", ".join(filled) + "."]
    return "\n".join(lines)


def parse_lengths(text: str) -> list[int]:
    return sorted(int(n) for n in text.split(","))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default=",".join(STORES), help="which of sqlite,postgres,redis (default: all three)")
    parser.add_argument("--lengths", default="10000,1000000")
    parser.add_argument("--what", choices=WHATS, default="messages", help="what the session holds so many of (default: messages)")
    parser.add_argument("--store-lengths", action="append", default=[], metavar="STORE=N,N",
                        help="other lengths for one store, e.g. redis=10000,100000 (repeatable)")
    parser.add_argument("--dir", default=None, help="keep the SQLite files here, for the next run (default: removed)")
    parser.add_argument("--child", nargs=2, metavar=("OPERATION", "SCRATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        operation, scratch = args.child
        child(operation, Path(scratch))
        return
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = [s for s in stores if s not in STORES]
    if unknown:
        parser.error(f"unknown store(s) {', '.join(unknown)}; use some of {','.join(STORES)}")
    lengths_of = {name: parse_lengths(args.lengths) for name in stores}
    for given in args.store_lengths:
        name, _, text = given.partition("=")
        if name not in lengths_of:
            parser.error(f"--store-lengths {given}: {name!r} is not among --stores")
        lengths_of[name] = parse_lengths(text)
    from run import _services_env  # here, not at the top: a child process imports only what it measures

    _services_env()
    keep = Path(args.dir) if args.dir else None
    results: dict[str, Any] = {}
    fills: dict[str, dict[int, float]] = {}
    skipped: dict[str, str] = {}
    scratch = Path(tempfile.mkdtemp(prefix="omnisync-transfer-memory-"))
    try:
        with terminated_cleanly():
            for name in stores:
                try:
                    place = place_for(name, scratch, keep, args.what)
                except Unavailable as exc:
                    skipped[name] = str(exc)
                    print(f"[{name}] skipped: {exc}", file=sys.stderr, flush=True)
                    continue
                results[name], fills[name] = run_store(place, name, lengths_of[name], scratch, args.what)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(table(stores, lengths_of, results, skipped, fills, args.what))


if __name__ == "__main__":
    main()
