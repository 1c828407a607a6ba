"""Search with encryption at rest on every backend: the index holds keyed hashes of words, never
the words; hits and their order are the clear store's; reindex, ``omnisync encrypt`` and a key
rotation keep it searchable (docs/history.md, "Search with encryption at rest")."""

from __future__ import annotations

import json
import os
import uuid

import pytest
import sqlalchemy as sa

from helpers.backend_routers import BACKENDS, open_router
from helpers.encryption_raw import raw_text
from omnisync import Encryption, MemoryRouter
from omnisync.encryption_admin.migration import encrypt_in_place
from omnisync.encryption_admin.rotation import rotate
from omnisync.stores.encrypted_search import SEARCH_KEY_SESSION
from omnisync.messages import Message
from omnisync.stores.base import MemoryStore
from helpers.cli_run import cli, environment

pytest.importorskip("cryptography")

CORPUS = {
    "trip": [
        "We fly to Lisbon{t} on Friday; pack the blue umbrella{t}.",
        "Lisbon{t} hotels near the river are cheaper in November. Lisbon{t}, Lisbon{t}!",
        "Remember: the umbrella{t} is in the car.",
    ],
    "work": [
        "The quarterly{t} report{t} is due on Friday.",
        "Café meeting at 9: bring the report{t}, s'il vous plaît!",
        "金曜日に会議があります",
    ],
}
QUERIES = ["lisbon{t}", "Friday umbrella{t}", "REPORT{t}", "report{t} friday", "会議", "café", "nowhere{t}"]
EXPECTED = {  # (session, seq) best first: BM25 on SQLite, MongoDB and the scan; ts_rank on PostgreSQL agrees here
    "lisbon{t}": [("trip", 4), ("trip", 2)],
    "Friday umbrella{t}": [("trip", 2)],
    "REPORT{t}": [("work", 2), ("work", 4)],
    "report{t} friday": [("work", 2)],
    "会議": [("work", 6)],
    "nowhere{t}": [],
}


def keys(**named: bytes) -> Encryption:
    named = named or {"2026-12": os.urandom(32)}
    return Encryption(keys=named, current=next(iter(named)))


@pytest.fixture(params=BACKENDS)
def raw(request, tmp_path, monkeypatch):
    """A router without encryption: its store is what the raw-driver helpers read."""
    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS", raising=False)
    yield from open_router(request.param, tmp_path, monkeypatch)


@pytest.fixture
def tag():
    """Letters and digits that make this test's words its own (other tests write on the same servers)."""
    return "q" + uuid.uuid4().hex[:8]


@pytest.fixture
def name():
    return f"srch-{uuid.uuid4().hex[:10]}"


def fill(store: MemoryStore, agent: str, tag: str) -> None:
    for session_id, texts in CORPUS.items():
        store.append(agent, session_id, [Message(role="user", content=text.format(t=tag)) for text in texts])
    store.append(agent + "-other", "trip", [Message(role="user", content=f"Lisbon{tag} Lisbon{tag} umbrella{tag} Friday report{tag}")])


def found(store: MemoryStore, agent: str, query: str, tag: str) -> list[tuple[str, int]]:
    from omnisync.history_edit import search

    return [(h["session_id"], h["seq"]) for h in search(store, agent, query.format(t=tag), None, 10, None, None)]


def clear_words(tag: str) -> list[str]:
    return [f"{word}{tag}" for word in ("lisbon", "umbrella", "quarterly", "report")]


def test_hits_and_their_order_are_the_clear_stores_and_no_word_is_stored(raw, name, tag):
    router = MemoryRouter(store=raw.store, encryption=keys())
    fill(router.store, name, tag)
    for query, expected in EXPECTED.items():
        assert found(router.store, name, query, tag) == expected, query
    hits = router.store.search_messages(name, [f"lisbon{tag}"])
    assert hits[0].message.content == CORPUS["trip"][1].format(t=tag)  # opened: the snippet is cut from the message
    held = raw_text(raw.store).casefold()
    assert name in held and not [word for word in clear_words(tag) if word in held]
    assert found(raw.store, name, "lisbon{t}", tag) == []  # the backend's index, asked in words: nothing

    clear_name = name + "-clear"
    raw.store.message_seal = raw.store.sealed_terms = None  # the wrapped store again writes as it is given
    fill(raw.store, clear_name, tag)  # the same corpus in clear, on the same backend
    for query in QUERIES:
        assert found(router.store, name, query, tag) == found(raw.store, clear_name, query, tag), query


def test_another_agents_sessions_are_never_returned_and_its_hashes_differ(raw, name, tag):
    router = MemoryRouter(store=raw.store, encryption=keys())
    fill(router.store, name, tag)
    assert found(router.store, name, "lisbon{t} umbrella{t} report{t}", tag) == []  # only the other agent holds all three
    assert found(router.store, name + "-other", "lisbon{t} umbrella{t} report{t}", tag) == [("trip", 2)]
    store = router.store
    mine, theirs = store.search_keys.hasher(name), store.search_keys.hasher(name + "-other")  # type: ignore[attr-defined]
    assert mine(f"lisbon{tag}") != theirs(f"lisbon{tag}") and len(mine("x")) == 16 and mine("x").isalpha()
    assert store.history(name, SEARCH_KEY_SESSION) == []  # the key's pseudo-session holds no messages
    assert SEARCH_KEY_SESSION not in {info.session_id for info in store.sessions(name)}


def _forget_terms(store: MemoryStore, agent: str) -> None:
    """The index of ``agent`` emptied with the backend's own driver (what a lost or stale index looks like)."""
    if store.kind == "sql":
        with store.engine.begin() as conn:  # type: ignore[attr-defined]
            conn.execute(sa.text("UPDATE omnisync_messages SET terms = NULL WHERE agent = :a"), {"a": agent})
    elif store.kind == "mongodb":
        store.messages.update_many({"agent": agent}, {"$set": {"terms": []}})  # type: ignore[attr-defined]


def test_reindex_writes_the_keyed_hashes_again(raw, name, tag):
    router = MemoryRouter(store=raw.store, encryption=keys())
    fill(router.store, name, tag)
    _forget_terms(raw.store, name)
    indexes = raw.store.keeps_search_index
    if indexes:
        assert found(router.store, name, "lisbon{t}", tag) == []
    assert router.store.reindex(name) == (6 if indexes else 0)
    assert found(router.store, name, "lisbon{t}", tag) == EXPECTED["lisbon{t}"]
    assert found(router.store, name, "会議", tag) == EXPECTED["会議"]
    held = raw_text(raw.store).casefold()
    assert not [word for word in clear_words(tag) if word in held]


def test_a_store_encrypted_in_place_is_searched_by_hashes(raw, name, tag):
    fill(raw.store, name, tag)
    encryption = keys()
    migrating = MemoryRouter(store=raw.store, encryption=Encryption(encryption.keys, encryption.current, accept_plaintext=True))
    encrypt_in_place(migrating.store)  # type: ignore[arg-type]
    held = raw_text(raw.store).casefold()
    assert name in held and not [word for word in clear_words(tag) if word in held]  # the index too: its words replaced by hashes
    router = MemoryRouter(store=raw.store, encryption=encryption)
    for query, expected in EXPECTED.items():
        assert found(router.store, name, query, tag) == expected, query


def test_a_key_rotation_rewraps_the_search_key(raw, name, tag):
    old, new = os.urandom(32), os.urandom(32)
    router = MemoryRouter(store=raw.store, encryption=Encryption({"old": old}, "old"))
    fill(router.store, name, tag)
    rotate(raw.store, Encryption({"old": old, "new": new}, "old"), "new")
    rotated = MemoryRouter(store=raw.store, encryption=Encryption({"new": new}, "new"))
    assert found(rotated.store, name, "lisbon{t}", tag) == EXPECTED["lisbon{t}"]


def test_cli_encrypt_then_search_and_reindex_with_the_keys(tmp_path, tag):
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    store = MemoryRouter("sql", url=url).store
    fill(store, "helper", tag)
    store.close()
    env = environment(DATABASE_URL=url, OMNISYNC_ENCRYPTION_KEYS="2026-12:" + __import__("base64").b64encode(os.urandom(32)).decode())
    assert cli("encrypt", "--url", url, env=env).returncode == 0
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        held = repr(conn.execute(sa.text("SELECT * FROM omnisync_messages")).all()).casefold()
        indexed = repr(conn.execute(sa.text("SELECT * FROM omnisync_messages_fts")).all()).casefold()
    assert not [w for w in clear_words(tag) if w in held or w in indexed] and "lisbon" not in indexed
    hits = json.loads(cli("search", f"lisbon{tag}", "--agent", "helper", "--json", env=env).stdout)
    assert [(h["session_id"], h["seq"]) for h in hits] == EXPECTED["lisbon{t}"]
    assert hits[0]["snippet"].startswith(f"Lisbon{tag} hotels")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE omnisync_messages SET terms = NULL"))
    engine.dispose()
    assert json.loads(cli("search", f"lisbon{tag}", "--agent", "helper", "--json", env=env).stdout) == []
    result = cli("reindex", env=env)
    assert result.returncode == 0 and "reindexed: 7 messages" in result.stdout, result
    hits = json.loads(cli("search", f"lisbon{tag}", "--agent", "helper", "--json", env=env).stdout)
    assert [(h["session_id"], h["seq"]) for h in hits] == EXPECTED["lisbon{t}"]


def test_a_summary_folded_sealed_is_found_and_its_originals_are_not(raw, name, tag):
    router = MemoryRouter(store=raw.store, encryption=keys())
    store = router.store
    store.append(name, "s", [Message(role="user", content=f"the ferry to tangier{tag} leaves at noon")])
    first = store.history(name, "s")[0]
    summary = Message("system", f"They asked about a ferry to Tangier{tag}.", metadata={"summary": {"first_seq": first.seq, "last_seq": first.seq}})
    assert store.fold(name, "s", summary, first_seq=first.seq, last_seq=first.seq, expected_count=1, delete=False)
    hits = found(store, name, f"tangier{tag}", tag)
    assert hits == [("s", first.seq + 1)]  # the summary (the folded original is inactive)
    assert f"tangier{tag}" not in raw_text(raw.store).casefold()
