import functools
import multiprocessing
import importlib
import re
import sys
import uuid
from datetime import timedelta

import pytest

redis = pytest.importorskip("redis")
from redis.backoff import NoBackoff  # noqa: E402
from redis.cluster import RedisCluster, key_slot  # noqa: E402
from redis.exceptions import RedisClusterException  # noqa: E402
from redis.retry import Retry  # noqa: E402

from helpers import backends  # noqa: E402
from omnisync.errors import ConfigurationError, MissingDependencyError, RunConflictError, StoreError  # noqa: E402
from omnisync.messages import Message, utcnow  # noqa: E402
from omnisync.run_record import COMPLETED, RunRecord  # noqa: E402
from omnisync.stores.redis import store as redis_store  # noqa: E402
from omnisync.stores.redis.store import RedisStore  # noqa: E402
from helpers.store_contract import AGENT, SharedStoreContract, contents, summary_message, user  # noqa: E402

pytestmark = pytest.mark.backend("redis")


def _no_retry_client(url: str, **options):
    """A plain client for ``url``: ``redis.Redis``, or a ``RedisCluster`` for a redis+cluster:// URL."""
    options = {"retry": Retry(NoBackoff(), 0), "socket_connect_timeout": 2, **options}
    if url.startswith("redis+cluster://"):
        return RedisCluster.from_url(url.replace("redis+cluster://", "redis://", 1), **options)
    return redis.Redis.from_url(url, **options)


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


@pytest.fixture(params=["redis", pytest.param("cluster", marks=pytest.mark.backend("redis_cluster"))])
def url(request):
    """A single Redis server, then the Redis Cluster: the whole contract holds on both."""
    name, url = ("Redis", backends.redis_url()) if request.param == "redis" else ("Redis Cluster", backends.redis_cluster_url())
    try:
        probe = _no_retry_client(url)
        probe.ping()
        probe.close()
    except (redis.ConnectionError, redis.TimeoutError, RedisClusterException) as exc:
        backends.unreachable(name, f"{url}: {exc}")
    return url


@pytest.fixture
def prefix(url):
    """A prefix of our own per test; afterwards every key under it goes (it is ours, not user data)."""
    prefix = f"omnisync-test-{uuid.uuid4().hex}"
    yield prefix
    cleaner = _no_retry_client(url)
    try:
        doomed = list(cleaner.scan_iter(match=f"{_glob_escape(prefix)}:*", count=1000))
        if doomed:
            cleaner.delete(*doomed)
    finally:
        cleaner.close()


@pytest.fixture
def store(url, prefix):
    with RedisStore.from_url(url, prefix=prefix) as store:
        yield store


@pytest.fixture
def store_opener(url, prefix):
    return functools.partial(RedisStore.from_url, url, prefix=prefix)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _keys(store: RedisStore) -> list[str]:
    found = store.client.scan_iter(match=f"{_glob_escape(store.prefix)}:*", count=1000)
    return sorted(k.decode() for k in found)


def _count_commands(client, monkeypatch) -> list[tuple]:
    sent: list[tuple] = []
    original = client.execute_command

    def counting(*args, **options):
        sent.append(args)
        return original(*args, **options)

    monkeypatch.setattr(client, "execute_command", counting)
    return sent


def _count_closes(client, monkeypatch) -> list[bool]:
    closes: list[bool] = []
    original = client.close

    def counting() -> None:
        closes.append(True)
        original()

    monkeypatch.setattr(client, "close", counting)
    return closes


class TestRedisStore(SharedStoreContract):
    # --- reads that fail raise ----------------------------------------------------------

    def test_a_read_against_an_unreachable_server_raises(self):
        down = RedisStore(_no_retry_client("redis://127.0.0.1:1/0"), prefix="unreachable")
        with pytest.raises(StoreError, match="Redis store redis://127.0.0.1:1/0"):
            down.history(AGENT, "s")
        with pytest.raises(StoreError):
            down.window(AGENT, "s", max_messages=5)
        with pytest.raises(StoreError):
            down.sessions()
        with pytest.raises(StoreError):
            down.load_run(AGENT, "r1")
        with pytest.raises(StoreError):
            down.append(AGENT, "s", [user("lost?")])
        down.client.close()

    def test_from_url_fails_fast_without_retrying(self):
        with RedisStore.from_url("redis://127.0.0.1:1/0", prefix="unreachable", socket_connect_timeout=2) as down:
            with pytest.raises(StoreError):
                down.list_runs(AGENT)

    def test_a_url_that_is_not_redis_is_a_configuration_error(self):
        with pytest.raises(ValueError, match="Redis URL"):
            RedisStore.from_url("http://localhost:6379")

    # --- the window ---------------------------------------------------------------------

    def test_a_window_load_is_one_round_trip_whatever_the_session_length(self, store, monkeypatch):
        for start in range(0, 2000, 500):
            store.append(AGENT, "s", [user(str(i)) for i in range(start, start + 500)])
        sent = _count_commands(store.client, monkeypatch)
        window = store.window(AGENT, "s", max_messages=20)
        assert contents(window) == [str(i) for i in range(1980, 2000)]
        assert len(sent) == 1
        assert sent[0][0] == "ZREVRANGEBYSCORE" and sent[0][-3:] == ("LIMIT", 0, 20)

    def test_folded_messages_leave_the_active_set(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(10)])
        store.fold(AGENT, "s", summary_message(), first_seq=written[0].seq, last_seq=written[7].seq, expected_count=8, delete=False)
        active, inactive, _ = store._session_keys(AGENT, "s")
        assert store.client.zcard(active) == 3 and store.client.zcard(inactive) == 8
        assert len(store.history(AGENT, "s", include_inactive=True)) == 11

    def test_a_fold_of_nothing_changes_nothing(self, store):
        store.append(AGENT, "s", [user("a")])
        assert store.fold(AGENT, "s", summary_message(), first_seq=100, last_seq=200, expected_count=0, delete=False) is None
        assert contents(store.history(AGENT, "s", include_inactive=True)) == ["a"]

    def test_appending_more_than_one_script_batch_at_once(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(2500)])
        assert [m.seq for m in written] == list(range(2, 5002, 2))
        assert [m.seq for m in store.history(AGENT, "s")] == [m.seq for m in written]

    def test_an_inactive_message_appended_stays_out_of_the_window(self, store):
        store.append(AGENT, "s", [user("seen"), Message(role="user", content="hidden", status="inactive")])
        assert contents(store.window(AGENT, "s", max_messages=10)) == ["seen"]
        assert contents(store.history(AGENT, "s", include_inactive=True)) == ["seen", "hidden"]

    # --- keys ---------------------------------------------------------------------------

    def test_keys_hold_no_user_text_so_no_pattern_can_match_it(self, store):
        ids = ["a:b*", "*", "{tag}", "日本語 x"]
        for session_id in ids:
            store.append("agent:*", session_id, [user(session_id)])
        store.save_run(RunRecord(run_id="run:*", agent="agent:*", session_id="*", created_at=utcnow()), None)
        if store.cluster:  # the same names, with the agent's or the session's part as the hash tag
            rest = r"\{a:[0-9a-f]*\}:(sessions|sessions:order|runs|run:[0-9a-f]+)|\{a:[0-9a-f]*:s:[0-9a-f]+\}:(active|inactive|meta)"
            agents = rf"^{re.escape(store.prefix)}:\{{{re.escape(store.prefix)}:agents\}}:order$"
        else:
            rest = r"a:[0-9a-f]*:(sessions|sessions:order|runs|run:[0-9a-f]+|s:[0-9a-f]+:(active|inactive|meta))"
            agents = rf"^{re.escape(store.prefix)}:agents:order$"
        layout = re.compile(rf"^{re.escape(store.prefix)}:(agents|{rest})$|{agents}")
        keys = _keys(store)
        assert keys and all(layout.match(key) for key in keys), keys
        assert not any(ch in key[len(store.prefix) :] for key in keys for ch in "* ")
        assert store.clear("agent:*", "*") == 1
        assert sorted(s.session_id for s in store.sessions("agent:*")) == sorted(set(ids) - {"*"})
        assert store.load_run("agent:*", "run:*") is not None

    def test_clear_leaves_only_the_seq_counters_and_the_listings(self, store):
        store.append(AGENT, "s", [user("a")])
        store.append(AGENT, "t", [user("b")])
        assert store.clear(AGENT, "s") == 1
        assert store.clear(AGENT) == 1
        keys = _keys(store)
        metas = [key for key in keys if key.endswith(":meta")]
        listings = [store._agents_key, store._agents_order_key, *store._sessions_keys(AGENT)]
        assert sorted(set(keys) - set(metas)) == sorted(listings), keys
        assert len(metas) == 2 and all(sorted(_text(k) for k in store.client.hkeys(key)) == ["listed", "seq"] for key in metas)
        assert store.sessions() == [] and store.sessions(AGENT) == []

    def test_clearing_an_agent_reads_its_listing_a_batch_at_a_time(self, store, monkeypatch):
        monkeypatch.setattr(redis_store, "CLEAR_BATCH", 3)
        for i in range(10):
            store.append(AGENT, f"s{i}", [user("a"), user("b")])
        store.append("other", "s0", [user("kept")])
        pipelines = []
        opened = store.client.pipeline
        monkeypatch.setattr(store.client, "pipeline", lambda *a, **k: pipelines.append(1) or opened(*a, **k))
        assert store.clear(AGENT) == 20
        assert len(pipelines) >= 4 and store.sessions(AGENT) == []  # 10 sessions, 3 a batch
        assert contents(store.history("other", "s0")) == ["kept"]

    def test_clearing_twice_then_appending_keeps_working(self, store):
        for _ in range(2):
            store.append(AGENT, "s", [user("x"), user("y")])
            assert store.clear(AGENT, "s") == 2
            assert store.clear(AGENT, "s") == 0
        [fresh] = store.append(AGENT, "s", [user("z")])
        assert fresh.seq > 0 and contents(store.history(AGENT, "s")) == ["z"]
        assert [s.session_id for s in store.sessions(AGENT)] == ["s"]

    def test_sessions_are_sorted_by_agent_then_id(self, store):
        for agent, session_id in [("b", "2"), ("a", "z"), ("b", "1"), ("a", "y")]:
            store.append(agent, session_id, [user("x")])
        assert [(s.agent, s.session_id) for s in store.sessions()] == [("a", "y"), ("a", "z"), ("b", "1"), ("b", "2")]

    # --- runs ---------------------------------------------------------------------------

    # --- a run in three round trips: the scripts that make it so ----------------------------

    def test_save_runs_writes_all_or_none(self, store):
        lease = store.save_run(RunRecord(run_id="lease", agent=AGENT, session_id="s", created_at=utcnow()), None)
        store.save_run(RunRecord(run_id="taken", agent=AGENT, session_id="s", created_at=utcnow()), None)
        with pytest.raises(RunConflictError):
            store.save_runs([(lease.evolve(lease_owner="taken"), lease.version), (RunRecord(run_id="taken", agent=AGENT, session_id="s"), None)])
        assert store.load_run(AGENT, "lease") == lease  # the first fitted, the second did not: neither was written
        with pytest.raises(ValueError, match="one agent"):
            store.save_runs([(lease, lease.version), (RunRecord(run_id="x", agent="other", session_id="s"), None)])

    def test_on_one_server_a_runs_last_write_is_both_or_neither(self, store):
        record = store.save_run(RunRecord(run_id="r1", agent=AGENT, session_id="s", created_at=utcnow()), None)
        store.append(AGENT, "s", [user("before")])
        with pytest.raises(RunConflictError):
            store.append_and_save_run(AGENT, "s", [user("lost lease")], record.evolve(status=COMPLETED), record.version + 1)
        if store.cluster:  # two slots: the messages go first, the record after
            assert contents(store.history(AGENT, "s")) == ["before", "lost lease"]
        else:
            assert contents(store.history(AGENT, "s")) == ["before"]
        assert store.load_run(AGENT, "r1") == record

    def test_the_first_written_seq_is_written_by_the_script_whatever_the_record_holds(self, store):
        tricky = RunRecord(
            run_id="r1", agent=AGENT, session_id="s", created_at=utcnow(),
            response='"first_written_seq":null', usage={"first_written_seq": None},  # look-alikes in the data stay as they are
        )
        _, saved = store.append_and_save_run(AGENT, "s", [user("a"), user("b")], tricky, None)
        loaded = store.load_run(AGENT, "r1")
        assert loaded == saved and loaded.first_written_seq == 2
        assert loaded.response == '"first_written_seq":null' and loaded.usage == {"first_written_seq": None}

    def test_a_run_with_expires_at_gets_a_redis_expiry(self, store):
        record = RunRecord(run_id="r1", agent=AGENT, session_id="s", created_at=utcnow(), expires_at=utcnow() + timedelta(hours=1))
        saved = store.save_run(record, None)
        key = f"{store._agent_stem(AGENT)}:run:{'r1'.encode().hex()}"
        assert 3500_000 < store.client.pttl(key) <= 3600_000
        store.save_run(saved.evolve(expires_at=None), expected_version=1)
        assert store.client.pttl(key) == -1

    def test_a_runs_events_expire_with_its_record(self, store):
        key = f"{store._agent_stem(AGENT)}:run:{'r1'.encode().hex()}"
        saved = store.save_run(RunRecord(run_id="r1", agent=AGENT, session_id="s", created_at=utcnow()), None)
        store.append_events(AGENT, "r1", [("text_delta", {"text": "a"})])
        assert store.client.pttl(f"{key}:events") == -1
        finished = store.save_run(saved.evolve(expires_at=utcnow() + timedelta(hours=1)), expected_version=1)
        assert 3500_000 < store.client.pttl(f"{key}:events") <= 3600_000
        store.client.persist(f"{key}:events")
        store.append_events(AGENT, "r1", [("run_finished", {})])  # appended after the finishing save
        assert 3500_000 < store.client.pttl(f"{key}:events") <= 3600_000
        store.save_run(finished.evolve(expires_at=None), expected_version=2)
        assert store.client.pttl(f"{key}:events") == -1

    def test_list_runs_drops_index_entries_of_expired_records(self, store):
        store.save_run(RunRecord(run_id="kept", agent=AGENT, session_id="s", created_at=utcnow()), None)
        gone = RunRecord(run_id="gone", agent=AGENT, session_id="s", created_at=utcnow(), expires_at=utcnow() - timedelta(seconds=1))
        store.save_run(gone, None)
        assert store.load_run(AGENT, "gone") is None
        assert [r.run_id for r in store.list_runs(AGENT)] == ["kept"]
        assert store.client.zcard(f"{store._agent_stem(AGENT)}:runs") == 1

    def test_list_runs_is_oldest_first(self, store):
        now = utcnow()
        for run_id, age in [("b", 1), ("c", 3), ("a", 2)]:
            store.save_run(RunRecord(run_id=run_id, agent=AGENT, session_id="s", created_at=now - timedelta(minutes=age)), None)
        assert [r.run_id for r in store.list_runs(AGENT)] == ["c", "a", "b"]

    def test_a_page_of_runs_reads_the_index_a_bounded_step_at_a_time(self, store, monkeypatch):
        runs = self._paged_runs(store)  # four records to a run: three of other kinds
        monkeypatch.setattr(redis_store, "RUNS_PAGE_SCAN", 5)
        scripts = []
        real = store._runs_page
        monkeypatch.setattr(store, "_runs_page", lambda **kw: scripts.append(kw["args"][4]) or real(**kw))
        assert [r.run_id for r in store.runs_page(AGENT, None, 6)] == [r.run_id for r in runs[:6]]
        assert len(scripts) > 1 and set(scripts) == {5}  # 6 runs lie among 21 entries: several bounded steps
        self.assert_every_filter_pages_alike(store, runs, sizes=(1, 4))

    def test_a_page_of_runs_drops_index_entries_of_expired_records(self, store):
        gone = RunRecord(run_id="gone", agent=AGENT, session_id="s", created_at=utcnow(), expires_at=utcnow() - timedelta(seconds=1))
        store.save_run(gone, None)
        store.save_run(RunRecord(run_id="kept", agent=AGENT, session_id="s", created_at=utcnow()), None)
        assert [r.run_id for r in store.runs_page(AGENT)] == ["kept"]
        assert store.client.zcard(f"{store._agent_stem(AGENT)}:runs") == 1

    def test_prune_keeps_unfinished_runs_with_an_old_finished_at(self, store):
        old = utcnow() - timedelta(days=40)
        store.save_run(RunRecord(run_id="odd", agent=AGENT, session_id="s", finished_at=old, created_at=old), None)
        store.save_run(RunRecord(run_id="done", agent=AGENT, session_id="s", status=COMPLETED, finished_at=old, created_at=old), None)
        assert store.prune_runs(AGENT, utcnow() - timedelta(days=30)) == 1
        assert [r.run_id for r in store.list_runs(AGENT)] == ["odd"]

    # --- clients ------------------------------------------------------------------------

    def test_an_owned_client_is_closed_and_an_injected_one_is_not(self, url, prefix, monkeypatch):
        owned = RedisStore.from_url(url, prefix=prefix)
        owned_closes = _count_closes(owned.client, monkeypatch)
        owned.close()
        assert owned_closes == [True]

        client = _no_retry_client(url)
        try:
            injected_closes = _count_closes(client, monkeypatch)
            with RedisStore(client, prefix=prefix) as injected:
                injected.append(AGENT, "s", [user("x")])
            assert injected_closes == []
            assert contents(RedisStore(client, prefix=prefix).history(AGENT, "s")) == ["x"]
        finally:
            client.close()

    def test_a_client_that_decodes_responses_works_too(self, url, prefix):
        client = _no_retry_client(url, decode_responses=True)
        try:
            store = RedisStore(client, prefix=prefix)
            written = store.append(AGENT, "日本", [user("金曜日")])
            assert store.history(AGENT, "日本") == written
            assert [s.session_id for s in store.sessions(AGENT)] == ["日本"]
            store.save_run(RunRecord(run_id="r", agent=AGENT, session_id="日本", created_at=utcnow()), None)
            assert [r.run_id for r in store.list_runs(AGENT, session_id="日本")] == ["r"]
        finally:
            client.close()

    def test_the_prefix_comes_from_the_environment(self, url, monkeypatch):
        monkeypatch.setenv("OMNISYNC_REDIS_PREFIX", "from-env")
        client = _no_retry_client(url)
        try:
            assert RedisStore(client).prefix == "from-env"
            monkeypatch.delenv("OMNISYNC_REDIS_PREFIX")
            assert RedisStore(client).prefix == "omnisync"
        finally:
            client.close()


    # --- listings, and the layout across slots ---------------------------------------------

    def test_an_append_writes_nothing_to_a_session_that_is_not_listed_yet(self, store):
        keys = list(store._session_keys(AGENT, "s"))
        assert int(store._append(keys=keys, args=[2, "0", 1, 'a"role":"user","content":"x"}'])) == -1
        assert store.history(AGENT, "s") == [] and store.client.exists(*keys) == 0
        [written] = store.append(AGENT, "s", [user("y")])  # lists the session, then writes
        assert [s.session_id for s in store.sessions(AGENT)] == ["s"] and contents(store.history(AGENT, "s")) == ["y"]
        assert int(store._append(keys=keys, args=[2, "0", 1, 'a"role":"user","content":"z"}'])) == written.seq + 2

    def test_every_key_of_a_session_shares_a_slot_and_every_run_key_of_an_agent_another(self, store):
        if not store.cluster:
            pytest.skip("hash tags are for a cluster; one server keeps the key names of earlier releases")
        session_slots = {key_slot(k.encode()) for k in store._session_keys(AGENT, "s")}
        run = "run:" + "r1".encode().hex()
        agent_keys = [f"{store._agent_stem(AGENT)}:{suffix}" for suffix in ("sessions", "sessions:order", "runs", run, run + ":events")]
        assert len(session_slots) == 1 and len({key_slot(k.encode()) for k in agent_keys}) == 1
        assert key_slot(store._agents_key.encode()) == key_slot(store._agents_order_key.encode())
        other = {key_slot(k.encode()) for k in store._session_keys(AGENT, "t")}
        assert other != session_slots  # sessions spread over the cluster (these two land apart)

    def test_sessions_appended_to_while_others_clear_them_are_always_listed(self, store, store_opener):
        context = multiprocessing.get_context("spawn")
        started, done, cleared = context.Event(), context.Event(), context.Value("i", 0)
        clearer = context.Process(target=_clear_until, args=(store_opener, 40, started, done, cleared))
        appender = context.Process(target=_append_new_sessions, args=(store_opener, 40, started, done))
        for worker in (clearer, appender):
            worker.start()
        for worker in (appender, clearer):
            worker.join(timeout=120)
            assert worker.exitcode == 0
        assert cleared.value > 0  # the clears did race the appends
        with_messages = {f"s{i}" for i in range(40) if store.history(AGENT, f"s{i}")}
        assert {info.session_id for info in store.sessions(AGENT)} == with_messages

    def test_a_page_of_sessions_reads_the_sorted_twin_from_its_cursor(self, store, monkeypatch):
        for i in range(300):
            store.append(AGENT, f"s{i:03}", [user("x")])
        sent = _count_commands(store.client, monkeypatch)
        page = store.sessions_page(AGENT, (AGENT, "s099"), 10)
        assert [s.session_id for s in page] == [f"s{i:03}" for i in range(100, 110)]
        assert [args[0] for args in sent] == ["EVALSHA"]  # the counts go in one pipeline, apart
        assert sent[0][-2:] == ("(" + "s099".encode().hex(), 10)

    def test_listings_written_before_their_sorted_twins_are_paged_after_one_fill(self, store):
        """Sets without twins, as this store's earlier releases left them (and as an earlier
        release still running adds to them): the first page fills the twin, then reads it."""
        expected = [(agent, f"s{i:04}") for agent in ("a", "b") for i in range(1200 if agent == "a" else 3)]
        for agent, session_id in expected:
            store.append(agent, session_id, [user("x")])
        store.clear("a", "s0001")
        expected.remove(("a", "s0001"))
        twins = [store._agents_order_key, store._sessions_keys("a")[1], store._sessions_keys("b")[1]]
        for twin in twins:
            store.client.delete(twin)
        assert [(s.agent, s.session_id) for s in store.sessions_page(None, None, 2)] == expected[:2]
        assert store.client.zcard(twins[0]) == 2 and store.client.zcard(twins[1]) == 1200
        assert [(s.agent, s.session_id) for s in store.iter_sessions(page_size=500)] == expected
        store.client.sadd(store._sessions_keys("b")[0], "s0000x".encode().hex())  # listed, never written
        [old] = store.append("b", "s0001x", [user("y")])  # an earlier release: set only, then the write
        store.client.zrem(store._sessions_keys("b")[1], "s0001x".encode().hex())
        assert [s.session_id for s in store.iter_sessions("b", page_size=2)] == ["s0000", "s0001", "s0001x", "s0002"]
        assert store.client.zcard(store._sessions_keys("b")[1]) == store.client.scard(store._sessions_keys("b")[0]) == 5

    def test_a_cluster_prefix_cannot_hold_braces(self, url):
        if not url.startswith("redis+cluster://"):
            pytest.skip("braces change slots only on a cluster")
        with pytest.raises(ConfigurationError, match="cannot hold"):
            RedisStore.from_url(url, prefix="my{app}")


def _append_new_sessions(opener, count: int, started, done) -> None:
    store = opener()
    try:
        assert started.wait(60)
        for i in range(count):
            for n in range(3):
                store.append(AGENT, f"s{i}", [user(f"m{n}")])
    finally:
        done.set()
        store.close()


def _clear_until(opener, count: int, started, done, cleared) -> None:
    store = opener()
    try:
        started.set()
        while not done.is_set():
            for i in range(count):
                cleared.value += store.clear(AGENT, f"s{i}")
    finally:
        store.close()


def test_data_written_by_an_earlier_release_is_read_and_extended(url, prefix):
    """One server keeps the key names of earlier releases: their data needs no migration."""
    if url.startswith("redis+cluster://"):
        pytest.skip("earlier releases did not run on a cluster")
    client = _no_retry_client(url)
    try:
        agent, session = AGENT.encode().hex(), "old".encode().hex()
        stem = f"{prefix}:a:{agent}:s:{session}"  # as 0.x wrote it: no "listed" flag
        client.zadd(f"{stem}:active", {'{"seq":2,"role":"user","content":"from before","tokens":3,"created_at":"2024-01-01T00:00:00+00:00"}': 2})
        client.hset(f"{stem}:meta", mapping={"seq": 2, "last": 1704067200000000})
        client.sadd(f"{prefix}:a:{agent}:sessions", session)
        client.sadd(f"{prefix}:agents", agent)
        with RedisStore(client, prefix=prefix) as store:
            assert contents(store.history(AGENT, "old")) == ["from before"]
            assert [(s.session_id, s.message_count) for s in store.sessions()] == [("old", 1)]
            [added] = store.append(AGENT, "old", [user("from now")])
            assert added.seq == 4 and contents(store.window(AGENT, "old", max_messages=5)) == ["from before", "from now"]
    finally:
        client.close()


def test_a_cluster_that_cannot_be_reached_is_a_store_error():
    with pytest.raises(StoreError, match=r"Redis Cluster store redis://127.0.0.1:1/ cannot be reached"):
        RedisStore.from_url("redis+cluster://127.0.0.1:1/", socket_connect_timeout=1)


def test_without_redis_installed_the_import_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.delitem(sys.modules, "omnisync.stores.redis.store")
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnisync\[redis\]'"):
        importlib.import_module("omnisync.stores.redis.store")
