"""omnisync.aio's own thread pool: many runs wait on a slow model at once, not six at a time."""

import asyncio
import threading
import uuid

import pytest

from helpers.fake_http import completion, install
import omnisync._aio_pool as pool
from omnisync import aio
from omnisync.errors import ConfigurationError

MODEL = {"provider": "openai", "model": "gpt-5.4-mini", "base_url": "http://127.0.0.1:9/v1", "api_key": "test"}
RUNS = 24


class SlowModel:
    """Answers once every expected request is in flight (or after ``patience`` s), and counts them."""

    def __init__(self, expected: int, patience: float = 5.0) -> None:
        self.expected, self.patience = expected, patience
        self.in_flight = self.peak = 0
        self._changed = threading.Condition()

    def __call__(self, body):
        with self._changed:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self._changed.notify_all()
            self._changed.wait_for(lambda: self.peak >= self.expected, timeout=self.patience)
            self.in_flight -= 1
        return completion("slow answer")


@pytest.fixture
def pool_size():
    """Leaves the pool as the test found it: sized from the environment or the default."""
    yield
    aio.set_thread_count(pool.DEFAULT_THREADS)
    pool._size = None


def test_concurrent_runs_all_wait_on_the_model_at_once(monkeypatch, pool_size):
    model = SlowModel(expected=RUNS)
    install(monkeypatch, model)
    agent = aio.OmniCoreAgent(name=f"pool-{uuid.uuid4().hex[:8]}", system_instruction="Answer briefly.", model_config=MODEL)

    async def main():
        return await asyncio.gather(*(agent.run(f"question {i}") for i in range(RUNS)))

    results = asyncio.run(main())
    assert [r["response"] for r in results] == ["slow answer"] * RUNS
    assert model.peak == RUNS, f"only {model.peak} of {RUNS} runs reached the model at once"


def test_a_smaller_pool_caps_how_many_calls_run_at_once(monkeypatch, pool_size):
    aio.set_thread_count(3)
    model = SlowModel(expected=RUNS, patience=0.2)
    install(monkeypatch, model)
    agent = aio.OmniCoreAgent(name=f"pool-{uuid.uuid4().hex[:8]}", system_instruction="Answer briefly.", model_config=MODEL)

    async def main():
        return await asyncio.gather(*(agent.run(f"question {i}") for i in range(6)))

    asyncio.run(main())
    assert aio.thread_count() == 3
    assert model.peak == 3


def test_the_pool_size_comes_from_the_environment_and_is_checked(monkeypatch, pool_size):
    monkeypatch.setattr(pool, "_size", None)
    monkeypatch.setenv("OMNISYNC_AIO_THREADS", "128")
    assert aio.thread_count() == 128
    monkeypatch.setenv("OMNISYNC_AIO_THREADS", "0")
    with pytest.raises(ConfigurationError, match="OMNISYNC_AIO_THREADS"):
        aio.thread_count()
    monkeypatch.setenv("OMNISYNC_AIO_THREADS", "many")
    with pytest.raises(ConfigurationError, match="OMNISYNC_AIO_THREADS"):
        aio.thread_count()
    monkeypatch.delenv("OMNISYNC_AIO_THREADS")
    assert aio.thread_count() == pool.DEFAULT_THREADS == 64
    for bad in (0, -2, 1.5, True, "8"):
        with pytest.raises(ConfigurationError, match="at least 1"):
            aio.set_thread_count(bad)
