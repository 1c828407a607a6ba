"""One model call against the instant local model: ours against the cheapest correct uses of requests and http.client.

    python bench/model_call.py                  # 1,000 rounds of one call per client
    python bench/model_call.py --rounds 3000 --messages 40

Every client sends the same body (a system prompt and ``--messages`` chat messages, JSON
encoded on each call, as any client given new messages must) with the same headers, and
reads the same answer (the reply's text, from the JSON body). They take turns call by call,
in a shuffled order each round, so load drifts hit all of them alike. The server (bench/model_server.py) runs in its
own process and answers at once: the figures are client cost plus loopback. Each call's CPU
time in this process is shown too: on a loaded shared machine it moves far less than the wall time.

- ours: ``ChatClient.complete`` (its Completion, retries armed, deadline checked)
- requests, prepared: one reused ``Session``, one ``PreparedRequest`` built once whose body is
  swapped per call, proxies and CA read once, ``session.send`` then ``json.loads`` of the body
  (the least work that gives the same answer through requests: the baseline of the goal)
- http.client: one kept-alive ``HTTPConnection``, ``request`` then ``json.loads``
- requests, session.post: what a plain ``requests`` user writes (shown, not a goal)

A measurement, not a test: it asserts nothing but that every client read the same text.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import requests  # noqa: E402
from stream import start_server  # noqa: E402

from omnisync.model.client import USER_AGENT, ChatClient  # noqa: E402
from omnisync.model.config import ModelConfig  # noqa: E402

KEY = "bench-key"
Call = Callable[[], str]  # one model call; returns the reply's text


def conversation(length: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You answer briefly."}]
    for i in range(length):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append({"role": role, "content": f"Message {i}: " + "where does the memory setting live, and why? " * 6})
    return messages


def headers() -> dict[str, str]:
    return {"User-Agent": USER_AGENT, "Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}


def ours(base_url: str, messages: list[dict[str, Any]]) -> Call:
    chat = ChatClient(ModelConfig.from_dict({"model": "bench-instant", "base_url": base_url, "api_key": KEY}))
    return lambda: chat.complete(messages).content or ""


def requests_prepared(base_url: str, messages: list[dict[str, Any]]) -> Call:
    session = requests.Session()
    url = f"{base_url}/chat/completions"
    session.proxies.update(requests.utils.get_environ_proxies(url))  # the environment read once, not per call
    session.trust_env = False
    prepared = session.prepare_request(requests.Request("POST", url, headers=headers(), data=b"{}"))

    def call() -> str:
        prepared.prepare_body(json.dumps({"model": "bench-instant", "messages": messages}).encode(), None)
        response = session.send(prepared, timeout=60)
        answer: str = json.loads(response.content)["choices"][0]["message"]["content"]
        return answer

    return call


def plain_http_client(base_url: str, messages: list[dict[str, Any]]) -> Call:
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
    path = f"{parts.path}/chat/completions"
    sent_headers = {**headers(), "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}

    def call() -> str:
        connection.request("POST", path, body=json.dumps({"model": "bench-instant", "messages": messages}).encode(), headers=sent_headers)
        answer: str = json.loads(connection.getresponse().read())["choices"][0]["message"]["content"]
        return answer

    return call


def requests_post(base_url: str, messages: list[dict[str, Any]]) -> Call:
    session = requests.Session()
    url = f"{base_url}/chat/completions"
    sent_headers = headers()

    def call() -> str:
        body = {"model": "bench-instant", "messages": messages}
        answer: str = session.post(url, json=body, headers=sent_headers, timeout=60).json()["choices"][0]["message"]["content"]
        return answer

    return call


CLIENTS = {
    "ours (ChatClient.complete)": ours,
    "requests, reused Session + prepared request": requests_prepared,
    "http.client, kept-alive connection": plain_http_client,
    "requests, session.post (for reference)": requests_post,
}
BASELINES = ("requests, reused Session + prepared request", "http.client, kept-alive connection")


def measure(calls: dict[str, Call], rounds: int) -> dict[str, list[tuple[float, float]]]:
    answers = {name: call() for name, call in calls.items()}
    assert len(set(answers.values())) == 1, answers  # every client read the same text
    for call in calls.values():
        for _ in range(50):
            call()  # warm up: connections, caches
    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in calls}  # (wall, this process's CPU)
    order = list(calls.items())
    for _ in range(rounds):
        random.shuffle(order)
        for name, call in order:
            started, cpu = time.perf_counter(), time.process_time()
            call()
            seconds[name].append((time.perf_counter() - started, time.process_time() - cpu))
    return seconds


def table(seconds: dict[str, list[tuple[float, float]]]) -> str:
    wall = {name: statistics.median(w for w, _ in runs) for name, runs in seconds.items()}
    cpu = {name: statistics.median(c for _, c in runs) for name, runs in seconds.items()}
    lines = [
        "| client | per call, median us | / requests prepared | / http.client | client CPU, median us | CPU / requests prepared |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    first, second = BASELINES
    for name in seconds:
        lines.append(
            f"| {name} | {wall[name] * 1e6:.0f} | {wall[name] / wall[first]:.2f}x | {wall[name] / wall[second]:.2f}x | "
            f"{cpu[name] * 1e6:.0f} | {cpu[name] / cpu[first]:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000, help="rounds of one call per client")
    parser.add_argument("--messages", type=int, default=20, help="chat messages in the body, besides the system prompt")
    options = parser.parse_args()
    server, base_url = start_server()
    try:
        messages = conversation(options.messages)
        calls = {name: build(base_url, messages) for name, build in CLIENTS.items()}
        seconds = measure(calls, options.rounds)
    finally:
        server.terminate()
        server.wait()
    body_bytes = len(json.dumps({"model": "bench-instant", "messages": messages}))
    print(table(seconds))
    print(
        f"\n{options.rounds} calls per client, interleaved one by one in shuffled order, medians; a body of "
        f"{len(messages)} messages ({body_bytes} bytes); Python {sys.version.split()[0]}, requests {requests.__version__}\n"
        "Goal (issue 23): ours within 1.1x of requests with a reused Session and prepared request.\n"
        f"Load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores."
    )


if __name__ == "__main__":
    main()
