"""What OpenTelemetry costs a run: without the extra, with a no-op tracer, with the SDK exporting to memory.

    python bench/telemetry.py                  # 5 rounds of 40 runs per side
    python bench/telemetry.py --rounds 3 --runs 20

One run is ``agent.run`` with one tool call (two model calls, the tool, about ten store round
trips) on a SQLite file, against cassettes/scripted_model.py's answers served from a process
of their own (Nagle off, each answer one write, so no delayed ACK pads the runs). Each side
runs in a process of its own (OpenTelemetry's providers are set once per process), in turn,
round after round, so every side sees the same load:

- ``without otel``: opentelemetry made unimportable (as without ``omnisync[otel]``): the
  baseline, doing the least work that gives the same answer;
- ``no-op tracer``: ``opentelemetry-api`` installed, no SDK configured (goal: within 1.05x);
- ``SDK, in-memory``: the SDK's TracerProvider with a SimpleSpanProcessor into an
  InMemorySpanExporter and a MeterProvider with an InMemoryMetricReader (goal: within 1.3x).

Prints medians of the time per run and their ratios to the baseline, and the load average.
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
SIDES = {"none": ("without otel", None), "noop": ("no-op tracer", 1.05), "sdk": ("SDK, in-memory", 1.3)}
MESSAGE = 'use lookup({"city": "Paris"})'

BLOCK = """
class _NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError("opentelemetry is not installed here")
sys.meta_path.insert(0, _NoOpenTelemetry())
"""


def side(name: str, model_url: str, runs: int) -> list[float]:
    """Time ``runs`` runs in this process, set up as side ``name``."""
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

    timings = []
    with tempfile.TemporaryDirectory() as folder, MemoryRouter("sql", url=f"sqlite:///{folder}/bench.db") as router:
        agent = OmniCoreAgent(
            name="bench",
            system_instruction="You are a helpful assistant with tools.",
            model_config={"model": "gpt-5.4-mini", "base_url": model_url, "max_retries": 0},
            memory_router=router,
            local_tools=tools,
        )
        for index in range(runs + 3):  # the first three warm up connections and caches
            start = time.perf_counter()
            result = agent.run(MESSAGE, session_id=f"s{index}")
            elapsed = time.perf_counter() - start
            assert result["status"] == "completed", result
            if index >= 3:
                timings.append(elapsed)
            if name == "sdk" and index % 10 == 0:
                exporter.clear()  # an exporter that ships spans away holds none for long
        agent.cleanup()
    return timings


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--model-url", help=argparse.SUPPRESS)
    parser.add_argument("--serve-model", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve_model:
        serve_model(options.serve_model)
        return
    if options.side:
        print(json.dumps(side(options.side, options.model_url, options.runs)))
        return
    port = free_port()
    model = subprocess.Popen([sys.executable, __file__, "--serve-model", str(port)])
    try:
        time.sleep(1.0)
        model_url = f"http://127.0.0.1:{port}/v1"
        timings: dict[str, list[float]] = {name: [] for name in SIDES}
        for number in range(options.rounds):
            for name in SIDES:
                print(f"round {number + 1}/{options.rounds}: {SIDES[name][0]}", file=sys.stderr)
                command = [sys.executable, __file__, "--side", name, "--model-url", model_url, "--runs", str(options.runs)]
                timings[name] += json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    finally:
        model.terminate()
        model.wait(10)
    base = statistics.median(timings["none"])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {options.rounds} rounds x {options.runs} runs per side\n")
    print("| side | median ms per run | ratio | goal |")
    print("|---|---:|---:|---|")
    for name, (label, goal) in SIDES.items():
        median = statistics.median(timings[name])
        ratio = median / base
        verdict = "baseline" if goal is None else f"<= {goal}x: {'met' if ratio <= goal else 'MISSED'}"
        print(f"| {label} | {median * 1000:.2f} | {ratio:.3f}x | {verdict} |")


if __name__ == "__main__":
    main()
