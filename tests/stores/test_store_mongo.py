import functools
import threading
import uuid
from datetime import timedelta

import pymongo
import pytest
from bson import ObjectId
from pymongo.errors import AutoReconnect, DuplicateKeyError, PyMongoError

from helpers import backends
from omnisync.errors import ConfigurationError, RunConflictError, StoreError
from omnisync.messages import Message, utcnow
from omnisync.run_record import COMPLETED, RunRecord
from omnisync.stores.mongo import documents, indexes, store as mongo_store
from omnisync.stores.mongo.store import MongoStore
from helpers.store_contract import AGENT, SharedStoreContract, contents, summary_message, user

TIMEOUT_MS = 2000
DEAD_URI = "mongodb://127.0.0.1:1/"  # nothing listens on port 1


@pytest.fixture(scope="module")
def mongo_uri():
    uri = backends.mongodb_uri()
    try:
        with pymongo.MongoClient(uri, serverSelectionTimeoutMS=TIMEOUT_MS) as client:
            client.admin.command("ping")
    except PyMongoError as exc:
        backends.unreachable("MongoDB (FerretDB)", f"{uri}: {exc.__class__.__name__}")
    return uri


@pytest.fixture
def db_name():
    return f"omnisync_test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(mongo_uri, db_name):
    store = MongoStore.from_url(mongo_uri, db_name=db_name, serverSelectionTimeoutMS=TIMEOUT_MS)
    try:
        yield store
    finally:
        store.client.drop_database(db_name)
        store.close()


@pytest.fixture
def store_opener(mongo_uri, db_name):
    return functools.partial(MongoStore.from_url, mongo_uri, db_name=db_name, serverSelectionTimeoutMS=TIMEOUT_MS)


@pytest.fixture
def client(mongo_uri):
    with pymongo.MongoClient(mongo_uri, serverSelectionTimeoutMS=TIMEOUT_MS) as client:
        yield client


class _Limits:
    """A find cursor that notes the limit each query is given."""

    def __init__(self, cursor, limits):
        self._cursor, self._limits = cursor, limits

    def sort(self, *args, **kwargs):
        self._cursor = self._cursor.sort(*args, **kwargs)
        return self

    def limit(self, n):
        self._limits.append(n)
        self._cursor = self._cursor.limit(n)
        return self

    def __iter__(self):
        return iter(self._cursor)


class _Interfering:
    """A collection that lets something happen just before each insert_many."""

    def __init__(self, collection, interfere):
        self.collection = collection
        self.interfere = interfere
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.collection, name)

    def insert_many(self, documents, **options):
        self.calls += 1
        if self.interfere is not None:
            self.interfere(documents)
        return self.collection.insert_many(documents, **options)


def _is_ferretdb(store: MongoStore) -> bool:
    return "ferretdbVersion" in store.client.admin.command("buildInfo")


def _run(run_id="r", **changes):
    return RunRecord(run_id=run_id, agent=AGENT, session_id="s", created_at=utcnow(), **changes)


def _in_threads(*calls):
    barrier = threading.Barrier(len(calls))

    def start_together(call):
        barrier.wait()
        call()

    threads = [threading.Thread(target=start_together, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


class TestMongoStore(SharedStoreContract):
    # FerretDB v1 (SQLite backend) stores a NUL inside a string value as itself, so the
    # contract's NUL round trip runs unchanged here (supports_nul stays True).

    # --- messages -----------------------------------------------------------------------

    def test_history_returns_every_message_of_a_long_session(self, store):
        for step in range(5):  # few steps: every FerretDB (SQLite) query scans the whole collection
            store.append(AGENT, "long", [user(f"{step}-{i}") for i in range(500)])
        stored = store.history(AGENT, "long")
        assert len(stored) == 2500
        assert [m.seq for m in stored] == list(range(2, 5002, 2))
        assert len(store.history(AGENT, "long", include_inactive=True)) == 2500
        [info] = store.sessions(AGENT)
        assert info.message_count == 2500

    def test_non_string_ids_are_refused_before_any_query(self, store):
        store.append(AGENT, "s", [user("kept")])
        injection = {"$gt": ""}
        calls = [
            lambda: store.append(AGENT, injection, [user("x")]),
            lambda: store.append(injection, "s", [user("x")]),
            lambda: store.append(AGENT, 7, [user("x")]),
            lambda: store.history(AGENT, injection),
            lambda: store.latest(AGENT, injection, 5),
            lambda: store.latest(AGENT, "s", 5, before_seq={"$gt": 0}),
            lambda: store.latest(AGENT, "s", {"$gt": 0}),
            lambda: store.window(AGENT, injection, max_messages=5),
            lambda: store.clear(AGENT, injection),
            lambda: store.clear(injection),
            lambda: store.sessions(injection),
            lambda: store.fold(AGENT, injection, summary_message(), first_seq=2, last_seq=2, expected_count=1, delete=True),
            lambda: store.fold(AGENT, "s", summary_message(), first_seq={"$gt": 0}, last_seq=2, expected_count=1, delete=True),
            lambda: store.load_run(AGENT, injection),
            lambda: store.load_run(injection, "r"),
            lambda: store.list_runs(AGENT, session_id=injection),
            lambda: store.list_runs(AGENT, status=injection),
            lambda: store.prune_runs(injection, utcnow()),
            lambda: store.save_run(RunRecord(run_id=injection, agent=AGENT, session_id="s"), None),
            lambda: store.save_run(_run(), expected_version={"$gt": 0}),
        ]
        for call in calls:
            with pytest.raises(ConfigurationError, match="must be"):
                call()
        assert contents(store.history(AGENT, "s")) == ["kept"]
        assert [s.session_id for s in store.sessions()] == ["s"]
        assert store.list_runs(AGENT) == []

    def test_an_append_that_loses_the_race_moves_up(self, store):
        [first] = store.append(AGENT, "s", [user("first")])

        def another_process_wins(documents):  # it takes the seq of the step's second message
            racing.interfere = None
            store.messages.collection.insert_one({**documents[1], "_id": ObjectId(), "content": "theirs"})

        racing = store.messages = _Interfering(store.messages, another_process_wins)
        written = store.append(AGENT, "s", [user("a"), user("b"), user("c")])
        assert racing.calls == 2
        assert contents(store.history(AGENT, "s")) == ["first", "theirs", "a", "b", "c"]
        assert [m.seq for m in written] == [first.seq + 6, first.seq + 8, first.seq + 10]

    def test_a_failed_append_is_taken_back(self, store):
        store.append(AGENT, "s", [user("first")])

        def connection_drops(documents):
            store.messages.collection.insert_one(documents[0])  # the first message got in, then the server went away
            raise AutoReconnect("connection closed")

        store.messages = _Interfering(store.messages, connection_drops)
        with pytest.raises(StoreError, match="appending"):
            store.append(AGENT, "s", [user("a"), user("b")])
        assert contents(store.history(AGENT, "s", include_inactive=True)) == ["first"]

    def test_threads_with_their_own_clients_append_without_a_gap_in_order(self, store, store_opener):
        others = [store_opener() for _ in range(4)]
        try:
            _in_threads(*[functools.partial(_append_many, other, f"t{n}", 25) for n, other in enumerate(others)])
        finally:
            for other in others:
                other.close()
        stored = store.history(AGENT, "s")
        assert len(stored) == 100 and len({m.seq for m in stored}) == 100
        for n in range(4):  # each writer's messages keep its order
            assert [m.content for m in stored if m.content.startswith(f"t{n}-")] == [f"t{n}-{i}" for i in range(25)]

    def test_created_at_reads_back_as_written(self, store, client, db_name):
        [written] = store.append(AGENT, "s", [user("a")])
        [read] = store.history(AGENT, "s")
        assert read.created_at == written.created_at and read.created_at.tzinfo is not None
        naive = MongoStore(client, db_name)  # a client without tz_aware still gives UTC-aware times
        [again] = naive.history(AGENT, "s")
        assert again.created_at == written.created_at and again.created_at.utcoffset() == timedelta(0)
        assert naive.sessions()[0].last_activity == written.created_at

    def test_metadata_keys_a_document_cannot_hold_round_trip(self, store):
        metadata = {"a.b": 1, "$where": "x", "": [True, None, 2.5], "deep": {"$gt": {"c.d": "ü", "nul\u0000key": 1}}}
        calls = [{"id": "c.1", "type": "function", "function": {"name": "f", "arguments": '{"$x": 1}'}}]
        store.append(AGENT, "s", [Message(role="assistant", content=None, tool_calls=calls, metadata=metadata)])
        [stored] = store.history(AGENT, "s")
        assert stored.metadata == metadata and stored.tool_calls == calls

    # --- indexes and the window query ---------------------------------------------------------

    def test_indexes_exist(self, store):
        messages = {ix["name"]: ix for ix in store.messages.list_indexes()}
        seq = messages[indexes.SEQ_INDEX]
        assert list(seq["key"].items()) == [("agent", 1), ("session_id", 1), ("seq", 1)] and seq["unique"] is True
        assert list(messages[indexes.WINDOW_INDEX]["key"].items()) == [("agent", 1), ("session_id", 1), ("status", 1), ("seq", 1)]
        runs = {ix["name"]: ix for ix in store.runs.list_indexes()}
        run = runs[indexes.RUN_INDEX]
        assert list(run["key"].items()) == [("agent", 1), ("run_id", 1), ("version", 1)] and run["unique"] is True
        assert list(runs[indexes.RUN_PAGE_INDEX]["key"].items()) == [("agent", 1), ("created_at", 1), ("run_id", 1), ("version", -1)]
        if store.expires_runs_itself:
            assert runs[indexes.RUN_TTL_INDEX]["expireAfterSeconds"] == 0
        else:  # FerretDB v1: "Index option expireAfterSeconds is not implemented yet"
            assert store.expires_runs_itself is False and indexes.RUN_TTL_INDEX not in runs

    def test_indexes_are_created_idempotently(self, store, store_opener):
        store.ensure_indexes()
        store_opener().close()
        assert len(list(store.messages.list_indexes())) == 4  # _id, seq, window, terms

    def test_the_unique_index_refuses_a_second_message_at_one_seq(self, store):
        [written] = store.append(AGENT, "s", [user("a")])
        with pytest.raises(DuplicateKeyError):
            store.messages.insert_one({"agent": AGENT, "session_id": "s", "seq": written.seq, "status": "active"})

    def test_window_is_one_bounded_sorted_query(self, store):
        store.append(AGENT, "s", [user(str(i)) for i in range(50)])
        plan = store.window_query(AGENT, "s", 20).explain()
        if _is_ferretdb(store):
            # FerretDB's SQLite backend plans no index use (no filter, sort or limit pushdown);
            # what can be checked is that the server got the one query with its sort and limit.
            command = plan["command"]
            assert command["limit"] == 20 and dict(command["sort"]) == {"seq": -1}
            assert command["filter"] == {"agent": AGENT, "session_id": "s", "status": "active"}
        else:
            winning = str(plan["queryPlanner"]["winningPlan"])
            assert "IXSCAN" in winning and indexes.WINDOW_INDEX in winning and "'SORT'" not in winning, winning

    # --- folds --------------------------------------------------------------------------

    def test_fold_of_a_session_without_messages_does_nothing(self, store):
        assert store.fold(AGENT, "none", summary_message(), first_seq=2, last_seq=4, expected_count=2, delete=True) is None
        assert store.history(AGENT, "none", include_inactive=True) == []

    def test_a_fold_that_no_longer_holds_leaves_no_summary(self, store):
        written = store.append(AGENT, "s", [user(str(i)) for i in range(4)])
        args = dict(first_seq=written[0].seq, last_seq=written[2].seq, expected_count=2, delete=False)  # 3 are active
        assert store.fold(AGENT, "s", summary_message(), **args) is None
        assert len(store.history(AGENT, "s", include_inactive=True)) == 4

    @pytest.mark.parametrize("delete", [False, True], ids=["keep", "delete"])
    def test_concurrent_overlapping_folds_leave_one_summary(self, store, store_opener, delete):
        other = store_opener()
        results = {}

        def fold(name, target, session, written, last, count):
            results[name] = target.fold(
                AGENT, session, summary_message(name), first_seq=written[0].seq, last_seq=written[last].seq,
                expected_count=count, delete=delete,
            )

        try:
            for round_ in range(8):
                session = f"race-{round_}"
                written = store.append(AGENT, session, [user(str(i)) for i in range(8)])
                _in_threads(
                    functools.partial(fold, "short", store, session, written, 3, 4),
                    functools.partial(fold, "long", other, session, written, 5, 6),
                )
                active = store.history(AGENT, session)
                [summary] = [m for m in active if m.is_summary]
                assert results["short"] is not None or results["long"] is not None
                folded = 4 if summary.content.endswith("short") else 6
                assert contents(active)[1:] == [str(i) for i in range(folded, 8)], (round_, contents(active))
                if not delete:  # every original is still stored
                    stored = store.history(AGENT, session, include_inactive=True)
                    assert [m.content for m in stored if not m.is_summary] == [str(i) for i in range(8)]
        finally:
            other.close()

    # --- runs ---------------------------------------------------------------------------

    def test_concurrent_saves_of_one_version_let_one_through(self, store, store_opener):
        others = [store_opener() for _ in range(4)]
        outcomes = []

        def save(target, record, expected):
            try:
                outcomes.append(target.save_run(record, expected_version=expected))
            except RunConflictError:
                outcomes.append(None)

        try:
            _in_threads(*[functools.partial(save, other, _run(step=i), None) for i, other in enumerate(others)])
            [saved] = [o for o in outcomes if o is not None]
            for _ in range(5):
                outcomes.clear()
                racers = [functools.partial(save, other, saved.evolve(step=i), saved.version) for i, other in enumerate(others)]
                _in_threads(*racers)
                [winner] = [o for o in outcomes if o is not None]
                assert winner.version == saved.version + 1 and store.load_run(AGENT, "r") == winner
                saved = winner
            assert store.runs.count_documents({"run_id": "r"}) == 1
        finally:
            for other in others:
                other.close()

    def test_a_stale_or_made_up_version_is_refused(self, store):
        first = store.save_run(_run(), None)
        second = store.save_run(first.evolve(step=1), expected_version=1)
        store.save_run(second.evolve(step=2), expected_version=2)
        for expected in (None, 1, 2, 7):  # versions 1 and 2 are deleted by now: inserting them again must not win
            with pytest.raises(RunConflictError):
                store.save_run(first.evolve(step=9), expected_version=expected)
        assert store.load_run(AGENT, "r").step == 2 and store.runs.count_documents({"run_id": "r"}) == 1

    @pytest.mark.parametrize("listed", ["list_runs", "runs_page"])
    def test_a_listing_reads_the_newest_version_only(self, store, listed):
        saved = store.save_run(_run(status="running"), None)
        newer = saved.evolve(status="awaiting_approval", version=2)
        store.runs.insert_one(documents.run_document(newer))  # a save whose clean-up has not run
        read = getattr(store, listed)
        assert read(AGENT, status="running") == []
        assert read(AGENT) == [newer] == read(AGENT, status="awaiting_approval")

    def test_a_page_of_runs_reads_the_collection_a_bounded_step_at_a_time(self, store, monkeypatch):
        runs = self._paged_runs(store)  # four records to a run: three of other kinds
        monkeypatch.setattr(mongo_store, "RUNS_PAGE_SCAN", 5)
        limits = []
        real_find = store.runs.find
        monkeypatch.setattr(store, "runs", type("Runs", (), {"find": lambda _, *a, **kw: _Limits(real_find(*a, **kw), limits)})())
        assert [r.run_id for r in store.runs_page(AGENT, None, 6)] == [r.run_id for r in runs[:6]]
        assert len(limits) > 1 and set(limits) == {5}  # 6 runs lie among 21 documents: several bounded steps
        self.assert_every_filter_pages_alike(store, runs, sizes=(1, 4))

    def test_expired_runs_are_gone_on_every_server(self, store):
        past = utcnow() - timedelta(seconds=5)
        store.save_run(_run("old", expires_at=past), None)
        assert store.load_run(AGENT, "old") is None and store.list_runs(AGENT) == []
        with pytest.raises(RunConflictError):
            store.save_run(_run("old", step=1, expires_at=past), expected_version=1)
        fresh = store.save_run(_run("old"), None)
        assert store.load_run(AGENT, "old") == fresh
        store.save_run(_run("gone", expires_at=past), None)
        pruned = store.prune_runs(AGENT, utcnow() - timedelta(days=1))
        assert pruned == 1 or (store.expires_runs_itself and pruned == 0)
        assert store.runs.count_documents({"run_id": "gone"}) == 0
        assert [r.run_id for r in store.list_runs(AGENT)] == ["old"]

    def test_run_times_are_bson_datetimes_in_utc(self, store):
        finished = utcnow()
        store.save_run(_run(status=COMPLETED, finished_at=finished), None)
        raw = store.runs.find_one({"run_id": "r"})
        assert abs(raw["finished_at"] - finished) < timedelta(milliseconds=1) and raw["finished_at"].utcoffset() == timedelta(0)

    # --- clients and names --------------------------------------------------------------

    def test_an_injected_client_is_not_closed(self, client, db_name):
        store = MongoStore(client, db_name)
        store.close()
        assert client.admin.command("ping")["ok"] == 1
        client.drop_database(db_name)

    def test_names_default_from_the_environment(self, client, monkeypatch):
        monkeypatch.setenv("MONGODB_DB_NAME", "from_env")
        monkeypatch.setenv("MONGODB_COLLECTION", "chat")
        store = MongoStore(client, ensure_indexes=False)
        assert (store.db.name, store.messages.name, store.runs.name) == ("from_env", "chat", "chat_runs")


def _append_many(store, name, count):
    for i in range(count):
        store.append(AGENT, "s", [user(f"{name}-{i}")])


# --- without a server ---------------------------------------------------------------


@pytest.fixture
def dead_store():
    client = pymongo.MongoClient(DEAD_URI, serverSelectionTimeoutMS=500, connectTimeoutMS=500)
    try:
        yield MongoStore(client, "omnisync_dead", ensure_indexes=False)
    finally:
        client.close()


def test_reads_against_an_unreachable_server_raise(dead_store):
    reads = [
        lambda: dead_store.history(AGENT, "s"),
        lambda: dead_store.window(AGENT, "s", max_messages=5),
        lambda: dead_store.window(AGENT, "s", max_tokens=50),
        lambda: dead_store.sessions(),
        lambda: dead_store.load_run(AGENT, "r"),
        lambda: dead_store.list_runs(AGENT),
    ]
    for read in reads:
        with pytest.raises(StoreError, match="MongoDB store omnisync_dead.messages"):
            read()


def test_writes_against_an_unreachable_server_raise(dead_store):
    with pytest.raises(StoreError, match="appending"):
        dead_store.append(AGENT, "s", [user("x")])
    with pytest.raises(StoreError, match="folding"):
        dead_store.fold(AGENT, "s", summary_message(), first_seq=2, last_seq=2, expected_count=1, delete=False)
    with pytest.raises(StoreError, match="saving run"):
        dead_store.save_run(_run(), None)


def test_from_url_checks_the_server_when_built():
    with pytest.raises(StoreError, match="creating indexes"):
        MongoStore.from_url(DEAD_URI, serverSelectionTimeoutMS=500, connectTimeoutMS=500)


def test_a_bad_url_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="MONGODB_URI"):
        MongoStore.from_url("http://127.0.0.1:27017/")


def test_bad_names_are_configuration_errors():
    with pymongo.MongoClient(DEAD_URI, serverSelectionTimeoutMS=500) as client:
        for db_name, collection in (("bad.name", None), ("ok", "$bad"), ("", "x")):
            with pytest.raises(ConfigurationError):
                MongoStore(client, db_name, collection, ensure_indexes=False)


def test_a_runs_events_take_its_expiry_when_the_next_is_appended(store):
    saved = store.save_run(RunRecord(run_id="r1", agent=AGENT, session_id="s", created_at=utcnow()), None)
    store.append_events(AGENT, "r1", [("text_delta", {"text": "a"})])
    expiring = store.save_run(saved.evolve(expires_at=utcnow() + timedelta(days=1)), expected_version=1)
    store.append_events(AGENT, "r1", [("run_finished", {})])  # the server appends the end after the finishing save
    expiries = [doc["expires_at"] for doc in store.events.find({"agent": AGENT, "run_id": "r1"})]
    assert len(expiries) == 2 and all(e is not None and abs(e - expiring.expires_at) < timedelta(milliseconds=2) for e in expiries)
    store.save_run(expiring.evolve(expires_at=None), expected_version=2)  # resumed: kept again
    store.append_events(AGENT, "r1", [("text_delta", {"text": "b"})])
    assert [doc["expires_at"] for doc in store.events.find({"agent": AGENT, "run_id": "r1"})] == [None, None, None]
