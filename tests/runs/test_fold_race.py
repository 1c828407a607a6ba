"""Two processes folding one session at once: one summary, one model call, nothing lost."""

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from omnisync import MemoryRouter
from omnisync.messages import Message
from helpers.backends import forget_agent, pgbouncer_url, postgres_url, redis_cluster_url, redis_url

ROOT = Path(__file__).resolve().parents[2]


SHARED = {"postgres": ("sql", postgres_url), "pgbouncer": ("sql", pgbouncer_url), "redis": ("redis", redis_url), "redis_cluster": ("redis", redis_cluster_url)}


@pytest.fixture(params=["sqlite", *SHARED])
def store_at(request, tmp_path):
    """(kind, url)"""
    if request.param == "sqlite":
        return "sql", f"sqlite:///{tmp_path / 'race.db'}"
    kind, find_url = SHARED[request.param]
    return kind, find_url()


def test_two_processes_folding_at_once_leave_one_summary(store_at, tmp_path):
    kind, url = store_at
    agent = f"race-{uuid.uuid4().hex[:8]}"
    with MemoryRouter(kind, url=url) as router:
        store = router.store
        store.append(agent, "race", [Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}", tokens=5) for i in range(10)])
        barrier = tmp_path / "go"
        command = [sys.executable, "-m", "omnisync.testing", "--cassette", str(ROOT / "cassettes/handwritten/fold_race.yaml"),
                   str(ROOT / "tests" / "helpers" / "fold_worker.py"), kind, url, agent, str(barrier)]
        workers = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        time.sleep(2.0)  # both processes are up and waiting at the barrier
        barrier.touch()
        outcomes = []
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
            outcomes.append(json.loads(out.strip().splitlines()[-1]))
        assert sum(o["folded"] for o in outcomes) == 1, outcomes
        assert sum(o["called_model"] for o in outcomes) == 1, outcomes
        everything = store.history(agent, "race", include_inactive=True)
        active = store.history(agent, "race")
        assert sum(m.is_summary for m in everything) == 1
        assert [m.is_summary for m in active] == [True, False, False, False]
        assert sorted(m.content for m in everything if not m.is_summary) == sorted(f"m{i}" for i in range(10))
    forget_agent(kind, url, agent)
