"""Streaming against the instant local model: time to first text delta and total time, medians and ratios.

    python bench/stream.py                 # 60- and 1,000-chunk answers
    python bench/stream.py --repeat 50 --chunks 60,1000,5000

For each answer length it times, in one run and in turn (so every client sees the same load):
ours streamed (``ChatClient.stream``), a whole ``agent.stream`` run on the in-process store, ours whole (``ChatClient.complete``, whose first text is
its last), raw ``requests`` with our SSE parser alone (read1, EventParser, json.loads: the
floor any requests-based client pays), and the official ``openai`` client streaming if it is
installed. The server (bench/model_server.py) runs in its own process and answers at once, so
the figures are client cost plus loopback. A measurement, not a test: it asserts nothing.
The table goes to stdout and to bench/stream_results.md (``--out ''`` writes none).
"""

from __future__ import annotations

import argparse
import json
import os
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
from omnisync.model.stream import TextDelta  # noqa: E402

MESSAGES = [{"role": "user", "content": "Where does the memory setting live?"}]
Timing = tuple[float, float]  # seconds to the first text, seconds in all


def ours_streamed(base_url: str) -> Callable[[int], Timing]:
    chat = ChatClient(ModelConfig.from_dict({"model": "bench-instant", "base_url": base_url}))

    def once(chunks: int) -> Timing:
        start = time.perf_counter()
        first = None
        with chat.stream(MESSAGES, max_tokens=chunks) as stream:
            for delta in stream:
                if first is None and isinstance(delta, TextDelta):
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
    session = requests.Session()
    url = f"{base_url}/chat/completions"

    def once(chunks: int) -> Timing:
        body = {"model": "bench-instant", "messages": MESSAGES, "max_tokens": chunks, "stream": True, "stream_options": {"include_usage": True}}
        start = time.perf_counter()
        first = None
        parser = EventParser()
        with session.post(url, json=body, stream=True) as response:
            while piece := response.raw.read1(65536, decode_content=True):
                for event in parser.feed(piece):
                    if event.data == "[DONE]":
                        break
                    chunk = json.loads(event.data)
                    if first is None and chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                        first = time.perf_counter()
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
    for _ in range(repeat):
        for name, once in clients.items():  # interleaved, so drift in load hits all alike
            timings[name].append(once(chunks))
    return timings


def table(results: dict[int, dict[str, list[Timing]]]) -> str:
    lines = [
        "| answer | client | first text, median ms | total, median ms | first text / raw | total / raw | total - raw, ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for chunks, timings in results.items():
        medians = {name: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs)) for name, runs in timings.items()}
        raw_first, raw_total = medians["raw requests + parser"]
        for name, (first, total) in medians.items():
            lines.append(
                f"| {chunks} chunks | {name} | {first * 1e3:.2f} | {total * 1e3:.2f} | {first / raw_first:.2f}x | "
                f"{total / raw_total:.2f}x | {(total - raw_total) * 1e3:+.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="60,1000", help="answer lengths in chunks, comma-separated")
    parser.add_argument("--repeat", type=int, default=50)
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
        results = {}
        for chunks in (int(c) for c in options.chunks.split(",")):
            print(f"{chunks} chunks x {options.repeat}...", file=sys.stderr)
            results[chunks] = measure(clients, chunks, options.repeat)
    finally:
        server.terminate()
        server.wait()
    text = table(results)
    notes = [
        "",
        f"{options.repeat} runs per row, interleaved, medians; Python {sys.version.split()[0]}, requests {requests.__version__}"
        + ("" if peer is not None else "; openai not installed, its rows left out"),
        "Goals (issue 10): first text within 1.2x of raw; a 1,000-chunk answer under 20 ms over raw.",
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; figures of a few ms move with it.",
    ]
    print(text + "\n" + "\n".join(notes))
    if options.out:
        with open(options.out, "w") as out:
            out.write("# Streaming: first text and total time (bench/stream.py)\n\n" + text + "\n" + "\n".join(notes) + "\n")


if __name__ == "__main__":
    main()
