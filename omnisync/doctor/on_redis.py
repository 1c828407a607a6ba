"""Redis, one server or a Redis Cluster: the connection, the keys, the cluster's health, version, eviction, latency, clock."""

from __future__ import annotations

from datetime import datetime, timezone
from collections.abc import Callable
from typing import Any, cast

from .. import _env
from ..errors import StoreError
from .measure import clock_offset_s, judge_clock, judge_latency, judge_version
from .reach import explain
from .report import FAIL, OK, WARN, Report

ROUND_TRIPS_PER_RUN = 3
"""About what one ``run()`` of one model call sends to the store (redis-py's packed sends, a pipeline being one): tests/stores/test_round_trips.py holds it."""

REDIS_FLOOR = (4, 0)
REDIS_NEEDS = "the store's scripts set several hash fields in one HSET"
SLOTS = 16384
_SAFE_POLICIES = ("noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")


def check_redis(report: Report, url: str, timeout: float) -> None:
    from redis.exceptions import RedisClusterException, RedisError

    from ..stores.redis.store import RedisStore

    where = url.split("@")[-1].split("://")[-1].split("/")[0] or "localhost:6379"
    try:
        store = RedisStore.from_url(url, connect_timeout=timeout, timeout=timeout)
    except StoreError as exc:  # a cluster client connects at once
        happened, fix = explain(exc.__cause__ or exc, where, timeout)
        report.add("reachable", FAIL, happened, fix)
        return
    with store:
        node = _one_node(store)
        try:
            _call(store, node, "PING")
        except (RedisError, RedisClusterException) as exc:
            happened, fix = explain(exc, where, timeout)
            report.add("reachable", FAIL, happened, fix)
            return
        info = _call(store, node, "INFO", "server")
        if store.cluster:
            report.add("reachable", OK, f"connected to the Redis Cluster through {where}")
        else:
            database = cast(Any, store.client).connection_pool.connection_kwargs.get("db", 0)
            report.add("reachable", OK, f"connected to {where}, database {database}")
        if not store.cluster and info.get("redis_mode") == "cluster":
            report.add(
                "topology",
                FAIL,
                f"{where} is a node of a Redis Cluster, reached as one server: keys of other nodes' slots answer MOVED, so most runs would fail",
                f"use redis+cluster://{where}/ (the client then finds the other nodes itself)",
            )
            return
        _judge_keys(report, store)
        if store.cluster:
            _judge_cluster(report, store, node)
        elif info.get("redis_mode") == "sentinel":
            report.add("topology", FAIL, f"{where} is a Sentinel, which watches servers but holds no data", "use the address of the Redis server (or primary) itself")
            return
        else:
            report.add("topology", OK, "one server (redis_mode standalone)")
        judge_version(report, "Redis", str(info.get("redis_version", "?")), REDIS_FLOOR, REDIS_NEEDS, "7.0")
        _judge_eviction(report, store, node)
        judge_latency(report, ROUND_TRIPS_PER_RUN, lambda: _call(store, node, "PING"))
        nodes: list[Any] = cast(Any, store.client).get_primaries() if store.cluster else [None]
        judge_clock(report, {_name(each): clock_offset_s(_time_of(store, each)) for each in nodes})


def _one_node(store: Any) -> Any:
    return store.client.get_default_node() if store.cluster else None


def _call(store: Any, node: Any, *command: Any) -> Any:
    """A command to one server: ``node`` on a cluster, the one server otherwise (parsed as redis-py parses it)."""
    if node is None:
        return store.client.execute_command(*command)
    return store.client.execute_command(*command, target_nodes=node)


def _name(node: Any) -> str:
    return "server" if node is None else f"{node.host}:{node.port}"


def _time_of(store: Any, node: Any) -> Callable[[], datetime]:
    def read() -> datetime:
        seconds, micros = (int(part) for part in _call(store, node, "TIME"))
        return datetime.fromtimestamp(seconds + micros / 1e6, tz=timezone.utc)

    return read


def _judge_keys(report: Report, store: Any) -> None:
    """Redis has no schema version: the key layout is the store's contract (see stores/redis/store.py)."""
    prefix = _env.redis_prefix()
    agents = int(store.client.scard(f"{prefix}:agents"))
    layout = "hash-tagged cluster key layout" if store.cluster else "single-server key layout"
    if agents:
        report.add("schema", OK, f"{agents} agent(s) under prefix {prefix + ':'!r}, {layout}; Redis keeps no schema version (the key layout is the contract)")
    else:
        report.add(
            "schema",
            OK,
            f"no omnisync data under prefix {prefix + ':'!r} yet: a fresh store (if you expected data, check the database number and OMNISYNC_REDIS_PREFIX); "
            "Redis keeps no schema version",
        )


def _judge_cluster(report: Report, store: Any, node: Any) -> None:
    info = store.client.cluster_info(target_nodes=node)
    state = info.get("cluster_state")
    covered = int(info.get("cluster_slots_ok", 0))
    failing = int(info.get("cluster_slots_pfail", 0)) + int(info.get("cluster_slots_fail", 0))
    masters = len(store.client.get_primaries())
    replicas = len(store.client.get_replicas())
    shape = f"{masters} masters, {replicas} replicas, {covered} of {SLOTS} slots served"
    if state != "ok" or covered < SLOTS:
        report.add("topology", FAIL, f"Redis Cluster state {state}: {shape}", "assign every slot (redis-cli --cluster fix HOST:PORT) and bring failed masters back or fail them over")
    elif failing:
        report.add("topology", WARN, f"Redis Cluster state ok, but {failing} slot(s) on nodes suspected down: {shape}", "check the nodes CLUSTER NODES marks fail or pfail")
    elif not replicas:
        report.add("topology", WARN, f"Redis Cluster state ok: {shape}", "add a replica per master (redis-cli --cluster add-node --cluster-slave): without one, a master that dies takes its slots' sessions down with it")
    else:
        report.add("topology", OK, f"Redis Cluster state ok: {shape}")


def _judge_eviction(report: Report, store: Any, node: Any) -> None:
    from redis.exceptions import RedisError

    try:
        config = store.client.config_get("maxmemory*", **({"target_nodes": node} if node is not None else {}))
    except RedisError:  # managed services often refuse CONFIG
        report.add("eviction", OK, "CONFIG GET is refused here, so the eviction policy cannot be read; it must be noeviction or volatile-*")
        return
    limit, policy = int(config.get("maxmemory", 0)), str(config.get("maxmemory-policy", "?"))
    if limit and policy not in _SAFE_POLICIES:
        report.add(
            "eviction",
            FAIL,
            f"maxmemory-policy {policy} with maxmemory {limit:,} bytes: when full, Redis deletes sessions' keys to make room",
            "CONFIG SET maxmemory-policy noeviction (and in redis.conf): a full Redis then refuses writes instead of losing history",
        )
    else:
        report.add("eviction", OK, f"maxmemory-policy {policy}" + ("" if limit else " (no maxmemory limit)") + ": Redis never evicts a session's keys")
