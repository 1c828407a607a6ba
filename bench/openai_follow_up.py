"""Time to the first event of a follow-up turn: OpenAI's Responses API served by omnisync vs the agent called directly.

    python bench/openai_follow_up.py [--repeat 30] [--turns 10] [--store sqlite|in_memory]

Both sides run the same agent on the same store against bench/model_server.py (an instant
model that streams), each turn a follow-up in a conversation that already has ``--turns``
exchanges. "direct" is ``agent.stream(...)`` in this process (the least work that gives the
same answer: no HTTP, no ledger); "served" is the official ``openai`` client's
``client.responses.stream(previous_response_id=...)`` against ``omnisync serve``'s app under
uvicorn on loopback; "served_raw" the same request over plain ``requests`` (the server's cost
without the client's). Printed: the median milliseconds to the first event (``RunStarted`` /
``response.created``) and to the first text, and served/direct ratios, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

import openai
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from serve_servers import uvicorn_server  # noqa: E402
from stream import start_server  # noqa: E402

from omnisync import MemoryRouter, OmniCoreAgent  # noqa: E402
from omnisync.run_events import RunStarted, TextDelta  # noqa: E402
from omnisync.serve import create_app  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def direct(agent: OmniCoreAgent, session_id: str) -> tuple[float, float]:
    start = time.perf_counter()
    first = text = 0.0
    with agent.stream("and one more thing?", session_id) as stream:
        for event in stream:
            if isinstance(event, RunStarted) and not first:
                first = time.perf_counter() - start
            if isinstance(event, TextDelta) and not text:
                text = time.perf_counter() - start
    return first, text


def served(client: openai.OpenAI, model: str, previous: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    first = text = 0.0
    with client.responses.stream(model=model, previous_response_id=previous[0], input="and one more thing?") as stream:
        for event in stream:
            if not first:
                first = time.perf_counter() - start
            if event.type == "response.output_text.delta" and not text:
                text = time.perf_counter() - start
        previous[0] = stream.get_final_response().id
    return first, text


def served_raw(http: requests.Session, base: str, model: str, previous: list[str]) -> tuple[float, float]:
    """The same request over plain ``requests``: what the server costs without the openai client's own."""
    start = time.perf_counter()
    first = text = 0.0
    body = {"model": model, "previous_response_id": previous[0], "input": "and one more thing?", "stream": True}
    with http.post(base + "/v1/responses", json=body, stream=True) as answer:
        for line in answer.iter_lines():
            if line.startswith(b"data: ") and not first:
                first = time.perf_counter() - start
            if line.startswith(b"data: ") and b'"response.output_text.delta"' in line and not text:
                text = time.perf_counter() - start
            if line.startswith(b"data: ") and b'"response.completed"' in line:
                previous[0] = json.loads(line[6:])["response"]["id"]
    return first, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--store", choices=["sqlite", "in_memory"], default="sqlite")
    options = parser.parse_args()
    model_server, model_url = start_server()
    folder = tempfile.mkdtemp()
    router = MemoryRouter("sql", url=f"sqlite:///{folder}/bench.db") if options.store == "sqlite" else MemoryRouter("in_memory")
    name = f"bench-{uuid.uuid4().hex[:8]}"
    config = {"provider": "openai", "model": "bench", "base_url": model_url, "api_key": "bench", "max_retries": 0, "max_tokens": 60}
    agent = OmniCoreAgent(name, "You answer briefly.", config, memory_router=router, agent_config={"memory_config": {"mode": "sliding_window", "value": 20}})
    try:
        with uvicorn_server(create_app(agent, tokens={TOKEN: [name]})) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key=TOKEN, max_retries=0)
            session = f"direct-{uuid.uuid4().hex[:8]}"
            previous = [client.responses.create(model=name, input="hello").id]
            for _ in range(options.turns):
                agent.run("earlier turn", session)
                client.responses.create(model=name, previous_response_id=previous[0], input="earlier turn")
            previous[0] = client.responses.create(model=name, previous_response_id=previous[0], input="earlier turn").id
            for _ in range(3):  # warm up
                direct(agent, session)
                served(client, name, previous)
            http = requests.Session()
            http.headers["Authorization"] = f"Bearer {TOKEN}"
            sides: dict[str, list[tuple[float, float]]] = {"direct": [], "served": [], "served_raw": []}
            for _ in range(options.repeat):
                sides["direct"].append(direct(agent, session))
                sides["served"].append(served(client, name, previous))
                sides["served_raw"].append(served_raw(http, base, name, previous))
            http.close()
            client.close()
    finally:
        agent.cleanup()
        router.close()
        model_server.kill()
    medians = {side: [statistics.median(t[i] for t in timings) * 1000 for i in (0, 1)] for side, timings in sides.items()}
    print(f"store {options.store}, {options.turns} earlier turns, {options.repeat} follow-ups each, load average {os.getloadavg()[0]:.2f}")
    print("| side | first event (ms) | first text (ms) |")
    print("|---|---|---|")
    for side, (first, text) in medians.items():
        print(f"| {side} | {first:.1f} | {text:.1f} |")
    for side in ("served", "served_raw"):
        print(f"| {side} / direct | {medians[side][0] / medians['direct'][0]:.2f}x | {medians[side][1] / medians['direct'][1]:.2f}x |")


if __name__ == "__main__":
    main()
