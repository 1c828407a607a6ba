"""Start-up: ``import omnisync`` and ``omnisync --version`` against a bare interpreter, process by process.

    python bench/startup.py                # 30 starts of each, interleaved
    python bench/startup.py --starts 60

Each row is a new process of this same interpreter (same site-packages, so the same ``.pth``
files run), timed from spawn to exit, with the CPU time it used (user + system, from
``wait4``: what load on a shared machine moves least); the rows take turns, start by start. The baseline is
``python -c pass``, the least a Python process does; a row's figure over it is what omnisync
adds. The last rows show what a first use loads (the agent, with ``requests``), for scale.
A measurement, not a test: tests/project/test_packaging.py checks what each start imports.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time

PYTHON = sys.executable
CLI = os.path.join(os.path.dirname(PYTHON), "omnisync")
ROWS = {
    "python -c pass": [PYTHON, "-c", "pass"],
    "python -c 'import omnisync'": [PYTHON, "-c", "import omnisync"],
    "omnisync --version": [CLI, "--version"] if os.path.exists(CLI) else [PYTHON, "-m", "omnisync.cli", "--version"],
    "python -c 'import omnisync.aio'": [PYTHON, "-c", "import omnisync.aio"],
    "python -c 'from omnisync import OmniCoreAgent'": [PYTHON, "-c", "from omnisync import OmniCoreAgent"],
}
BASELINE = "python -c pass"
GOALS = {"python -c 'import omnisync'": 0.150, "omnisync --version": 0.100}  # seconds over the baseline (issue 23)


def start(command: list[str]) -> tuple[float, float]:
    """Seconds from spawn to exit, and the CPU seconds (user + system) the process used."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - began
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, command
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=30, help="process starts per row")
    options = parser.parse_args()
    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in ROWS}
    order = list(ROWS.items())
    for command in ROWS.values():
        start(command)  # warm the file cache and bytecode
    for _ in range(options.starts):
        random.shuffle(order)
        for name, command in order:
            seconds[name].append(start(command))
    medians = {name: statistics.median(wall for wall, _ in runs) for name, runs in seconds.items()}
    cpu = {name: statistics.median(used for _, used in runs) for name, runs in seconds.items()}
    base, base_cpu = medians[BASELINE], cpu[BASELINE]
    print("| start | wall, median ms | wall over bare, ms | / bare | CPU, median ms | CPU over bare, ms | goal over bare (wall) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, median in medians.items():
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"under {goal * 1e3:.0f} ms: {'met' if median - base < goal else 'MISSED'}"
        print(
            f"| {name} | {median * 1e3:.1f} | {(median - base) * 1e3:+.1f} | {median / base:.2f}x | "
            f"{cpu[name] * 1e3:.1f} | {(cpu[name] - base_cpu) * 1e3:+.1f} | {verdict} |"
        )
    print(
        f"\n{options.starts} starts per row, interleaved in shuffled order, medians; Python {sys.version.split()[0]}\n"
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores."
    )


if __name__ == "__main__":
    main()
