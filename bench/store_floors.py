"""Our SQL stores against their raw drivers sending the same statements: medians and ratios.

    python bench/store_floors.py                          # SQLite and PostgreSQL, sessions of 10^4
    python bench/store_floors.py --stores sqlite --length 1000 --seconds 1

Each row times ours and the raw baseline (bench/backends.py) interleaved call by call, and
gives ours ÷ raw from the same run. The baselines send the statements the store sends, for
the same columns (tests/project/test_bench_baselines.py holds them to it); under the table, what
each side sent for one call of each row.

- load 20 / 200: ``store.window(max_messages=n)`` vs the same SELECT (tuples back);
- append: ``store.append`` of a user message and a reply vs the same write;
- run, store side (SQLite): the time spent inside the store's methods during ``agent.run()``
  (instant model server, window of 20), vs the raw read and write it replaces: the window's
  SELECT of 20, then the same model call through http.client (not timed), then the append's
  write, so both sides meet the database as a run does, after a model call.
- run() vs raw (SQLite and PostgreSQL): the whole ``agent.run()`` against the same read, the
  model's POST through http.client and the same write, all timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import backends as b  # noqa: E402
import workload as w  # noqa: E402
from run import RUN_WINDOW, Setup, _agent, _http_floors, _model_server, _services_env  # noqa: E402

STORE_METHODS = ("load_lease_and_window", "save_runs", "append_and_save_run", "save_run", "append", "latest", "load_run", "load_lease")


class StoreClock:
    """The time a run spends inside the store's methods (the outermost call of each, so nothing counts twice)."""

    def __init__(self, store: Any) -> None:
        self.spent_ns = 0
        self.by_method: dict[str, list[int]] = {name: [] for name in STORE_METHODS}
        self._depth = 0
        for name in STORE_METHODS:
            setattr(store, name, self._timed(name, getattr(store, name)))

    def _timed(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            start = time.perf_counter_ns()
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1
                if not self._depth:
                    took = time.perf_counter_ns() - start
                    self.spent_ns += took
                    self.by_method[name].append(took)

        return timed


def interleaved(fns: dict[str, Callable[[], int | None]], reps: int, warmup: int = 20) -> dict[str, float]:
    """Median ns of each; a function that returns a number returns its own measured time."""
    samples: dict[str, list[int]] = {name: [] for name in fns}
    for rep in range(warmup + reps):
        for name, fn in fns.items():
            start = time.perf_counter_ns()
            own = fn()
            took = own if own is not None else time.perf_counter_ns() - start
            if rep >= warmup:
                samples[name].append(took)
    return {name: statistics.median(times) for name, times in samples.items()}


def sqlite_connections(setup: Setup) -> list[Any]:
    if setup.kind != "sqlite":
        return []
    store: Any = setup.store
    return [store._threads.get(store._describe), setup.raw.conn]


def rows(kind: str, setup: Setup, length: int, reps: int, model_url: str) -> tuple[list[tuple[str, float, float]], dict[str, tuple[list[str], list[str]]]]:
    ours, raw = b.Ours(setup.store), setup.raw
    sessions = [f"s{k}" for k in range(4)]
    for side in (ours, raw):
        for session in sessions:
            side.fill(session, length)
    setup.filled()
    turn = {"ours": 0, "raw": 0}

    def rotating(side: str) -> str:
        turn[side] += 1
        return sessions[turn[side] % len(sessions)]

    measured: list[tuple[str, float, float]] = []
    ops = {
        "load window of 20": (lambda: ours.load(sessions[0], 20), lambda: raw.load(sessions[0], 20)),
        "load window of 200": (lambda: ours.load(sessions[0], 200), lambda: raw.load(sessions[0], 200)),
        "append (user + reply)": (lambda: ours.write(rotating("ours")), lambda: raw.write(rotating("raw"))),
    }
    sent: dict[str, tuple[list[str], list[str]]] = {}
    for title, (mine, theirs) in ops.items():
        medians = interleaved({"ours": lambda f=mine: (f(), None)[1], "raw": lambda f=theirs: (f(), None)[1]}, reps)
        measured.append((title, medians["ours"], medians["raw"]))
        with b.sent_statements(sqlite_connections(setup)) as by_ours:
            mine()
        with b.sent_statements(sqlite_connections(setup)) as by_raw:
            theirs()
        sent[title] = (by_ours, by_raw)
    agent = _agent(setup.store, model_url)
    model_call = _http_floors(model_url, [m.to_chat() for m in ours.load(sessions[0], RUN_WINDOW)])["http_client"]

    def whole_raw_run() -> None:
        """The raw equivalent of a run: the read, the model's POST through http.client (its body
        encoded once, beforehand: less work than a run's, which encodes what it read), the write."""
        session = rotating("raw")
        raw.load(session, RUN_WINDOW)
        model_call()
        raw.write(session)

    medians = interleaved({"ours": lambda: (agent.run(w.USER_TEXTS[0], session_id=rotating("ours")), None)[1], "raw": lambda: (whole_raw_run(), None)[1]}, reps)
    measured.append(("run() vs raw read + http.client POST + write", medians["ours"], medians["raw"]))
    if kind == "sqlite":
        clock = StoreClock(setup.store)

        def run() -> int:
            before = clock.spent_ns
            agent.run(w.USER_TEXTS[0], session_id=rotating("ours"))
            return clock.spent_ns - before

        def read_and_write() -> int:
            """The read, the model's answer (not timed, as a run's is not), the write: the store's place in a run."""
            session = rotating("raw")
            start = time.perf_counter_ns()
            raw.load(session, RUN_WINDOW)
            read = time.perf_counter_ns() - start
            model_call()
            start = time.perf_counter_ns()
            raw.write(session)
            return read + time.perf_counter_ns() - start

        medians = interleaved({"ours": run, "raw": read_and_write}, reps)
        measured.append(("run(), store side vs raw read + write", medians["ours"], medians["raw"]))
        for name, times in clock.by_method.items():
            if len(times) >= reps:  # what every run calls
                measured.append((f"  of which {name}", statistics.median(times), float("nan")))
        with b.sent_statements(sqlite_connections(setup)) as by_ours:
            agent.run(w.USER_TEXTS[0], session_id=sessions[0])
        with b.sent_statements(sqlite_connections(setup)) as by_raw:
            raw.load(sessions[0], RUN_WINDOW)
            raw.write(sessions[0])
        sent["run(), store side vs raw read + write"] = (by_ours, by_raw)
    agent.cleanup()
    return measured, sent


def _short(sql: str) -> str:
    shape = b.statement_shape(sql)
    return shape if len(shape) <= 110 else shape[:107] + "..."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--length", type=int, default=10_000, help="messages in each measured session")
    parser.add_argument("--reps", type=int, default=300, help="calls of each side per row (after 20 warm-up calls)")
    args = parser.parse_args()
    _services_env()
    print(f"sessions of {args.length:,} messages, {args.reps} calls a side, interleaved; load average {os.getloadavg()[0]:.2f}")
    print()
    print("| store | operation | ours µs | raw µs | ours ÷ raw |")
    print("|---|---|---|---|---|")
    statements = []
    with _model_server() as url:
        for kind in args.stores.split(","):
            with tempfile.TemporaryDirectory(prefix="omnisync-floors-") as directory:
                try:
                    setup = Setup(kind, directory, b.RoundTrips())
                except b.Unavailable as exc:
                    print(f"| {kind} | skipped: {exc} | | | |")
                    continue
                setup.peers = []
                try:
                    measured, sent = rows(kind, setup, args.length, args.reps, url)
                finally:
                    setup.close()
            for title, mine, theirs in measured:
                if theirs != theirs:  # NaN: a part of the row above, with no baseline of its own
                    print(f"| {kind} | {title} | {mine / 1000:,.0f} | | |")
                else:
                    print(f"| {kind} | {title} | {mine / 1000:,.0f} | {theirs / 1000:,.0f} | {mine / theirs:.2f} |")
            statements.append((kind, sent))
    print()
    print("What each side sent for one call (values as ?):")
    for kind, sent in statements:
        for title, (by_ours, by_raw) in sent.items():
            print(f"\n{kind}, {title}:")
            for side, found in (("ours", by_ours), ("raw", by_raw)):
                print(f"  {side} ({len(found)}):")
                for sql in found:
                    print(f"    {_short(sql)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
