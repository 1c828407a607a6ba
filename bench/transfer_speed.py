"""Messages a second through copy, export and import, into PostgreSQL and Redis, against the raw driver.

    python bench/transfer_speed.py                           # 10^5 messages in 10 sessions, into both
    python bench/transfer_speed.py --messages 1000000 --sessions 100 --targets postgres

A SQLite file holds the source (filled through the store, not timed). Then, for each target,
into a fresh database or key prefix each time:

- copy:   ``copy_store`` from the SQLite file into the target (read, write, verify by counting);
- import: ``import_export`` of a JSON Lines file ``export_jsonl`` made from the source (the
          export is timed once, reading SQLite);
- raw:    the raw driver writing the same number of messages in batches of 500, one statement
          a batch (psycopg sending the store's one-statement append; redis-py the baseline's
          Lua script): the floor for writes in the store's layout.

Each is timed whole, best of ``--rounds`` (default 2). Goal: 20,000 messages a second or more
into both. Memory is bench/transfer_memory.py's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import backends as b  # noqa: E402
import transfer_memory as tm  # noqa: E402
import workload as w  # noqa: E402

GOAL = 20_000


def fill_source(spec: tm.Spec, messages: int, sessions: int) -> None:
    per = messages // sessions
    with tm.open_store(spec) as store:
        for k in range(sessions):
            for start in range(0, per, tm.FILL_BATCH):
                store.append(tm.AGENT, f"s{k}", w.messages(start, min(tm.FILL_BATCH, per - start)))


def raw_writer(name: str, target: tm.Spec) -> Any:
    if name == "postgres":
        from sqlalchemy.engine import make_url

        return b.RawPostgres(make_url(target["url"]).set(drivername="postgresql").render_as_string(hide_password=False))
    import redis

    return b.RawRedis(redis.Redis.from_url(target["url"]), target["options"]["prefix"] + "-raw")


def timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--targets", default="postgres,redis")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from omnisync.transfer import copy_store, export_jsonl, import_export, read_export

    from run import _services_env

    _services_env()
    total = args.messages // args.sessions * args.sessions
    print(f"{total:,} messages in {args.sessions} sessions, best of {args.rounds}; load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="omnisync-transfer-speed-") as scratch:
        source = tm.SQLitePlace(Path(scratch), None, "messages").source(total)
        fill_source(source, total, args.sessions)
        exported = Path(scratch) / "export.jsonl"
        with tm.open_store(source) as store:
            export_seconds = timed(lambda: export_jsonl(store, exported))
        print()
        print("| into | operation | seconds | messages a second | ÷ raw time |")
        print("|---|---|---|---|---|")
        print(f"| (a file) | export from SQLite | {export_seconds:.2f} | {total / export_seconds:,.0f} | |")
        for name in args.targets.split(","):
            try:
                place = tm.place_for(name, Path(scratch), None, "messages")
            except tm.Unavailable as exc:
                print(f"| {name} | skipped: {exc} | | | |")
                continue
            try:
                best: dict[str, float] = {}

                def keep(what: str, seconds: float) -> None:
                    best[what] = min(seconds, best.get(what, seconds))

                for _ in range(args.rounds):
                    target = place.fresh_target(total)
                    with tm.open_store(source) as store, tm.open_store(target) as into:
                        keep("copy", timed(lambda: copy_store(store, into)))
                    target = place.fresh_target(total)
                    with tm.open_store(target) as into:
                        keep("import", timed(lambda: import_export(into, read_export(exported))))
                    target = place.fresh_target(total)
                    with tm.open_store(target):  # the store's tables, for the raw writer to write beside
                        pass
                    raw = raw_writer(name, target)
                    try:
                        keep("raw", timed(lambda: [raw.fill(f"s{k}", total // args.sessions) for k in range(args.sessions)]))
                    finally:
                        raw.close()
                for what in ("copy", "import", "raw"):
                    ratio = "" if what == "raw" else f"{best[what] / best['raw']:.2f}"
                    print(f"| {name} | {what} | {best[what]:.2f} | {total / best[what]:,.0f} | {ratio} |")
            finally:
                place.done(total)
                place.close()
    print(f"\nGoal: {GOAL:,} messages a second or more into PostgreSQL and Redis (copy and import).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
