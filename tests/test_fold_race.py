"""Two processes folding one session at once: one summary, one model call, nothing lost."""

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from omnisync.messages import Message
from omnisync.stores.sql import SQLStore
from backends import postgres_url

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path):
    return f"sqlite:///{tmp_path / 'race.db'}" if request.param == "sqlite" else postgres_url()


def test_two_processes_folding_at_once_leave_one_summary(url, tmp_path):
    agent = f"race-{uuid.uuid4().hex[:8]}"
    with SQLStore(url) as store:
        store.append(agent, "race", [Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}", tokens=5) for i in range(10)])
        barrier = tmp_path / "go"
        command = [sys.executable, "-m", "omnisync.testing", "--cassette", str(ROOT / "cassettes/handwritten/fold_race.yaml"),
                   str(ROOT / "tests/fold_worker.py"), url, agent, str(barrier)]
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
        store.clear(agent)
