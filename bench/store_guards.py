"""What the stores' guards cost a call: the base's id checks, and PostgreSQL's call deadline and goodbye check.

- In-process store, a run's write (user + reply appended) and a window load of 20: the methods as
  shipped (ids and messages checked by the store base) against the same methods unwrapped
  (``__wrapped__``, no checks), the baseline.
- PostgreSQL (when ``DATABASE_URL_POSTGRES`` is set), a window load of 20: the store as shipped
  (each checkout armed with the call deadline, and its socket looked at for a goodbye) against
  the same store on an engine without those listeners, the baseline.

Rounds alternate the two sides; it prints the median microseconds a call and the ratio. A
measurement, not a test: it asserts nothing.

    python bench/store_guards.py                   # 7 rounds of 20,000 in-process and 2,000 PostgreSQL calls
    python bench/store_guards.py --rounds 11
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from omnisync.messages import Message
from omnisync.stores.in_memory import InMemoryStore
from omnisync.stores.sql.store import SQLStore

Row = tuple[str, float, float]


def per_call(calls: int, call: Callable[[int], object]) -> float:
    started = time.perf_counter()
    for i in range(calls):
        call(i)
    return (time.perf_counter() - started) / calls * 1e6


def in_process(rounds: int, calls: int) -> list[Row]:
    """Each side on a store of its own, filled alike, so neither reads longer sessions."""
    append, latest = InMemoryStore.append, InMemoryStore.latest
    raw = {"append": append.__wrapped__, "latest": latest.__wrapped__}  # type: ignore[attr-defined]
    shipped = {"append": append, "latest": latest}
    pair = [Message(role="user", content="x" * 300, tokens=75), Message(role="assistant", content="y" * 300, tokens=75)]
    times: dict[str, list[float]] = {"write": [], "write raw": [], "load": [], "load raw": []}
    for _ in range(rounds):
        for suffix, methods in ((" raw", raw), ("", shipped)):
            store = InMemoryStore()
            times["write" + suffix].append(per_call(calls, lambda i: methods["append"](store, "a", f"s{i % 100}", pair)))
            times["load" + suffix].append(per_call(calls, lambda i: methods["latest"](store, "a", f"s{i % 100}", 20)))
    return [
        ("in-process write (user + reply)", statistics.median(times["write raw"]), statistics.median(times["write"])),
        ("in-process load window of 20", statistics.median(times["load raw"]), statistics.median(times["load"])),
    ]


def postgres(url: str, rounds: int, calls: int) -> list[Row]:
    import sqlalchemy as sa

    from omnisync.stores.sql import pooling as postgres_pooling

    guarded = SQLStore(url, timeout=30)
    plain_engine = sa.create_engine(url, connect_args=postgres_pooling.connect_args(sa.engine.make_url(url)))
    plain = SQLStore(engine=plain_engine)
    try:
        guarded.append("bench-guards", "s", [Message(role="user", content="x" * 300, tokens=75) for _ in range(40)])
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(rounds):  # the two sides call by turns, so a busy moment of the machine falls on both
            spent = {True: 0.0, False: 0.0}
            for _i in range(calls):
                for shipped, store in ((False, plain), (True, guarded)):
                    started = time.perf_counter()
                    store.latest("bench-guards", "s", 20)
                    spent[shipped] += time.perf_counter() - started
            for shipped in spent:
                times[shipped].append(spent[shipped] / calls * 1e6)
        return [("PostgreSQL load window of 20", statistics.median(times[False]), statistics.median(times[True]))]
    finally:
        guarded.clear("bench-guards")
        guarded.close()
        plain.close()
        plain_engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20_000, help="in-process calls a round makes of each")
    parser.add_argument("--pg-calls", type=int, default=2_000, help="PostgreSQL calls a round makes of each")
    args = parser.parse_args()
    rows = in_process(args.rounds, args.calls)
    url = os.environ.get("DATABASE_URL_POSTGRES")
    if url:
        rows += postgres(url, args.rounds, args.pg_calls)
    print("| call | baseline (unguarded) µs | as shipped µs | ratio |")
    print("|---|---|---|---|")
    for name, baseline, shipped in rows:
        print(f"| {name} | {baseline:.2f} | {shipped:.2f} | {shipped / baseline:.2f} |")


if __name__ == "__main__":
    main()
