"""Streaming against the instant local model: time to first text delta and total time, medians and ratios.

    python bench/stream.py                 # 60- and 1,000-chunk answers
    python bench/stream.py --repeat 50 --chunks 60,1000,5000

For each answer length it times, in one run and in turn, in a shuffled order each round (so
every client sees the same load):
ours streamed (``ChatClient.stream``), a whole ``agent.stream`` run on the in-process store, ours whole (``ChatClient.complete``, whose first text is
its last), raw ``requests`` with our SSE parser alone (a reused Session and a request prepared
once, read1, EventParser, json.loads, the text gathered: the least work any requests-based
client does for the same answer), and the official ``openai`` client streaming if it is
installed. The server (bench/model_server.py) runs in its own process and answers at once, so
the figures are client cost plus loopback. A measurement, not a test: it asserts nothing.
The table goes to stdout and to bench/stream_results.md (``--out ''`` writes none).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import requests  # noqa: E402

from omnisync.model.client import ChatClient  # noqa: E402
from omnisync.model.config import ModelConfig  # noqa: E402
from omnisync.model.sse import EventParser  # noqa: E402
from omnisync.model.stream import TextFragment  # noqa: E402

MESSAGES = [{"role": "user", "content": "Where does the memory setting live?"}]
Timing = tuple[float, float]  # seconds to the first text, seconds in all


def ours_streamed(base_url: str) -> Callable[[int], Timing]:
    chat = ChatClient(ModelConfig.from_dict({"model": "bench-instant", "base_url": base_url}))

    def once(chunks: int) -> Timing:
        start = time.perf_counter()
        first = None
        with chat.stream(MESSAGES, max_tokens=chunks) as stream:
            for delta in stream:
                if first is None and isinstance(delta, TextFragment):
                    first = time.perf_counter()
        assert stream.completion.finish_reason == "stop"
        return first - start, time.perf_counter() - start  # type: ignore[operator]

    return once


def agent_streamed(base_url: str) -> Callable[[int], Timing]:
    """The whole of agent.stream: the run loop, the in-process store, then the same wire."""
    from omnisync import OmniCoreAgent
    from omnisync.run_events import TextDelta as AgentText

    agents: dict[int, OmniCoreAgent] = {}

    def once(chunks: int) -> Timing:
        if chunks not in agents:
            model = {"model": "bench-instant", "base_url": base_url, "max_tokens": chunks}
            agents[chunks] = OmniCoreAgent(name="bench", system_instruction="Answer.", model_config=model)
        start = time.perf_counter()
        first = None
        with agents[chunks].stream(MESSAGES[0]["content"]) as stream:
            for event in stream:
                if first is None and isinstance(event, AgentText):
                    first = time.perf_counter()
        assert stream.result["status"] == "completed"
        return first - start, time.perf_counter() - start  # type: ignore[operator]

    return once


def ours_whole(base_url: str) -> Callable[[int], Timing]:
    chat = ChatClient(ModelConfig.from_dict({"model": "bench-instant", "base_url": base_url}))

    def once(chunks: int) -> Timing:
        start = time.perf_counter()
        chat.complete(MESSAGES, max_tokens=chunks)
        total = time.perf_counter() - start
        return total, total

    return once


def raw_requests(base_url: str) -> Callable[[int], Timing]:
    """The least work that gives the same answer through requests: one reused Session and
    connection, one request prepared once (the environment read once), the body encoded per call;
    read1, EventParser, json.loads of each event, the text gathered."""
    session = requests.Session()
    url = f"{base_url}/chat/completions"
    session.proxies.update(requests.utils.get_environ_proxies(url))
    session.trust_env = False
    prepared = session.prepare_request(requests.Request("POST", url, headers={"Content-Type": "application/json"}, data=b"{}"))

    def once(chunks: int) -> Timing:
        body = {"model": "bench-instant", "messages": MESSAGES, "max_tokens": chunks, "stream": True, "stream_options": {"include_usage": True}}
        start = time.perf_counter()
        first = None
        text = []
        parser = EventParser()
        prepared.prepare_body(json.dumps(body).encode(), None)
        with session.send(prepared, stream=True, timeout=60) as response:
            while piece := response.raw.read1(65536, decode_content=True):
                for event in parser.feed(piece):
                    if event.data == "[DONE]":
                        break
                    chunk = json.loads(event.data)
                    if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                        text.append(chunk["choices"][0]["delta"]["content"])
                        if first is None:
                            first = time.perf_counter()
            response.raw.release_conn()  # read to its end: the connection goes back to the pool
        assert len(text) == chunks
        return first - start, time.perf_counter() - start  # type: ignore[operator]

    return once


def openai_streamed(base_url: str) -> Callable[[int], Timing] | None:
    try:
        import openai
    except ImportError:
        return None
    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)

    def once(chunks: int) -> Timing:
        start = time.perf_counter()
        first = None
        stream = client.chat.completions.create(
            model="bench-instant", messages=MESSAGES, max_tokens=chunks, stream=True, stream_options={"include_usage": True}  # type: ignore[arg-type]
        )
        for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter()
        return first - start, time.perf_counter() - start  # type: ignore[operator]

    return once


def start_server() -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "model_server.py")], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def measure(clients: dict[str, Callable[[int], Timing]], chunks: int, repeat: int) -> dict[str, list[Timing]]:
    for once in clients.values():
        for _ in range(5):
            once(chunks)  # warm up: connections, imports, caches
    timings: dict[str, list[Timing]] = {name: [] for name in clients}
    order = list(clients.items())
    for _ in range(repeat):
        random.shuffle(order)  # interleaved in a new order each round: drift in load, and what ran before, hit all alike
        for name, once in order:
            timings[name].append(once(chunks))
    return timings


def table(results: dict[int, list[dict[str, list[Timing]]]]) -> str:
    """Per client, the median over runs of each run's medians; a ratio to raw is the median of
    the runs' ratios (each run's median over raw's in the same run), each run's beside it."""
    lines = [
        "| answer | client | first text, median ms | total, median ms | first text / raw, median of runs | per run | total / raw | total - raw, ms |",
        "|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for chunks, runs in results.items():
        per_run = [
            {name: (statistics.median(t[0] for t in timings), statistics.median(t[1] for t in timings)) for name, timings in run.items()}
            for run in runs
        ]
        for name in per_run[0]:
            first = statistics.median(run[name][0] for run in per_run)
            total = statistics.median(run[name][1] for run in per_run)
            raw = [run["raw requests + parser"] for run in per_run]
            first_ratios = [run[name][0] / base[0] for run, base in zip(per_run, raw)]
            total_ratio = statistics.median(run[name][1] / base[1] for run, base in zip(per_run, raw))
            total_over = statistics.median(run[name][1] - base[1] for run, base in zip(per_run, raw))
            each = " / ".join(f"{ratio:.2f}" for ratio in first_ratios)
            lines.append(
                f"| {chunks} chunks | {name} | {first * 1e3:.2f} | {total * 1e3:.2f} | {statistics.median(first_ratios):.2f}x | {each} | "
                f"{total_ratio:.2f}x | {total_over * 1e3:+.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="60,1000", help="answer lengths in chunks, comma-separated")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3, help="whole runs of the table; the figures are the median of their medians")
    parser.add_argument("--out", default=os.path.join(HERE, "stream_results.md"))
    options = parser.parse_args()
    server, base_url = start_server()
    try:
        clients = {
            "ours, streamed": ours_streamed(base_url),
            "ours, agent.stream (in-process store)": agent_streamed(base_url),
            "ours, whole (complete)": ours_whole(base_url),
            "raw requests + parser": raw_requests(base_url),
        }
        peer = openai_streamed(base_url)
        if peer is not None:
            clients["openai, streamed"] = peer
        results: dict[int, list[dict[str, list[Timing]]]] = {}
        for run in range(options.runs):
            for chunks in (int(c) for c in options.chunks.split(",")):
                print(f"run {run + 1}: {chunks} chunks x {options.repeat}...", file=sys.stderr)
                results.setdefault(chunks, []).append(measure(clients, chunks, options.repeat))
    finally:
        server.terminate()
        server.wait()
    text = table(results)
    notes = [
        "",
        f"{options.runs} runs of {options.repeat} calls per row, interleaved; medians of each run, then the median of those; Python {sys.version.split()[0]}, requests {requests.__version__}"
        + ("" if peer is not None else "; openai not installed, its rows left out"),
        "Goals (issues 10 and 23): first text within 1.2x of raw at 60 and 1,000 chunks; a 1,000-chunk answer under 20 ms over raw.",
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; figures of a few ms move with it.",
    ]
    print(text + "\n" + "\n".join(notes))
    if options.out:
        with open(options.out, "w") as out:
            out.write("# Streaming: first text and total time (bench/stream.py)\n\n" + text + "\n" + "\n".join(notes) + "\n")


if __name__ == "__main__":
    main()
