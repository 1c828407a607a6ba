"""Rotating 10^4 messages' sessions to a new master key in another process, retiring the old key,
and a run paused before the rotation resuming after it with the new key alone."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import sys
import uuid

import pytest

from helpers import backends
from omnisync import Encryption, MemoryRouter
from omnisync.messages import Message
from helpers.tool_agents import tool_agent

pytest.importorskip("cryptography")

SESSIONS, PER_SESSION = 100, 100


def command(url: str, keys: dict[str, bytes], current: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OMNISYNC_ENCRYPTION_KEYS": ",".join(f"{kid}:{base64.b64encode(key).decode()}" for kid, key in keys.items()),
        "OMNISYNC_ENCRYPTION_KEY_ID": current,
    }
    return subprocess.run([sys.executable, "-m", "omnisync.cli", "--url", url, *args], env=env, capture_output=True, text=True, timeout=300)


ROTATION_REDIS_DB = 13  # a database of its own, where the servers give one: `keys list` of the whole store is checked there


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.backend("postgres")),
        pytest.param("pgbouncer", marks=pytest.mark.backend("pgbouncer")),
        pytest.param("redis", marks=pytest.mark.backend("redis")),
        pytest.param("redis_cluster", marks=pytest.mark.backend("redis_cluster")),
        pytest.param("mongodb", marks=pytest.mark.backend("mongodb")),
    ]
)
def store_url(request, tmp_path):
    """(router kind, URL, whether others share it) of a store; PgBouncer's database and the Redis
    Cluster are shared with other tests (a cluster has no database of its own), so the test
    rotates only its own agents there and forgets them afterwards. A server that cannot be
    reached skips it (fails in CI)."""
    if request.param == "sqlite":
        yield "sql", f"sqlite:///{tmp_path / 'memory.db'}", False
        return
    with contextlib.ExitStack() as stack:
        try:
            if request.param == "postgres":
                pytest.importorskip("sqlalchemy")
                opened = ("sql", stack.enter_context(backends.fresh_database(backends.postgres_url())), False)
            elif request.param == "pgbouncer":
                pytest.importorskip("sqlalchemy")
                opened = ("sql", backends.pgbouncer_url(), True)
            elif request.param == "redis":
                opened = ("redis", stack.enter_context(_own_redis_database(backends.redis_url())), False)
            elif request.param == "redis_cluster":
                pytest.importorskip("redis")
                opened = ("redis", backends.redis_cluster_url(), True)
            else:
                opened = ("mongodb", stack.enter_context(_own_mongo_database(backends.mongodb_uri())), False)
        except Exception as exc:  # noqa: BLE001 - a server that cannot be reached: skip (fail in CI)
            backends.unreachable(request.param, f"{exc.__class__.__name__}: {exc}")
        yield opened


@contextlib.contextmanager
def _own_redis_database(url: str):
    import redis

    own = url.rsplit("/", 1)[0] + f"/{ROTATION_REDIS_DB}"
    client = redis.Redis.from_url(own)
    client.flushdb()
    try:
        yield own
    finally:
        client.flushdb()
        client.close()


@contextlib.contextmanager
def _own_mongo_database(uri: str):
    import pymongo

    name = f"omnisync_rotation_{os.urandom(4).hex()}"
    own = uri.split("?", 1)[0].rstrip("/") + "/" + name
    client = pymongo.MongoClient(uri)
    try:
        yield own
    finally:
        client.drop_database(name)
        client.close()


def test_ten_thousand_messages_rotate_in_another_process_and_a_paused_run_resumes_after(omnisync_cassette, store_url, monkeypatch):
    kind, url, shared = store_url
    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS", raising=False)
    filler, tools = f"filler-{uuid.uuid4().hex[:8]}", f"tools-{uuid.uuid4().hex[:8]}"
    mine = ["--agent", filler, "--agent", tools]
    old, new = os.urandom(32), os.urandom(32)
    try:
        with omnisync_cassette("handwritten/approval"):
            with MemoryRouter(kind, url=url, encryption=Encryption({"old": old}, "old")) as router:
                for n in range(SESSIONS):
                    router.store.append(filler, f"s{n}", [Message("user", f"message {n}.{i}") for i in range(PER_SESSION)])
                paused = tool_agent(router, name=tools).run('Clean up: use delete_file({"path": "/tmp/old.log"})', session_id="s")
                assert paused["status"] == "awaiting_approval"

            held = SESSIONS + 1 + (2 if kind in ("sql", "mongodb") else 0)  # and each agent's search key, on a store with an index
            refused = command(url, {"old": old, "new": new}, "new", "keys", "retire", "old", *mine)
            assert refused.returncode == 1 and f"{held} data keys of agent(s) {filler}, {tools} are still wrapped by 'old'" in refused.stderr
            rotated = command(url, {"old": old, "new": new}, "new", "keys", "rotate", "--to", "new", *mine)
            assert rotated.returncode == 0, rotated.stderr
            assert f"{held} data keys now wrapped by 'new' ({held} re-wrapped, 0 already were)" in rotated.stdout
            retired = command(url, {"new": new}, "new", "keys", "retire", "old", *mine)
            assert retired.returncode == 0, retired.stderr
            listed = command(url, {"new": new}, "new", "keys", "list", *mine)
            assert listed.stdout.strip() == f"new\t{held} sessions"
            if not shared:  # the whole store is this test's: unscoped, the same
                assert command(url, {"new": new}, "new", "keys", "list").stdout.strip() == f"new\t{held} sessions"

            with MemoryRouter(kind, url=url, encryption=Encryption({"new": new}, "new")) as router:
                agent = tool_agent(router, name=tools)
                agent.resolve_approval(paused["run_id"], paused["approvals"][0]["id"], approved=True)
                done = agent.resume(paused["run_id"])
                assert done["status"] == "completed" and done["response"] == "Done: deleted /tmp/old.log"
                opened = [m.content for n in range(SESSIONS) for m in router.store.iter_history(filler, f"s{n}")]
                assert len(opened) == SESSIONS * PER_SESSION and opened[-1] == f"message {SESSIONS - 1}.{PER_SESSION - 1}"
    finally:
        if shared:
            for agent_name in (filler, tools):
                backends.forget_agent(kind, url, agent_name)
