"""What a network round trip costs: ours against the raw drivers, through a proxy that adds delay.

    python bench/latency.py                  # 1 ms each way, PostgreSQL and Redis
    python bench/latency.py --delay-ms 0.5 --stores redis --calls 100

A small TCP proxy (this file) sits between the client and the server and holds every chunk
for ``--delay-ms`` in each direction, as a link with that one-way latency would. Through it,
on a session of 200 messages, it measures the median of: a window load of 20 (ours, and the raw
driver's one query), and a whole ``run()`` against the instant local model (ours, and the floor:
the raw driver's window load, the model's HTTP POST and the raw driver's write of the two
messages). It prints a table of medians and ratios; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import backends as b  # noqa: E402
import workload as w  # noqa: E402
from run import _model_server, _services_env  # noqa: E402


class DelayProxy:
    """Forwards 127.0.0.1:<port> to ``target``, each chunk held ``delay`` seconds in each direction."""

    def __init__(self, target_host: str, target_port: int, delay: float) -> None:
        self.target = (target_host, target_port)
        self.delay = delay
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self.port = 0

        async def serve() -> None:
            server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            started.set()
            async with server:
                await server.serve_forever()

        threading.Thread(target=lambda: self.loop.run_until_complete(serve()), daemon=True).start()
        started.wait(10)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        await asyncio.gather(self._pump(reader, upstream_writer), self._pump(upstream_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                await asyncio.sleep(self.delay)
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


def _through(url: str, port: int) -> str:
    parts = urlsplit(url)
    auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit(parts._replace(netloc=f"{auth}127.0.0.1:{port}"))


def _own_database(url: str, name: str) -> str:
    """``url`` on a database of the bench's own, its tables dropped: nothing of the tests' is touched."""
    import psycopg
    from sqlalchemy.engine import make_url

    given = make_url(url)
    admin = given.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    own = given.set(database=name)
    with psycopg.connect(own.set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS omnisync_messages, omnisync_sessions, omnisync_runs, omnisync_schema, raw_messages, raw_sessions")
    return own.render_as_string(hide_password=False)


def _median_us(work: Callable[[], Any], calls: int) -> float:
    work()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def _agent(router: Any, model_url: str) -> Any:
    from omnisync import OmniCoreAgent

    return OmniCoreAgent(
        name=w.AGENT,
        system_instruction="You answer briefly.",
        model_config={"provider": "openai", "model": "bench", "base_url": model_url, "api_key": "bench", "max_retries": 0},
        memory_router=router,
        agent_config={"memory_config": {"mode": "sliding_window", "value": 20}},
    )


def _post(model_url: str) -> Callable[[], Any]:
    import requests

    session = requests.Session()
    body = {"model": "bench", "messages": [w.chat(0)]}
    return lambda: session.post(f"{model_url}/chat/completions", json=body, timeout=30).json()


def measure(kind: str, url: str, model_url: str, delay: float, calls: int) -> list[tuple[str, float, float]]:
    from omnisync import MemoryRouter

    if kind == "postgres":
        url = _own_database(url, "omnisync_latency")
    target = urlsplit(url)
    proxy = DelayProxy(target.hostname or "127.0.0.1", target.port or (5432 if kind == "postgres" else 6379), delay)
    slow = _through(url, proxy.port)
    session = f"latency-{uuid.uuid4().hex[:8]}"
    if kind == "postgres":
        router = MemoryRouter("sql", url=slow)
        from sqlalchemy.engine import make_url

        conninfo = make_url(slow).set(drivername="postgresql").render_as_string(hide_password=False)
        raw: Any = b.RawPostgres(conninfo)
    else:
        import redis

        prefix = f"omnisync-latency-{uuid.uuid4().hex[:8]}"
        router = MemoryRouter("redis", url=slow, prefix=prefix)
        raw = b.RawRedis(redis.Redis.from_url(slow), f"{prefix}-raw")
    store = router.store
    store.append(w.AGENT, session, w.messages(0, 200))
    raw.fill(session, 200)
    agent = _agent(router, model_url)
    post = _post(model_url)

    def floor() -> None:
        raw.load(session, 20)
        post()
        raw.write(session)

    rows = [
        ("load window of 20", _median_us(lambda: store.window(w.AGENT, session, max_messages=20), calls), _median_us(lambda: raw.load(session, 20), calls)),
        ("run() (window 20, instant model)", _median_us(lambda: agent.run("hello", session_id=session), calls), _median_us(floor, calls)),
    ]
    agent.cleanup()
    store.clear(w.AGENT)
    router.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="postgres,redis")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="added in each direction")
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    _services_env()
    urls = {"postgres": os.environ.get("DATABASE_URL_POSTGRES"), "redis": os.environ.get("REDIS_URL")}
    lines = [
        f"Through a proxy adding {args.delay_ms:g} ms each way; medians of {args.calls} calls, in µs; "
        "raw: the driver's one query (load), or the floor of a run (raw load, the model's POST, raw write)",
        "",
        "| Store | Operation | ours | raw | ours ÷ raw |",
        "|---|---|---|---|---|",
    ]
    with _model_server() as model_url:
        for kind in args.stores.split(","):
            if not urls.get(kind):
                lines.append(f"| {kind} | skipped: no URL | | | |")
                continue
            print(f"[{kind}] measuring", file=sys.stderr)
            for name, ours, raw in measure(kind, urls[kind], model_url, args.delay_ms / 1000, args.calls):  # type: ignore[arg-type]
                lines.append(f"| {kind} | {name} | {ours:,.0f} | {raw:,.0f} | {ours / raw:.2f} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
