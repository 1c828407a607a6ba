"""omnisync.aio: the awaitable twins of OmniCoreAgent and MemoryRouter, with a fake model."""

import asyncio
import inspect
import threading
import time
import uuid
from datetime import timedelta

import pytest

from helpers import backends
import omnisync
from omnisync import aio
from omnisync.errors import RateLimitError
from omnisync.messages import utcnow
from omnisync.model.client import ChatClient
from omnisync.model.completion import Completion

MODEL = {"provider": "openai", "model": "gpt-5.4-mini", "base_url": "http://127.0.0.1:9/v1"}
INSTRUCTION = "You are a helpful assistant. Answer in plain text, briefly."
TWINS = [(omnisync.OmniCoreAgent, aio.OmniCoreAgent), (omnisync.MemoryRouter, aio.MemoryRouter)]


class EchoModel:
    """Answers ``echo: <last user message>``; counts the calls in flight at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.threads: set[int] = set()
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def complete(self, client, messages, tools=None, **overrides):
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.threads.add(threading.get_ident())
        try:
            if self.delay:
                time.sleep(self.delay)
            last = next(m for m in reversed(messages) if m["role"] == "user")
            return Completion(content=f"echo: {last['content']}")
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.fixture(autouse=True)
def model(monkeypatch):
    echo = EchoModel()
    monkeypatch.setattr(ChatClient, "complete", lambda client, *a, **kw: echo.complete(client, *a, **kw))

    def no_network(client, body):
        raise AssertionError("a test of omnisync.aio tried to reach the model endpoint")

    monkeypatch.setattr(ChatClient, "_post", no_network)
    return echo


def new_agent(module=aio, **options):
    options.setdefault("name", "assistant")
    return module.OmniCoreAgent(system_instruction=INSTRUCTION, model_config=MODEL, **options)


def exchange(message):
    return [{"role": "user", "content": message}, {"role": "assistant", "content": f"echo: {message}"}]


# --- parity: every public member of the blocking class, in its async form ------------------


def public_members(cls):
    return {name: inspect.getattr_static(cls, name) for name in dir(cls) if not name.startswith("_")}


def parameters(function):
    """Names, kinds and defaults (the annotations differ: a twin takes either router or agent where the blocking class takes its own)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function, follow_wrapped=False).parameters.values()]


@pytest.mark.parametrize("blocking, twin", TWINS, ids=lambda c: c.__module__)
def test_every_public_method_is_a_coroutine_with_the_same_parameters(blocking, twin):
    methods = {name: m for name, m in public_members(blocking).items() if inspect.isfunction(m)}
    assert methods
    for name, method in methods.items():
        assert hasattr(twin, name), f"omnisync.aio.{twin.__name__} has no {name}"
        async_method = inspect.getattr_static(twin, name)
        if getattr(method, "__omnisync_streams__", False):  # stream() and resume_stream() give an async iterator
            assert not inspect.iscoroutinefunction(async_method), f"{twin.__name__}.{name} must return its stream at once"
        else:
            assert inspect.iscoroutinefunction(async_method), f"{twin.__name__}.{name} is not a coroutine function"
        assert parameters(async_method) == parameters(method), f"{twin.__name__}.{name} takes other parameters"


@pytest.mark.parametrize("blocking, twin", TWINS, ids=lambda c: c.__module__)
def test_properties_stay_properties_and_constructors_take_the_same_arguments(blocking, twin):
    properties = [name for name, m in public_members(blocking).items() if isinstance(m, property)]
    for name in properties:
        assert isinstance(inspect.getattr_static(twin, name), property), f"{twin.__name__}.{name} is not a property"
    assert parameters(twin) == parameters(blocking)
    assert not inspect.iscoroutinefunction(twin.__init__)


@pytest.mark.parametrize("blocking, twin", TWINS, ids=lambda c: c.__module__)
def test_the_blocking_class_has_only_members_the_twin_knows_how_to_make(blocking, twin):
    for name, member in public_members(blocking).items():
        assert inspect.isfunction(member) or isinstance(member, property) or not hasattr(member, "__get__"), name


def test_errors_and_tool_registry_are_the_same_classes():
    exported = [name for name in omnisync.__all__ if isinstance(getattr(omnisync, name), type)]
    for name in exported:
        thing = getattr(omnisync, name)
        if issubclass(thing, BaseException) or thing is omnisync.ToolRegistry:
            assert getattr(aio, name) is thing, name
        assert name in aio.__all__, name


# --- behaviour -----------------------------------------------------------------------------


def test_the_memory_page_example_runs_with_only_the_import_changed():
    async def main():
        agent = aio.OmniCoreAgent(name="assistant", system_instruction=INSTRUCTION, model_config=MODEL)
        await agent.run("My project is called Atlas.", session_id="user_123")
        result = await agent.run("What is my project called?", session_id="user_123")
        history = await agent.get_session_history("user_123")
        await agent.cleanup()
        return result, history

    result, history = asyncio.run(main())
    assert result["response"] == "echo: What is my project called?"
    assert result["session_id"] == "user_123" and result["status"] == "completed"
    assert history == exchange("My project is called Atlas.") + exchange("What is my project called?")


def test_a_sql_router_keeps_history_across_agents_and_closes(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'memory.db'}")

    async def process(message):
        router = aio.MemoryRouter("sql")
        try:
            agent = aio.OmniCoreAgent(
                name="assistant", system_instruction=INSTRUCTION, model_config=MODEL, memory_router=router
            )
            assert agent.memory_router is router
            await agent.run(message, session_id="user_123")
            return await agent.get_session_history("user_123")
        finally:
            await router.close()
            assert router.closed

    asyncio.run(process("My project is called Atlas."))
    history = asyncio.run(process("When does my project ship?"))
    assert history == exchange("My project is called Atlas.") + exchange("When does my project ship?")


def test_read_clear_and_switch():
    async def main():
        async with new_agent() as agent:
            for session in ("a", "b"):
                await agent.run(f"hello {session}", session_id=session)
            assert await agent.clear_session_history("a") == 2
            assert await agent.get_session_history("a") == []
            assert await agent.clear_session_history() == 2
            assert await agent.get_memory_store_type() == "in_memory"
            await agent.switch_memory_store("sql", url="sqlite://")
            assert await agent.get_memory_store_type() == "sql"
            assert isinstance(agent.memory_router, aio.MemoryRouter)
            assert agent.memory_router is agent.memory_router
            assert agent.memory_router.kind == "sql"
            await agent.run("after the switch", session_id="a")
            assert await agent.get_session_history("a") == exchange("after the switch")
            runs = await agent.list_runs(session_id="a")
            assert [r["status"] for r in runs] == ["completed"]
            assert (await agent.get_run(runs[0]["run_id"]))["session_id"] == "a"
            preview = await agent.preview("a", "next")
            assert preview["messages"][-1] == {"role": "user", "content": "next"}
        return agent

    agent = asyncio.run(main())
    assert agent.memory_router.closed  # the agent owned it; async with cleaned up


def test_errors_propagate_as_the_same_classes(model, monkeypatch):
    async def main():
        agent = new_agent()
        with pytest.raises(omnisync.ConfigurationError, match="session_id must be"):
            await agent.get_session_history(123)
        with pytest.raises(omnisync.ConfigurationError, match="message must be a string"):
            await agent.run(42)
        with pytest.raises(omnisync.errors.RunNotFoundError):
            await agent.resume("run_nope")

        def rate_limited(client, *args, **kwargs):
            raise RateLimitError("slow down", status_code=429, request_id="req_1", body=None)

        monkeypatch.setattr(ChatClient, "complete", rate_limited)
        with pytest.raises(RateLimitError) as caught:
            await agent.run("hello", session_id="s")
        assert caught.value.status_code == 429
        await agent.cleanup()

    asyncio.run(main())


def test_constructors_are_synchronous_and_raise_the_same_errors():
    with pytest.raises(omnisync.ConfigurationError, match="Invalid memory store type: postgres"):
        aio.MemoryRouter("postgres")
    with pytest.raises(omnisync.ConfigurationError, match="memory_router must be a MemoryRouter"):
        new_agent(memory_router="sql")
    with pytest.raises(omnisync.ConfigurationError, match="name must be"):
        new_agent(name="")


def test_attributes_read_and_write_through_to_the_blocking_agent():
    router = omnisync.MemoryRouter()  # a blocking router is accepted too
    agent = new_agent(memory_router=router)
    assert isinstance(agent.blocking, omnisync.OmniCoreAgent)
    assert agent.memory_router.blocking is router
    assert agent.name == "assistant" and agent.system_instruction == INSTRUCTION
    assert agent.model_config.model == "gpt-5.4-mini"
    assert isinstance(agent.tools, aio.ToolRegistry)
    assert "run" in dir(agent) and "system_instruction" in dir(agent)
    agent.system_instruction = "changed"
    assert agent.blocking.system_instruction == "changed"
    assert repr(agent) == "aio.OmniCoreAgent(name='assistant', model='gpt-5.4-mini', store='in_memory')"
    with pytest.raises(AttributeError):
        agent.no_such_thing  # noqa: B018
    router.close()


def test_async_with_closes_the_router_and_cleans_up_the_agent():
    async def main():
        async with aio.MemoryRouter("sql", url="sqlite://") as router:
            async with new_agent(memory_router=router) as agent:
                await agent.run("hello", session_id="s")
            assert not router.closed  # the agent does not close a router it was given
        return agent

    agent = asyncio.run(main())
    assert agent.memory_router.closed
    with pytest.raises(omnisync.ConfigurationError, match="closed"):
        asyncio.run(agent.get_session_history("s"))


def test_the_loop_stays_free_while_a_run_works(model, monkeypatch):
    started, release = threading.Event(), threading.Event()

    def waits_for_the_loop(client, messages, tools=None, **overrides):
        started.set()
        assert release.wait(timeout=10), "the event loop never got to release the model call"
        return Completion(content="done")

    monkeypatch.setattr(ChatClient, "complete", waits_for_the_loop)

    async def main():
        agent = new_agent()
        run = asyncio.ensure_future(agent.run("hello", session_id="s"))
        while not started.is_set():
            await asyncio.sleep(0.001)
        release.set()  # only reachable if the run is off the loop's thread
        result = await run
        await agent.cleanup()
        return result

    assert asyncio.run(main())["response"] == "done"


# --- under load: many runs at once, on every backend ------------------------------------------


def _postgres_router():
    sa = pytest.importorskip("sqlalchemy")
    url = backends.postgres_url()
    probe = sa.create_engine(url, connect_args={"connect_timeout": 2})
    try:
        with probe.connect():
            pass
    except sa.exc.OperationalError as exc:
        backends.unreachable("PostgreSQL", f"{exc.__class__.__name__}: {exc.orig}")
    finally:
        probe.dispose()
    return aio.MemoryRouter("sql", url=url)


def _forget_postgres(router, agent):
    """clear_session_history() keeps each session's seq counter (so seq never goes back): drop ours."""
    from omnisync.stores.sql import schema as sql_schema

    with router.blocking.store.engine.begin() as conn:
        conn.execute(sql_schema.sessions.delete().where(sql_schema.sessions.c.agent == agent))


def _redis_router():
    redis = pytest.importorskip("redis")
    url = backends.redis_url()
    probe = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        probe.ping()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        backends.unreachable("Redis", f"{url}: {exc}")
    finally:
        probe.close()
    return aio.MemoryRouter("redis", url=url, prefix=f"omnisync-test-{uuid.uuid4().hex}")


def _forget_redis(router, agent):
    """clear_session_history() keeps each session's seq counter: drop every key under our own prefix."""
    store = router.blocking.store
    doomed = list(store.client.scan_iter(match=f"{store.prefix}:*", count=1000))
    if doomed:
        store.client.delete(*doomed)


@pytest.fixture(
    params=[
        "in_memory",
        "sqlite_in_memory",
        "sqlite_file",
        pytest.param("postgres", marks=pytest.mark.backend("postgres")),
        pytest.param("redis", marks=pytest.mark.backend("redis")),
    ]
)
def router(request, tmp_path):
    if request.param == "in_memory":
        router = aio.MemoryRouter()
    elif request.param == "sqlite_in_memory":
        router = aio.MemoryRouter("sql", url="sqlite://")
    elif request.param == "sqlite_file":
        router = aio.MemoryRouter("sql", url=f"sqlite:///{tmp_path / 'memory.db'}")
    elif request.param == "postgres":
        router = _postgres_router()
    else:
        router = _redis_router()
    forget = {"postgres": _forget_postgres, "redis": _forget_redis}.get(request.param, lambda router, agent: None)
    with router:
        yield router, forget


SESSIONS = 50


def test_concurrent_runs_on_many_sessions_keep_each_session_to_itself(router, model):
    router, forget = router
    model.delay = 0.005  # long enough for runs to overlap
    name = f"aio-load-{uuid.uuid4().hex[:12]}"  # shared servers: an agent of our own

    async def main():
        agent = new_agent(name=name, memory_router=router)
        try:
            results = await asyncio.gather(
                *(agent.run(f"message {i}", session_id=f"session-{i}") for i in range(SESSIONS))
            )
            histories = await asyncio.gather(*(agent.get_session_history(f"session-{i}") for i in range(SESSIONS)))
            runs = await agent.list_runs(status="completed")
        finally:
            await agent.clear_session_history()
            await asyncio.to_thread(router.blocking.store.prune_runs, name, utcnow() + timedelta(days=1))
            await asyncio.to_thread(forget, router, name)
            await agent.cleanup()
        return results, histories, runs

    results, histories, runs = asyncio.run(main())
    assert [r["status"] for r in results] == ["completed"] * SESSIONS
    assert [r["response"] for r in results] == [f"echo: message {i}" for i in range(SESSIONS)]
    for i, history in enumerate(histories):
        assert history == exchange(f"message {i}"), f"session-{i}"
    assert len(runs) == SESSIONS
    assert model.peak > 1, "the runs never overlapped"
    assert threading.get_ident() not in model.threads


# --- the blocking API needs no loop, and minds none -------------------------------------------


def test_the_blocking_agent_works_inside_a_running_loop_and_from_a_worker_thread(model):
    agent = new_agent(module=omnisync)

    async def main():
        asyncio.get_running_loop()
        inside = agent.run("inside the loop", session_id="notebook")
        from_thread = await asyncio.to_thread(agent.run, "from a worker thread", session_id="notebook")
        return inside, from_thread

    inside, from_thread = asyncio.run(main())
    assert inside["response"] == "echo: inside the loop"
    assert from_thread["response"] == "echo: from a worker thread"
    assert agent.get_session_history("notebook") == exchange("inside the loop") + exchange("from a worker thread")
    assert len(model.threads) == 2
    agent.cleanup()
