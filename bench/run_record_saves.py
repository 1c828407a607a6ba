"""What the indexes pages of runs read cost each run record save, on a SQLite file.

Schema 3 reads pages of runs from three indexes where schema 2 had one on status. This saves
run records (a create, then an update to ``completed``, as a run's start and end do) into a
fresh file with the schema as it is, and into one with the two indexes added beyond schema 2's
count dropped (``ix_omnisync_runs_page`` and ``ix_omnisync_runs_by_session``), alternating the
two in each round, and prints the median microseconds per save and their ratio. A measurement,
not a test: it asserts nothing.

    python bench/run_record_saves.py               # 7 rounds of 2,000 runs (4,000 saves) each
    python bench/run_record_saves.py --rounds 11 --runs 5000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from omnisync.messages import utcnow
from omnisync.run_record import COMPLETED, RunRecord
from omnisync.stores.sql.sqlite import SQLiteStore

DROPPED = ("ix_omnisync_runs_page", "ix_omnisync_runs_by_session")


def microseconds_a_save(directory: Path, runs: int, fewer_indexes: bool) -> float:
    with SQLiteStore(f"sqlite:///{directory / 'runs.db'}") as store:
        if fewer_indexes:
            with store.engine.begin() as conn:
                for name in DROPPED:
                    conn.execute(sa.text(f"DROP INDEX {name}"))
        started = time.perf_counter()
        for i in range(runs):
            record = store.save_run(RunRecord(run_id=f"run_{i:07d}", agent="a", session_id=f"s{i % 50}", created_at=utcnow()), None)
            store.save_run(record.evolve(status=COMPLETED), record.version)
        return (time.perf_counter() - started) / (2 * runs) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=2000, help="runs a round saves, twice each")
    args = parser.parse_args()
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for fewer in (True, False):
            with tempfile.TemporaryDirectory() as directory:
                times[fewer].append(microseconds_a_save(Path(directory), args.runs, fewer))
    baseline, schema_3 = statistics.median(times[True]), statistics.median(times[False])
    print("| run record saves on SQLite | µs a save (median) | ratio |")
    print("|---|---|---|")
    print(f"| without the two added indexes (baseline) | {baseline:.1f} | 1.00 |")
    print(f"| schema 3 as shipped | {schema_3:.1f} | {schema_3 / baseline:.2f} |")


if __name__ == "__main__":
    main()
