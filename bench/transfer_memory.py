"""Peak memory of whole-session work on SQLite, at 10^4 and 10^6 messages in one session.

For each length, a SQLite file is filled with one session (through the store's own append, in
batches of 2,000). Then each operation runs in a fresh Python process, which reports its peak
RSS (VmHWM in /proc/self/status) when done:

- iterate: every message of the session through ``store.iter_history`` (pages of 500);
- export:  ``export_jsonl`` of the store to a file;
- copy:    ``copy_store`` into a new SQLite file (counts verified at the end).

Plus ``baseline``: a process that imports omnisync and opens the store, and nothing more.
The last column is peak RSS at the longest length over the shortest (goal: within 1.5x).
A measurement, not a test: it asserts nothing.

    python bench/transfer_memory.py                      # 10^4 and 10^6: about 3 minutes on 2 cores
    python bench/transfer_memory.py --lengths 10000,100000 --dir /tmp/tm
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

AGENT, SESSION = "assistant", "long"
OPERATIONS = ("baseline", "iterate", "export", "copy")
FILL_BATCH = 2000


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def fill(path: Path, length: int) -> float:
    from omnisync.messages import Message
    from omnisync.stores.sqlite import SQLiteStore

    started = time.perf_counter()
    with SQLiteStore(f"sqlite:///{path}") as store:
        for start in range(0, length, FILL_BATCH):
            batch = [
                Message(role="user" if i % 2 == 0 else "assistant", content=f"message {i}: " + "lorem ipsum dolor sit amet " * 4, tokens=30)
                for i in range(start, min(start + FILL_BATCH, length))
            ]
            store.append(AGENT, SESSION, batch)
    return time.perf_counter() - started


def child(operation: str, source: Path, work: Path) -> None:
    """One operation in this (fresh) process; prints ``<peak MiB> <messages seen> <seconds>``."""
    from omnisync.stores.sqlite import SQLiteStore
    from omnisync.transfer import copy_store, export_jsonl

    started = time.perf_counter()
    seen = 0
    with SQLiteStore(f"sqlite:///{source}") as store:
        if operation == "iterate":
            for _ in store.iter_history(AGENT, SESSION, include_inactive=True):
                seen += 1
        elif operation == "export":
            seen = export_jsonl(store, work / "export.jsonl").lines
        elif operation == "copy":
            with SQLiteStore(f"sqlite:///{work / 'copy.db'}") as target:
                seen = copy_store(store, target).written.total
    print(f"{peak_rss_mib():.1f} {seen} {time.perf_counter() - started:.1f}")


def measure(operation: str, source: Path, work: Path) -> tuple[float, int, float]:
    for leftover in ("export.jsonl", "copy.db", "copy.db-wal", "copy.db-shm"):
        (work / leftover).unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, __file__, "--child", operation, str(source), str(work)], check=True, capture_output=True, text=True
    )
    peak, seen, seconds = done.stdout.split()
    return float(peak), int(seen), float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="10000,1000000")
    parser.add_argument("--dir", default=None, help="where the SQLite files go (default: a temporary directory)")
    parser.add_argument("--child", nargs=3, metavar=("OPERATION", "SOURCE", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        operation, source, work = args.child
        child(operation, Path(source), Path(work))
        return
    import tempfile

    lengths = [int(n) for n in args.lengths.split(",")]
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="omnisync-transfer-memory-"))
    base.mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, int], tuple[float, int, float]] = {}
    for length in lengths:
        work = base / str(length)
        work.mkdir(exist_ok=True)
        source = work / "source.db"
        if not source.exists():
            seconds = fill(source, length)
            print(f"filled {length:,} messages through SQLiteStore.append in {seconds:.0f} s", file=sys.stderr)
        for operation in OPERATIONS:
            results[operation, length] = measure(operation, source, work)
            peak, seen, seconds = results[operation, length]
            print(f"{operation} at {length:,}: peak {peak:.1f} MiB, {seen:,} messages, {seconds:.1f} s", file=sys.stderr)
    low, high = min(lengths), max(lengths)
    header = [f"peak RSS at {n:,}" for n in lengths] + [f"{high:,} / {low:,}"]
    print("| operation | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for operation in OPERATIONS:
        peaks = [results[operation, n][0] for n in lengths]
        cells = [f"{p:.1f} MiB ({results[operation, n][2]:.0f} s)" for p, n in zip(peaks, lengths)]
        print(f"| {operation} | " + " | ".join(cells) + f" | {peaks[-1] / peaks[0]:.2f}x |")


if __name__ == "__main__":
    main()
