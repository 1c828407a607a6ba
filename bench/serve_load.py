"""Served runs under load: N streaming clients against `omnisync serve`, beside the same runs made directly.

    python bench/serve_load.py                                 # 16 clients x 25 runs; SQLite, PostgreSQL, Redis; 1 and 4 workers
    python bench/serve_load.py --clients 8 --runs 50 --stores redis --workers 1,2,4
    python bench/serve_load.py --stores redis --workers 1 --chunks 200    # longer answers: more events a run

For each store and each ``--workers`` count it starts the server as a user would,
``python -m omnisync.cli serve served_agent:agent --port P --workers W`` (from bench/; the agent
is bench/served_agent.py, on that store and the instant local model bench/model_server.py),
waits for /readyz and for every worker's startup, then:

- served: ``--clients`` threads, each with its own connection (a ``requests.Session``, as
  RemoteAgent keeps one) and its own sessions, POST ``--runs`` runs each with
  ``Accept: text/event-stream`` and read every stream to its end;
- direct: once the server has stopped, the same threads make the same runs through
  ``agent.stream(...)`` on one agent in this process, on the same store (a row's own agent name).

Each side first makes ``--warmup`` untimed runs per client. Time to first event runs from
sending the POST (or calling ``agent.stream``) to the first event (``run_started``: the run
holds its session and its record is stored); time to first text, to the first piece of the
answer; time to end, to the run's ending event. CPU is per run: the server's processes (read from /proc) and the clients', and
direct's; "cores busy" is the whole machine's. An error is a non-2xx answer, a broken stream
or one that ends early, or a run whose ending event is not a completed run. PostgreSQL rows
use the shared database under an agent name of their own, Redis rows a key prefix of their
own, SQLite rows a temporary file; all are deleted afterwards. The table goes to stdout; it
asserts nothing and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

import requests  # noqa: E402

from run import _model_server, _services_env  # noqa: E402

STORES = {"sqlite": ("sql", None), "postgres": ("sql", "DATABASE_URL_POSTGRES"), "redis": ("redis", "REDIS_URL")}
TITLES = {"sqlite": "SQLite file", "postgres": "PostgreSQL", "redis": "Redis"}
SESSIONS_PER_CLIENT = 4  # a client's consecutive runs go to different sessions of its own, so none waits on a session
ENDING_EVENTS = ("run_paused", "run_finished", "run_failed")
START_SECONDS = 60


@dataclass
class Outcome:
    """One run as its client saw it: seconds to the first event (``run_started``), to the first
    piece of the answer's text and to the ending event, or an error."""

    first: float = 0.0
    first_text: float = 0.0
    end: float = 0.0
    error: str | None = None


@dataclass
class Load:
    outcomes: list[Outcome]
    elapsed: float
    cpu: float  # CPU seconds this process spent meanwhile: the clients' (served) or the library's (direct)
    server_cpu: float  # the server's processes' (served), else 0
    busy: float  # the machine's CPU seconds meanwhile, every process on it (the model's and store's servers too)

    @property
    def runs_per_second(self) -> float:
        return len(self.outcomes) / self.elapsed

    def cpu_ms_per_run(self, seconds: float) -> float:
        return seconds / len(self.outcomes) * 1000

    @property
    def cores_busy(self) -> float:
        return self.busy / self.elapsed

    @property
    def errors(self) -> list[str]:
        return [o.error for o in self.outcomes if o.error is not None]

    def ms(self, field: str, quantile: float) -> float:
        values = sorted(getattr(o, field) for o in self.outcomes if o.error is None)
        if not values:
            return float("nan")
        if quantile == 0.5:
            return statistics.median(values) * 1000
        return values[min(len(values) - 1, int(len(values) * quantile))] * 1000


# --- the clients ------------------------------------------------------------------------------

RunOnce = Callable[[int, int], Outcome]  # (client, index) -> how that run went


def drive(runners: list[RunOnce], warmup: int, runs: int, server_cpu: Callable[[], float] = lambda: 0.0) -> Load:
    """A thread per runner (a client) makes ``warmup`` untimed runs, then, once all have, ``runs`` timed ones.

    The same threads do both, so their connections (to the server, or the agent's to the
    model) are warm when the clock starts."""
    outcomes: list[list[Outcome]] = [[] for _ in runners]
    warmed, go = threading.Barrier(len(runners) + 1), threading.Barrier(len(runners) + 1)

    def client(number: int) -> None:
        for index in range(warmup):
            runners[number](number, index)
        warmed.wait()
        go.wait()
        outcomes[number] = [runners[number](number, index) for index in range(warmup, warmup + runs)]

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(len(runners))]
    for thread in threads:
        thread.start()
    warmed.wait()
    cpu, server, busy = cpu_seconds(), server_cpu(), machine_busy_seconds()
    go.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    outcome = [o for found in outcomes for o in found]
    return Load(outcome, elapsed, cpu_seconds() - cpu, server_cpu() - server, machine_busy_seconds() - busy)


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def machine_busy_seconds() -> float:
    """CPU seconds all cores have spent on anything but idling and waiting for I/O, from /proc/stat."""
    with open("/proc/stat") as stat:
        ticks = [int(n) for n in stat.readline().split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # user..steal, less idle and iowait


def session_of(client: int, index: int) -> str:
    return f"c{client}-{index % SESSIONS_PER_CLIENT}"


def served_runner(base: str, agent: str) -> RunOnce:
    http = requests.Session()

    def run_once(client: int, index: int) -> Outcome:
        url = f"{base}/agents/{agent}/sessions/{session_of(client, index)}/runs"
        started = time.perf_counter()
        first = first_text = None
        try:
            with http.post(url, json={"message": f"c{client}-{index}"}, headers={"Accept": "text/event-stream"}, stream=True, timeout=60) as response:
                if not 200 <= response.status_code < 300:
                    return Outcome(error=f"HTTP {response.status_code}: {response.text[:200]}")
                for name, data in sse_events(response):
                    if first is None:
                        first = time.perf_counter() - started
                    if first_text is None and name == "text_delta":
                        first_text = time.perf_counter() - started
                    if name in ENDING_EVENTS:
                        return ended(first, first_text, time.perf_counter() - started, name, json.loads(data))
        except (requests.RequestException, ValueError) as exc:  # ValueError: an event whose data is not JSON
            return Outcome(error=f"broken stream: {type(exc).__name__}: {exc}")
        return Outcome(error="the stream closed before the run's ending event")

    return run_once


def sse_events(response: requests.Response) -> Iterator[tuple[str, str]]:
    """Each (event, data) of a server-sent event stream, as soon as its blank line arrives."""
    name = data = ""
    for line in response.iter_lines(chunk_size=None, decode_unicode=True):
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data = line[len("data: "):]
        elif not line and name:
            yield name, data
            name = data = ""


def ended(first: float, first_text: float | None, end: float, name: str, data: dict[str, Any]) -> Outcome:
    status = (data.get("result") or {}).get("status")
    if name != "run_finished" or status != "completed":
        return Outcome(error=f"ended with {name} ({status or data.get('error')})")
    if first_text is None:
        return Outcome(error="completed without streaming any text")
    return Outcome(first, first_text, end)


def direct_runner(agent: Any) -> RunOnce:
    """Runs through ``agent.stream``; every client shares the one agent, as a server process's threads do."""
    from omnisync.run_events import RunFailed, RunFinished, RunPaused, TextDelta

    def run_once(client: int, index: int) -> Outcome:
        started = time.perf_counter()
        first = first_text = end = None
        try:
            with agent.stream(f"c{client}-{index}", session_id=session_of(client, index)) as stream:
                for event in stream:
                    if first is None:
                        first = time.perf_counter() - started
                    if first_text is None and isinstance(event, TextDelta):
                        first_text = time.perf_counter() - started
                    if isinstance(event, (RunFinished, RunPaused, RunFailed)):
                        end = time.perf_counter() - started
            status = stream.result["status"]
        except Exception as exc:  # noqa: BLE001 - counted and shown, the load goes on
            return Outcome(error=f"{type(exc).__name__}: {exc}")
        if status != "completed" or first is None or first_text is None or end is None:
            return Outcome(error=f"ended {status}")
        return Outcome(first, first_text, end)

    return run_once


# --- the server -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(env: dict[str, str], workers: int) -> Iterator[tuple[str, int]]:
    """``omnisync serve served_agent:agent`` with ``workers`` processes; yields its base URL and pid once all are up."""
    port = free_port()
    command = [sys.executable, "-m", "omnisync.cli", "serve", "served_agent:agent", "--port", str(port), "--workers", str(workers)]
    environment = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    with tempfile.NamedTemporaryFile("w+", prefix="serve-load-", suffix=".log") as log:
        process = subprocess.Popen(command, cwd=HERE, env=environment, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_ready(base, process, log.name, workers)
            yield base, process.pid
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_until_ready(base: str, process: subprocess.Popen[bytes], log: str, workers: int) -> None:
    """/readyz answers 200 and the log shows every worker's startup."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}: {tail(log)}")
        with open(log, encoding="utf-8", errors="replace") as text:
            started = text.read().count("Application startup complete")
        try:
            if started >= workers and requests.get(f"{base}/readyz", timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server was not ready within {START_SECONDS} s: {tail(log)}")


def tail(log: str) -> str:
    with open(log, encoding="utf-8", errors="replace") as text:
        return " | ".join(text.read().strip().splitlines()[-5:])


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds (user + system) of a process and every descendant still running, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    spent: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # it ended meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        spent[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    tree, added = {root}, True
    while added:
        grown = tree | {pid for pid, parent in parents.items() if parent in tree}
        added, tree = grown != tree, grown
    return sum(spent.get(pid, 0.0) for pid in tree)


# --- one row ----------------------------------------------------------------------------------


def measure(store: str, url: str, model_url: str, workers: int, clients: int, runs: int, warmup: int, chunks: int) -> tuple[Load, Load]:
    """The served load and the direct one, on the same store, each under an agent name of its own."""
    import served_agent

    kind = STORES[store][0]
    row = uuid.uuid4().hex[:8]
    env = {"SERVE_LOAD_KIND": kind, "SERVE_LOAD_URL": url, "SERVE_LOAD_MODEL": model_url, "SERVE_LOAD_PREFIX": f"omnisync-serveload-{row}"}
    if chunks:
        env["SERVE_LOAD_CHUNKS"] = str(chunks)
    served_env = {**env, "SERVE_LOAD_AGENT": f"serveload-{row}"}
    direct_env = {**env, "SERVE_LOAD_AGENT": f"serveload-{row}-direct"}
    try:
        with server(served_env, workers) as (base, pid):
            runners = [served_runner(base, served_env["SERVE_LOAD_AGENT"]) for _ in range(clients)]
            served = drive(runners, warmup, runs, lambda: tree_cpu_seconds(pid))
        agent = served_agent.build(direct_env)
        try:
            direct = drive([direct_runner(agent)] * clients, warmup, runs)
        finally:
            agent.cleanup()
            agent.memory_router.close()
    finally:
        clean(kind, url, env["SERVE_LOAD_PREFIX"], [served_env["SERVE_LOAD_AGENT"], direct_env["SERVE_LOAD_AGENT"]])
    return served, direct


def clean(kind: str, url: str, prefix: str, agents: list[str]) -> None:
    """Delete what the row wrote: its Redis keys, or its agents' rows (a SQLite file goes with its directory)."""
    from omnisync import MemoryRouter

    if url.startswith("sqlite"):
        return
    router = MemoryRouter(kind, url=url, **({"prefix": prefix} if kind == "redis" else {}))
    store = router.store
    try:
        if kind == "redis":
            for key in store.client.scan_iter(match=f"{prefix}:*", count=1000):
                store.client.delete(key)
            return
        from omnisync.stores.sql import schema as sql_schema

        with store.engine.begin() as conn:
            for table in (sql_schema.messages, sql_schema.run_events, sql_schema.runs, sql_schema.sessions):
                conn.execute(table.delete().where(table.c.agent.in_(agents)))
    finally:
        router.close()


@contextmanager
def store_url(store: str) -> Iterator[str | None]:
    """The row's store URL: a new SQLite file in a temporary directory, else the server's URL (None if unset)."""
    variable = STORES[store][1]
    if variable is not None:
        yield os.environ.get(variable)
        return
    directory = tempfile.mkdtemp(prefix="serve-load-")
    try:
        yield f"sqlite:///{os.path.join(directory, 'serve-load.db')}"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# --- the table --------------------------------------------------------------------------------

HEADER = [
    "| Store | workers | runs/s | direct runs/s | ÷ direct | first event p50 / p99 ms | direct | ÷ direct (p50) "
    "| first text p50 / p99 ms | direct | ÷ direct (p50) "
    "| end p50 / p99 ms | direct | CPU ms a run: server + clients / direct | cores busy (direct) | errors (direct) |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def table_row(title: str, workers: int, served: Load, direct: Load) -> list[str]:
    first, direct_first = served.ms("first", 0.5), direct.ms("first", 0.5)
    text, direct_text = served.ms("first_text", 0.5), direct.ms("first_text", 0.5)
    cells = [
        title,
        str(workers),
        f"{served.runs_per_second:.0f}",
        f"{direct.runs_per_second:.0f}",
        f"{served.runs_per_second / direct.runs_per_second:.2f}",
        f"{first:.1f} / {served.ms('first', 0.99):.1f}",
        f"{direct_first:.1f} / {direct.ms('first', 0.99):.1f}",
        f"{first / direct_first:.2f}",
        f"{text:.1f} / {served.ms('first_text', 0.99):.1f}",
        f"{direct_text:.1f} / {direct.ms('first_text', 0.99):.1f}",
        f"{text / direct_text:.2f}",
        f"{served.ms('end', 0.5):.1f} / {served.ms('end', 0.99):.1f}",
        f"{direct.ms('end', 0.5):.1f} / {direct.ms('end', 0.99):.1f}",
        f"{served.cpu_ms_per_run(served.server_cpu):.1f} + {served.cpu_ms_per_run(served.cpu):.1f} / {direct.cpu_ms_per_run(direct.cpu):.1f}",
        f"{served.cores_busy:.2f} ({direct.cores_busy:.2f})",
        f"{len(served.errors)} ({len(direct.errors)})",
    ]
    lines = ["| " + " | ".join(cells) + " |"]
    for side, load in (("served", served), ("direct", direct)):
        if load.errors:
            lines.append(f"|  first {side} error: {load.errors[0][:200].replace('|', '/')} |" + " |" * (len(cells) - 1))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default=",".join(STORES), help=f"comma-separated, of: {', '.join(STORES)}")
    parser.add_argument("--workers", default="1,4", help="server processes, comma-separated (default 1,4)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent streaming clients (threads)")
    parser.add_argument("--runs", type=int, default=25, help="timed runs per client")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs per client before each side's timed ones")
    parser.add_argument("--chunks", type=int, default=0, help="streamed chunks an answer has (default: the model's 57 words)")
    args = parser.parse_args()
    _services_env()
    worker_counts = [int(w) for w in args.workers.split(",")]
    lines = [
        f"{args.clients} streaming clients x {args.runs} runs per row ({args.clients * args.runs} runs), each client its own "
        f"{SESSIONS_PER_CLIENT} sessions, instant local model ({args.chunks or 57} chunks an answer); {os.cpu_count()} cores; "
        f"Python {sys.version.split()[0]}",
        "",
        *HEADER,
    ]
    with _model_server() as model_url:
        for store in args.stores.split(","):
            for workers in worker_counts:
                with store_url(store) as url:
                    if not url:
                        lines.append(f"| {TITLES[store]} | {workers} | skipped: {STORES[store][1]} is not set |" + " |" * 10)
                        continue
                    print(f"[{store}, {workers} worker(s)] running", file=sys.stderr)
                    try:
                        served, direct = measure(store, url, model_url, workers, args.clients, args.runs, args.warmup, args.chunks)
                    except RuntimeError as exc:
                        lines.append(f"| {TITLES[store]} | {workers} | failed: {str(exc)[:300]} |" + " |" * 10)
                        continue
                    lines += table_row(TITLES[store], workers, served, direct)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
