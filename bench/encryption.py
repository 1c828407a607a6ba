"""What encryption at rest costs on SQLite: a load of 20 messages and a whole run, encrypted and not.

The baseline is the same store without encryption, measured in the same process and rounds
(alternating, so load drifts hit both alike): it does the same reads and writes less the
sealing and opening. The run is ``agent.run`` against an instant local model
(bench/model_server.py), so what it costs is the SDK's and the store's, not a model's. The
goal (issue 25): within 1.3x. A measurement, not a test: it asserts nothing.

    python bench/encryption.py                      # 7 rounds; 200 loads and 40 runs a round
    python bench/encryption.py --rounds 11 --loads 500 --runs 100
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import workload as w
from omnisync import Encryption, MemoryRouter, OmniCoreAgent

HERE = Path(__file__).resolve().parent
SESSION_LENGTH = 200


@contextlib.contextmanager
def model_server() -> Iterator[str]:
    process = subprocess.Popen([sys.executable, str(HERE / "model_server.py"), "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        if not url.startswith("http://"):
            raise RuntimeError("the model server did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def router(directory: Path, name: str, encrypted: bool) -> MemoryRouter:
    encryption = Encryption({"bench": os.urandom(32)}, "bench") if encrypted else None
    return MemoryRouter("sql", url=f"sqlite:///{directory / name}.db", encryption=encryption)


def load_microseconds(directory: Path, encrypted: bool, loads: int) -> float:
    with router(directory, f"load-{encrypted}", encrypted) as memory:
        for start in range(0, SESSION_LENGTH, w.FILL_CHUNK):
            memory.store.append(w.AGENT, "s", w.messages(start, min(w.FILL_CHUNK, SESSION_LENGTH - start)))
        memory.store.window(w.AGENT, "s", max_messages=20)  # warm: statements prepared, data key unwrapped
        started = time.perf_counter()
        for _ in range(loads):
            memory.store.window(w.AGENT, "s", max_messages=20)
        return (time.perf_counter() - started) / loads * 1e6


def run_microseconds(directory: Path, encrypted: bool, runs: int, model_url: str) -> float:
    config = {"provider": "openai", "model": "bench", "base_url": model_url, "api_key": "x", "max_retries": 0}
    with router(directory, f"run-{encrypted}", encrypted) as memory:
        agent = OmniCoreAgent(name=w.AGENT, system_instruction="You are a test.", model_config=config, memory_router=memory)
        with agent:
            agent.run("warm up", session_id="s")
            started = time.perf_counter()
            for i in range(runs):
                agent.run(f"question {i}", session_id="s")
            return (time.perf_counter() - started) / runs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--loads", type=int, default=200, help="loads of 20 a round, each side")
    parser.add_argument("--runs", type=int, default=40, help="runs a round, each side")
    args = parser.parse_args()
    times: dict[tuple[str, bool], list[float]] = {}
    with model_server() as model_url:
        for _ in range(args.rounds):
            for encrypted in (False, True):
                with tempfile.TemporaryDirectory(prefix="omnisync-bench-") as scratch:
                    times.setdefault(("load of 20", encrypted), []).append(load_microseconds(Path(scratch), encrypted, args.loads))
                    times.setdefault(("a run", encrypted), []).append(run_microseconds(Path(scratch), encrypted, args.runs, model_url))
    print(f"load average {os.getloadavg()[0]:.2f}, {args.rounds} rounds, SQLite file, a session of {SESSION_LENGTH} messages")
    print("| on SQLite | not encrypted (baseline) µs | encrypted µs | ratio |")
    print("|---|---|---|---|")
    for operation in ("load of 20", "a run"):
        plain, sealed = statistics.median(times[(operation, False)]), statistics.median(times[(operation, True)])
        print(f"| {operation} | {plain:.0f} | {sealed:.0f} | {sealed / plain:.2f} |")


if __name__ == "__main__":
    main()
