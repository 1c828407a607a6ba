"""Many processes, one store: runs per second, latency, and afterwards every session checked.

    python bench/load.py                                   # 8 workers x 1,000 runs over 500 sessions, every store it can reach
    python bench/load.py --workers 4 --runs 200 --stores redis,postgres

Each worker process builds its own agent on the store (as separate servers would) and makes
``--runs`` runs of ``agent.run(f"w{worker}-{i}", session_id=<one of --sessions, at random>)``
against the instant local model (``bench/model_server.py``), waiting when another run holds
the session. Afterwards one reader checks every session: every run's user message is there
exactly once (0 lost, 0 duplicated), each followed by its answer, and each worker's messages in
the order it sent them. The table goes to stdout; it asserts nothing and exits 0.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import sys
import time
import uuid
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import _model_server, _services_env  # noqa: E402

STORES = {
    "redis": "REDIS_URL",
    "redis_cluster": "REDIS_CLUSTER_URL",
    "postgres": "DATABASE_URL_POSTGRES",
    "pgbouncer": "DATABASE_URL_PGBOUNCER",
}
TITLES = {"redis": "Redis", "redis_cluster": "Redis Cluster (3 masters)", "postgres": "PostgreSQL", "pgbouncer": "PostgreSQL via PgBouncer"}


def _router(kind: str, url: str, namespace: str) -> Any:
    from omnisync import MemoryRouter

    if kind.startswith("redis"):
        return MemoryRouter("redis", url=url, prefix=namespace)
    return MemoryRouter("sql", url=url)


def _agent(router: Any, agent: str, model_url: str) -> Any:
    from omnisync import OmniCoreAgent

    return OmniCoreAgent(
        name=agent,
        system_instruction="You answer briefly.",
        model_config={"provider": "openai", "model": "bench", "base_url": model_url, "api_key": "bench", "max_retries": 0},
        memory_router=router,
        agent_config={"memory_config": {"mode": "sliding_window", "value": 20}, "session_wait_seconds": 120},
    )


def _worker(kind: str, url: str, namespace: str, agent_name: str, model_url: str, worker: int, runs: int, sessions: int, out: Any) -> None:
    router = _router(kind, url, namespace)
    agent = _agent(router, agent_name, model_url)
    chooser = random.Random(worker)
    latencies, errors = [], []
    for i in range(runs):
        session = f"s{chooser.randrange(sessions)}"
        started = time.perf_counter()
        try:
            result = agent.run(f"w{worker}-{i}", session_id=session)
            if result["status"] != "completed":
                errors.append(f"{session}: {result['status']} {result.get('error')}")
        except Exception as exc:  # noqa: BLE001 - counted and shown, the load goes on
            errors.append(f"{session}: {type(exc).__name__}: {exc}")
        latencies.append(time.perf_counter() - started)
    agent.cleanup()
    router.close()
    out.put((worker, latencies, errors))


def _check(kind: str, url: str, namespace: str, agent_name: str, workers: int, runs: int, sessions: int) -> dict[str, Any]:
    router = _router(kind, url, namespace)
    store = router.store
    seen: dict[str, int] = {}
    out_of_order = unanswered = 0
    for index in range(sessions):
        history = store.history(agent_name, f"s{index}")
        last_by_worker: dict[str, int] = {}
        for position, message in enumerate(history):
            if message.role != "user":
                continue
            text = str(message.content)
            seen[text] = seen.get(text, 0) + 1
            worker, number = text[1:].split("-")
            if last_by_worker.get(worker, -1) > int(number):
                out_of_order += 1
            last_by_worker[worker] = int(number)
            if position + 1 >= len(history) or history[position + 1].role != "assistant":
                unanswered += 1
    expected = {f"w{w}-{i}" for w in range(workers) for i in range(runs)}
    result = {
        "lost": len(expected - set(seen)),
        "duplicated": sum(count - 1 for count in seen.values() if count > 1),
        "out_of_order": out_of_order,
        "unanswered": unanswered,
    }
    _clean(kind, router, namespace, agent_name)
    router.close()
    return result


def _clean(kind: str, router: Any, namespace: str, agent_name: str) -> None:
    store = router.store
    if kind.startswith("redis"):
        for node_client in [store.client]:
            for key in node_client.scan_iter(match=f"{namespace}*", count=1000):
                node_client.delete(key)
        return
    store.clear(agent_name)

    from omnisync.stores.sql import schema as sql_schema

    with store.engine.begin() as conn:
        for table in (sql_schema.runs, sql_schema.run_events, sql_schema.sessions):
            conn.execute(table.delete().where(table.c.agent == agent_name))


def measure(kind: str, url: str, model_url: str, workers: int, runs: int, sessions: int) -> dict[str, Any]:
    namespace = f"omnisync-load-{uuid.uuid4().hex[:8]}"
    agent_name = f"load-{uuid.uuid4().hex[:8]}"
    _router(kind, url, namespace).close()  # schema made before the clock starts
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    processes = [
        context.Process(target=_worker, args=(kind, url, namespace, agent_name, model_url, w, runs, sessions, out)) for w in range(workers)
    ]
    started = time.perf_counter()
    for process in processes:
        process.start()
    results = [out.get() for _ in processes]
    elapsed = time.perf_counter() - started
    for process in processes:
        process.join()
    latencies = sorted(x for _, found, _ in results for x in found)
    errors = [e for _, _, found in results for e in found]
    checked = _check(kind, url, namespace, agent_name, workers, runs, sessions)
    return {
        "runs_per_second": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        **checked,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default=",".join(STORES), help=f"comma-separated, of: {', '.join(STORES)}")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=1000, help="runs per worker")
    parser.add_argument("--sessions", type=int, default=500)
    args = parser.parse_args()
    unknown = [kind for kind in args.stores.split(",") if kind not in STORES]
    if unknown:
        parser.error(f"--stores: {', '.join(unknown)} not known; choose from {', '.join(STORES)}")
    _services_env()
    lines = [
        f"{args.workers} worker processes x {args.runs:,} runs over {args.sessions} sessions, instant local model, "
        f"{os.cpu_count()} cores; Python {sys.version.split()[0]}",
        "",
        "| Store | runs/s | p50 ms | p99 ms | errors | lost | duplicated | out of order | unanswered |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    with _model_server() as model_url:
        for kind in args.stores.split(","):
            url = os.environ.get(STORES[kind])
            if not url:
                lines.append(f"| {TITLES[kind]} | skipped: {STORES[kind]} is not set | | | | | | | |")
                continue
            print(f"[{kind}] running", file=sys.stderr)
            r = measure(kind, url, model_url, args.workers, args.runs, args.sessions)
            lines.append(
                f"| {TITLES[kind]} | {r['runs_per_second']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['errors']} | "
                f"{r['lost']} | {r['duplicated']} | {r['out_of_order']} | {r['unanswered']} |"
            )
            if r["first_error"]:
                lines.append(f"|  first error: {r['first_error'][:200]} | | | | | | | | |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
