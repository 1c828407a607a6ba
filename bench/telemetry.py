"""What OpenTelemetry costs a run: without the extra, with a no-op tracer, with the SDK exporting to memory.

    python bench/telemetry.py                  # 200 rounds of 2 runs per side, in 4 sets of processes
    python bench/telemetry.py --rounds 400 --runs 1 --processes 8

One run is ``agent.run`` with one tool call (two model calls, the tool, seven store round
trips) on a SQLite file, against cassettes/scripted_model.py's answers served from a process
of their own (Nagle off, each answer one write, so no delayed ACK pads the runs). Each side
runs in a process of its own (OpenTelemetry's providers are set once per process), asked for
a run or two at a time, in turn, round after round (each round another side first), so that
every side sees the same load, even on a machine shared with other work; the processes are
started afresh a few times (``--processes``), so that no one process's luck (its memory
layout, its core) holds for the whole bench:

- ``without otel``: opentelemetry made unimportable (as without ``omnisync[otel]``): the
  baseline, doing the least work that gives the same answer;
- ``no-op tracer``: ``opentelemetry-api`` installed, no SDK configured (goal: within 1.05x);
- ``SDK, in-memory``: the SDK's TracerProvider with a SimpleSpanProcessor (each span exported
  as it ends, on the run's thread) into an InMemorySpanExporter, and a MeterProvider with an
  InMemoryMetricReader (goal: within 1.3x).

Prints medians of the time per run and their ratios to the baseline (the goals are on these),
the first quartiles and theirs (on a busy machine other work's waits fall on some runs and
not others and move the medians' ratio from one bench run to the next, either way; the first
quartile is mostly runs no other work delayed), and the load average.
A measurement, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIDES = {"none": ("without otel", None), "noop": ("no-op tracer (API, no SDK)", 1.05), "sdk": ("SDK: SimpleSpanProcessor, in-memory exporter", 1.3)}
MESSAGE = 'use lookup({"city": "Paris"})'

BLOCK = """
class _NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError("opentelemetry is not installed here")
sys.meta_path.insert(0, _NoOpenTelemetry())
"""


def side(name: str, model_url: str) -> None:
    """Serve this process as side ``name``: each line read asks for that many timed runs, answered with their times."""
    if name == "none":
        exec(BLOCK, {"sys": sys})
    elif name == "sdk":
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        provider = TracerProvider()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    sys.path.insert(0, ROOT)
    from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry

    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    with tempfile.TemporaryDirectory() as folder, MemoryRouter("sql", url=f"sqlite:///{folder}/bench.db") as router:
        agent = OmniCoreAgent(
            name="bench",
            system_instruction="You are a helpful assistant with tools.",
            model_config={"model": "gpt-5.4-mini", "base_url": model_url, "max_retries": 0},
            memory_router=router,
            local_tools=tools,
        )
        done = 0

        def timed_run() -> float:
            nonlocal done
            start = time.perf_counter()
            result = agent.run(MESSAGE, session_id=f"s{done}")
            elapsed = time.perf_counter() - start
            assert result["status"] == "completed", result
            done += 1
            if name == "sdk" and done % 10 == 0:
                exporter.clear()  # an exporter that ships spans away holds none for long
            return elapsed

        for _ in range(3):  # warm up connections and caches
            timed_run()
        print("ready", flush=True)
        for line in sys.stdin:
            print(json.dumps([timed_run() for _ in range(int(line))]), flush=True)
        agent.cleanup()


def serve_model(port: int) -> None:
    """cassettes/scripted_model.py's answers on ``port``, each in one write with Nagle off."""
    import importlib.util
    from http.server import ThreadingHTTPServer

    spec = importlib.util.spec_from_file_location("scripted_model", os.path.join(ROOT, "cassettes", "scripted_model.py"))
    assert spec is not None and spec.loader is not None
    scripted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scripted)

    class Handler(scripted._Handler):  # type: ignore[name-defined,misc]
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            payload = json.dumps(scripted.answer(body)).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
            self.wfile.write(head + payload)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def take_turns(model_url: str, rounds: range, runs: int, timings: dict[str, list[float]]) -> None:
    """Start one process per side and ask each for ``runs`` runs in turn, each round (each side first in turn)."""
    workers: dict[str, subprocess.Popen[str]] = {}
    try:
        for name in SIDES:
            command = [sys.executable, __file__, "--side", name, "--model-url", model_url]
            workers[name] = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for worker in workers.values():
            assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
        names = list(SIDES)
        for number in rounds:
            for name in names[number % 3 :] + names[: number % 3]:
                worker = workers[name]
                assert worker.stdin is not None and worker.stdout is not None
                worker.stdin.write(f"{runs}\n")
                worker.stdin.flush()
                timings[name] += json.loads(worker.stdout.readline())
    finally:
        for worker in workers.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2, help="runs per side in each round")
    parser.add_argument("--processes", type=int, default=4, help="sets of side processes, one after another")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    parser.add_argument("--serve-model", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve_model:
        serve_model(options.serve_model)
        return
    if options.side:
        side(options.side, options.model_url)
        return
    port = free_port()
    model = subprocess.Popen([sys.executable, __file__, "--serve-model", str(port)])
    timings: dict[str, list[float]] = {name: [] for name in SIDES}
    try:
        time.sleep(1.0)
        model_url = f"http://127.0.0.1:{port}/v1"
        for generation in range(options.processes):  # fresh processes: no one process's luck holds for the whole bench
            rounds = range(generation * options.rounds // options.processes, (generation + 1) * options.rounds // options.processes)
            take_turns(model_url, rounds, options.runs, timings)
    finally:
        model.terminate()
        model.wait(10)
    base = statistics.median(timings["none"])
    base_quarter = quartile(timings["none"])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {options.rounds} rounds x {options.runs} runs per side\n")
    print("| side | median ms per run | ratio | goal | fastest quarter's ms (p25) | its ratio |")
    print("|---|---:|---:|---|---:|---:|")
    for name, (label, goal) in SIDES.items():
        median, quarter = statistics.median(timings[name]), quartile(timings[name])
        ratio = median / base
        verdict = "baseline" if goal is None else f"<= {goal}x: {'met' if ratio <= goal else 'MISSED'}"
        print(f"| {label} | {median * 1000:.2f} | {ratio:.3f}x | {verdict} | {quarter * 1000:.2f} | {quarter / base_quarter:.3f}x |")


def quartile(times: list[float]) -> float:
    """The first quartile: on a busy machine, mostly runs that no other work delayed."""
    return statistics.quantiles(times, n=4)[0]

if __name__ == "__main__":
    main()
