"""How long `omnisync serve examples.served:agent` takes to answer /healthz, from the command.

Starts the command N times (in a fresh temporary directory each time, so its SQLite file is
new; no model is called, so OPENAI_BASE_URL defaults to the scripted model's address), polls GET /healthz every 10 ms, and prints each time and the median. A measurement, not
a test: it asserts nothing.

    python bench/serve_startup.py            # 5 starts
    python bench/serve_startup.py --runs 9
    python bench/serve_startup.py --cold     # each start compiles every module anew
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_start(workdir: Path, cold: bool) -> float:
    port = free_port()
    command = [sys.executable, "-m", "omnisync.cli", "serve", "examples.served:agent", "--port", str(port)]
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8081/v1", **os.environ, "PYTHONPATH": str(ROOT)}  # the model is never called
    if cold:  # no compiled module to reuse: every import compiles its source, as on a first start
        env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < 60:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as response:
                    if response.status == 200:
                        return time.perf_counter() - started
            except OSError:
                if process.poll() is not None:
                    raise SystemExit(f"the server exited with status {process.returncode} before answering") from None
                time.sleep(0.01)
        raise SystemExit("no answer from /healthz within 60 s")
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="an empty bytecode cache for each start")
    options = parser.parse_args()
    times = []
    for _ in range(options.runs):
        workdir = Path(tempfile.mkdtemp(prefix="serve-startup-"))
        try:
            times.append(one_start(workdir, options.cold))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    print("starts: " + " ".join(f"{t:.2f}" for t in times) + f" s; median {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
