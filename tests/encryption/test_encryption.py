"""Encryption at rest on every backend: nothing in clear in the raw store, a value moved elsewhere
refused, a wrong key raising and deleting nothing, plaintext refused outside migration mode."""

from __future__ import annotations

import base64
import io
import os
import uuid

import pytest

from helpers.agent_helpers import echo, make_agent
from helpers.backend_routers import BACKENDS, open_router
from helpers.encryption_raw import copy_row, raw_count, raw_text
from helpers.fake_http import install
from omnisync import DecryptionError, Encryption, MemoryRouter
from omnisync.errors import ConfigurationError, StoreError
from omnisync.messages import Message, utcnow
from omnisync.run_record import RunRecord
from omnisync.transfer import export_jsonl

pytest.importorskip("cryptography")

MARKER = "MARKER-c0ffee-4242"


def keys(current: str = "2026-12", **more: bytes) -> Encryption:
    return Encryption(keys={current: os.urandom(32), **more}, current=current)


@pytest.fixture(params=BACKENDS)
def raw(request, tmp_path, monkeypatch):
    """A router without encryption: its store is what the raw-driver helpers read."""
    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS", raising=False)
    yield from open_router(request.param, tmp_path, monkeypatch)


@pytest.fixture
def agent_name():
    return f"enc-{uuid.uuid4().hex[:10]}"


def wrapped(raw: MemoryRouter, encryption: Encryption) -> MemoryRouter:
    return MemoryRouter(store=raw.store, encryption=encryption)


def test_a_marker_written_through_the_agent_is_nowhere_in_the_raw_store(raw, agent_name, monkeypatch):
    install(monkeypatch, echo)
    router = wrapped(raw, keys())
    with make_agent(agent_name, router=router) as agent:
        result = agent.run(f"my password is {MARKER}", session_id="s1")
        assert MARKER in result["response"]
    store = router.store
    store.append_events(agent_name, result["run_id"], [("message", {"text": f"streamed {MARKER}"})])
    history = store.history(agent_name, "s1")
    summary = Message("system", f"summary: {MARKER}", metadata={"summary": {"note": MARKER}})
    assert store.fold(agent_name, "s1", summary, first_seq=history[0].seq, last_seq=history[0].seq, expected_count=1, delete=False)
    store.append(agent_name, "s1", [Message("user", [{"type": "text", "text": MARKER}], metadata={"about": MARKER})])
    record = store.load_run(agent_name, result["run_id"])
    decided = {"call_1": {"approved": False, "reason": f"not with {MARKER}"}, "call_2": {"approved": True, "reason": None}}
    store.save_run(record.evolve(decisions=decided), record.version)  # a person's reason for an approval decision

    held = raw_text(raw.store)
    assert MARKER not in held and agent_name in held  # the rows are there, their values sealed
    exported = io.StringIO()
    export_jsonl(raw.store, exported, agent=agent_name)  # what `omnisync export` writes without --decrypt
    assert MARKER not in exported.getvalue() and '"kind":"data_key"' in exported.getvalue()
    assert [m.content for m in store.history(agent_name, "s1")] == [f"summary: {MARKER}", f"echo: my password is {MARKER}", [{"type": "text", "text": MARKER}]]
    assert store.history(agent_name, "s1")[-1].metadata == {"about": MARKER}
    assert store.load_run(agent_name, result["run_id"]).response == f"echo: my password is {MARKER}"
    assert store.load_run(agent_name, result["run_id"]).decisions == decided
    assert store.read_events(agent_name, result["run_id"])[-1].data == {"text": f"streamed {MARKER}"}


def test_a_row_copied_to_another_seq_session_or_agent_does_not_decrypt(raw, agent_name):
    store = wrapped(raw, keys()).store
    other_agent = agent_name + "-other"
    store.append(agent_name, "s1", [Message("user", f"hello {MARKER}"), Message("assistant", "hi")])
    store.append(agent_name, "s2", [Message("user", "second session")])
    store.append(other_agent, "s1", [Message("user", "other agent")])
    for to_agent, to_session in [(agent_name, "s1"), (agent_name, "s2"), (other_agent, "s1")]:
        copy_row(raw.store, agent_name, "s1", 2, to_agent, to_session, 1000)
        before = raw_count(raw.store, to_agent, to_session)
        with pytest.raises(DecryptionError, match="moved from another") as raised:
            store.history(to_agent, to_session)
        assert isinstance(raised.value, StoreError)
        with pytest.raises(DecryptionError):
            store.window(to_agent, to_session, max_messages=10)
        assert raw_count(raw.store, to_agent, to_session) == before  # refused, never dropped
    assert [m.content for m in store.history_page(agent_name, "s2", None, 1)] == ["second session"]  # what was not moved opens


def test_a_wrong_or_missing_key_raises_naming_the_key_and_deletes_nothing(raw, agent_name, monkeypatch):
    install(monkeypatch, echo)
    right = keys("2026-12")
    with make_agent(agent_name, router=wrapped(raw, right)) as agent:
        agent.run(f"remember {MARKER}", session_id="s1")
    held = raw_count(raw.store, agent_name, "s1")

    wrong_bytes = Encryption(keys={"2026-12": os.urandom(32)}, current="2026-12")
    missing = keys("2027-01")
    for encryption, says in [(wrong_bytes, "does not decrypt"), (missing, "wrapped by master key '2026-12'")]:
        router = wrapped(raw, encryption)
        with pytest.raises(DecryptionError, match=says):
            router.store.history(agent_name, "s1")
        with pytest.raises(DecryptionError, match=says):
            router.store.window(agent_name, "s1", max_tokens=10_000)
        with pytest.raises(DecryptionError, match=says):
            router.store.clear(agent_name, "s1")
        with pytest.raises(DecryptionError, match=says):
            router.store.clear(agent_name)
        with make_agent(agent_name, router=router) as agent, pytest.raises(DecryptionError, match=says):
            agent.run("again", session_id="s1")
        assert raw_count(raw.store, agent_name, "s1") == held
    assert [m.content for m in wrapped(raw, right).store.history(agent_name, "s1")][-2:] == [f"remember {MARKER}", f"echo: remember {MARKER}"]


def test_plaintext_is_refused_unless_the_router_is_in_migration_mode(raw, agent_name):
    raw.store.append(agent_name, "s1", [Message("user", "written in clear", metadata={"k": 1})])
    encryption = keys()
    with pytest.raises(DecryptionError, match="stored in clear.*omnisync encrypt"):
        wrapped(raw, encryption).store.history(agent_name, "s1")
    migrating = Encryption(encryption.keys, encryption.current, accept_plaintext=True)
    assert [m.content for m in wrapped(raw, migrating).store.history(agent_name, "s1")] == ["written in clear"]


def test_keys_come_from_the_environment(monkeypatch):
    one, two = os.urandom(32), os.urandom(32)
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", f"old:{base64.b64encode(one).decode()}, new:{base64.b64encode(two).decode()}")
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEY_ID", "new")
    router = MemoryRouter("in_memory")
    assert router.encryption is not None and router.encryption.keys == {"old": one, "new": two} and router.encryption.current == "new"
    assert "Encryption(key_ids=['new', 'old'], current='new')" == repr(router.encryption)  # never the keys
    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEY_ID")
    with pytest.raises(ConfigurationError, match="set OMNISYNC_ENCRYPTION_KEY_ID"):
        MemoryRouter("in_memory")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"k": b"short"}, "must be 32 bytes, not 5 bytes"),
        ({"bad id!": os.urandom(32)}, "letters, digits"),
        ({}, "needs keys"),
    ],
)
def test_bad_keys_are_refused_saying_what_to_do(given, says):
    with pytest.raises(ConfigurationError, match=says):
        Encryption(given, current=next(iter(given), "k"))


def test_a_current_key_not_given_is_refused():
    with pytest.raises(ConfigurationError, match="'b' is not one of the keys given"):
        Encryption({"a": os.urandom(32)}, current="b")


def test_keys_text_that_is_not_kid_base64_is_refused(monkeypatch):
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", "no-colon-here")
    with pytest.raises(ConfigurationError, match="kid:base64 pairs"):
        MemoryRouter("in_memory")
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", "k:not base64!")
    with pytest.raises(ConfigurationError, match="is not base64"):
        MemoryRouter("in_memory")


# --- rotation, retiring, encrypting in place ------------------------------------------------


def test_rotation_rewraps_every_data_key_leaving_content_untouched(raw, agent_name):
    from omnisync.encryption_admin.rotation import key_ids_in_use, rotate

    old, new = os.urandom(32), os.urandom(32)
    store = wrapped(raw, Encryption({"old": old}, "old")).store
    for n in range(3):
        store.append(agent_name, f"s{n}", [Message("user", f"{MARKER} {n}")])
    sealed = [raw.store.history(agent_name, f"s{n}")[0].content for n in range(3)]  # as stored
    both = Encryption({"old": old, "new": new}, "old")
    done = rotate(wrapped(raw, both).store, both, "new")
    keys_held = 3 + raw.store.keeps_search_index  # and the agent's search key, on a store with an index (stores/encrypted_search.py)
    assert (done.rewrapped, done.already) == (keys_held, 0) and key_ids_in_use(raw.store)[("new")] == keys_held and "old" not in key_ids_in_use(raw.store)
    assert rotate(wrapped(raw, both).store, both, "new").already == keys_held  # run again: nothing left to do
    only_new = wrapped(raw, Encryption({"new": new}, "new")).store
    assert [only_new.history(agent_name, f"s{n}")[0].content for n in range(3)] == [f"{MARKER} {n}" for n in range(3)]
    assert [raw.store.history(agent_name, f"s{n}")[0].content for n in range(3)] == sealed  # the values were not rewritten


def test_a_rotation_scoped_to_agents_leaves_the_others_wrapped_as_they_were(raw, agent_name):
    from omnisync.encryption_admin.rotation import key_ids_in_use, rotate

    old, new = os.urandom(32), os.urandom(32)
    store = wrapped(raw, Encryption({"old": old}, "old")).store
    other = f"{agent_name}-other"
    for agent in (agent_name, other):
        store.append(agent, "s", [Message("user", MARKER)])
    both = Encryption({"old": old, "new": new}, "old")
    done = rotate(wrapped(raw, both).store, both, "new", agents=[agent_name])
    held = 1 + raw.store.keeps_search_index  # the session's data key, and the agent's search key on a store with an index
    assert (done.rewrapped, done.already) == (held, 0)
    assert key_ids_in_use(raw.store, [agent_name]) == {"new": held} and key_ids_in_use(raw.store, [other]) == {"old": held}
    with pytest.raises(ConfigurationError, match="a list of agent names"):
        rotate(wrapped(raw, both).store, both, "new", agents=agent_name)


def test_a_store_written_in_clear_is_encrypted_in_place_then_refuses_plaintext(raw, agent_name, monkeypatch):
    from omnisync.encryption_admin.migration import encrypt_in_place

    install(monkeypatch, echo)
    with make_agent(agent_name, router=raw) as agent:
        for n in range(3):
            agent.run(f"clear {MARKER} {n}", session_id=f"s{n % 2}")
    run_id = next(r.run_id for r in raw.store.list_runs(agent_name) if r.kind == "run")
    raw.store.append_events(agent_name, run_id, [("message", {"text": f"clear {MARKER}"}), ("done", {})])  # events in clear too
    assert MARKER in raw_text(raw.store)
    encryption = keys()
    migrating = wrapped(raw, Encryption(encryption.keys, encryption.current, accept_plaintext=True)).store
    done = encrypt_in_place(migrating, page_size=2)
    assert (done.sessions, done.messages_sealed, done.records_sealed, done.events_sealed) == (2, 6, 3, 2)
    assert [e.data for e in wrapped(raw, encryption).store.read_events(agent_name, run_id)] == [{"text": f"clear {MARKER}"}, {}]
    assert encrypt_in_place(migrating, page_size=2).messages_already == 6  # resumable: what is sealed is left alone
    held = raw_text(raw.store)
    assert MARKER not in held
    strict = wrapped(raw, encryption).store
    assert [m.content for m in strict.history(agent_name, "s1")] == [f"clear {MARKER} 1", f"echo: clear {MARKER} 1"]
    assert [MARKER in r.response for r in strict.list_runs(agent_name) if r.kind == "run"] == [True] * 3
    raw.store.message_seal = None
    raw.store.append(agent_name, "s1", [Message("user", "written in clear afterwards")])
    with pytest.raises(DecryptionError, match="stored in clear"):
        wrapped(raw, encryption).store.history(agent_name, "s1")


def test_the_command_line_encrypts_rotates_retires_and_doctor_names_the_keys(tmp_path, monkeypatch, capsys):
    from omnisync.cli.main import main as cli_main

    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS", raising=False)
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with MemoryRouter("sql", url=url) as router:
        router.store.append("agent", "s1", [Message("user", f"hello {MARKER}")])
    old, new = base64.b64encode(os.urandom(32)).decode(), base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", f"old:{old}")
    assert cli_main(["--url", url, "history", "s1", "--agent", "agent"]) == 1
    assert "stored in clear" in capsys.readouterr().err
    assert cli_main(["--url", url, "encrypt"]) == 0
    assert "1 messages sealed" in capsys.readouterr().out
    assert cli_main(["--url", url, "history", "s1", "--agent", "agent"]) == 0 and MARKER in capsys.readouterr().out

    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", f"old:{old},new:{new}")
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEY_ID", "new")
    assert cli_main(["--url", url, "keys", "retire", "old"]) == 1
    assert "2 data keys are still wrapped by 'old'" in capsys.readouterr().err  # the session's and the agent's search key
    assert cli_main(["--url", url, "keys", "rotate", "--to", "new"]) == 0
    assert "2 re-wrapped" in capsys.readouterr().out
    assert cli_main(["--url", url, "keys", "retire", "old"]) == 0
    assert cli_main(["--url", url, "keys", "list"]) == 0 and "new\t2 sessions" in capsys.readouterr().out
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", f"new:{new}")
    assert cli_main(["--url", url, "history", "s1", "--agent", "agent"]) == 0 and MARKER in capsys.readouterr().out
    cli_main(["--url", url, "doctor"])
    assert "key ids in use: new (2 sessions)" in capsys.readouterr().out


# --- export, import, copy ------------------------------------------------------------------


def test_export_is_ciphertext_unless_decrypted_and_import_rebinds_it_to_new_seqs(tmp_path, monkeypatch, capsys):
    from omnisync.cli.main import main as cli_main

    install(monkeypatch, echo)
    key = base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", f"k1:{key}")
    source, target = f"sqlite:///{tmp_path / 'source.db'}", f"sqlite:///{tmp_path / 'target.db'}"
    with MemoryRouter("sql", url=source) as router, make_agent("agent", router=router) as agent:
        agent.run(f"hello {MARKER}", session_id="s1")
        router.store.append_events("agent", agent.list_runs()[0]["run_id"], [("message", {"text": MARKER})])
    with MemoryRouter("sql", url=target) as router:
        router.store.append("agent", "s1", [Message("user", "already here")])  # the import's seqs move up by 2
    exported, clear = tmp_path / "out.jsonl", tmp_path / "clear.jsonl"
    assert cli_main(["--url", source, "export", "-o", str(exported)]) == 0
    assert cli_main(["--url", source, "export", "--decrypt", "-o", str(clear)]) == 0
    assert MARKER not in exported.read_text() and "osx1." in exported.read_text()
    assert MARKER in clear.read_text() and "osx1." not in clear.read_text()

    assert cli_main(["--url", target, "import", "--append", str(exported)]) == 0
    with MemoryRouter("sql", url=target) as router:
        history = router.store.history("agent", "s1")
        assert [m.content for m in history] == ["already here", f"hello {MARKER}", f"echo: hello {MARKER}"] and history[1].seq == 4
        run = [r for r in router.store.list_runs("agent") if r.kind == "run"][0]
        assert run.response == f"echo: hello {MARKER}" and router.store.read_events("agent", run.run_id)[0].data == {"text": MARKER}
        assert MARKER not in raw_text(router.store.inner)

    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS")
    capsys.readouterr()
    assert cli_main(["--url", f"sqlite:///{tmp_path / 'plain.db'}", "import", str(exported)]) == 1
    assert "holds encrypted values, and the destination has no encryption keys" in capsys.readouterr().err


def test_copy_from_a_clear_store_encrypts_on_the_way_in(tmp_path, monkeypatch):
    from omnisync.cli.main import main as cli_main

    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS", raising=False)
    source, target = f"sqlite:///{tmp_path / 'source.db'}", f"sqlite:///{tmp_path / 'target.db'}"
    with MemoryRouter("sql", url=source) as router:
        router.store.append("agent", "s1", [Message("user", f"clear {MARKER}")])
    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    assert cli_main(["copy", "--from", source, "--to", target]) == 0
    with MemoryRouter("sql", url=target) as router:
        assert [m.content for m in router.store.history("agent", "s1")] == [f"clear {MARKER}"]
        assert MARKER not in raw_text(router.store.inner)


def test_a_stored_event_is_bound_to_its_id_and_one_moved_to_another_fails(raw, agent_name):
    from omnisync.stores.base import StoredEvent

    store = wrapped(raw, keys()).store
    store.append(agent_name, "s1", [Message("user", "hi")])
    run_id = "run_moved_events"
    assert store.append_events(agent_name, run_id, [("message", {"text": f"first {MARKER}"}), ("message", {"text": "second"})]) == 2
    first, second = raw.store.read_events(agent_name, run_id)  # as stored
    assert MARKER not in repr(first.data) and list(first.data) == ["osxe"]
    raw.store.replace_events(agent_name, run_id, [StoredEvent(2, second.name, first.data)])  # the first's sealed data moved to id 2
    with pytest.raises(DecryptionError, match="event 2 .* does not decrypt"):
        store.read_events(agent_name, run_id)
    assert store.read_events(agent_name, run_id, limit=1)[0].data == {"text": f"first {MARKER}"}  # the one in place still opens
    assert len(raw.store.read_events(agent_name, run_id)) == 2  # nothing was deleted


def test_events_sealed_before_they_were_bound_to_their_ids_are_read_and_sealed_again_by_encrypt(raw, agent_name):
    from omnisync.encryption import sealing
    from omnisync.encryption_admin.migration import encrypt_in_place

    encryption = keys()
    store = wrapped(raw, encryption).store
    store.append(agent_name, "s1", [Message("user", "hi")])
    run_id = "run_old_events"
    store.save_run(RunRecord(run_id=run_id, agent=agent_name, session_id="s1", created_at=utcnow()), None)
    data_key = store.data_keys.for_writing(agent_name, "s1")
    raw.store.event_seal = None  # written as events were sealed first: bound to agent, run and name only
    legacy = {sealing.SEALED: sealing._seal(data_key, {"text": MARKER}, agent_name, f"run:{run_id}", "event", "message")}
    raw.store.append_events(agent_name, run_id, [("message", legacy), ("message", legacy)])
    assert [e.data for e in wrapped(raw, encryption).store.read_events(agent_name, run_id)] == [{"text": MARKER}] * 2  # still read
    migrating = wrapped(raw, Encryption(encryption.keys, encryption.current, accept_plaintext=True)).store
    assert encrypt_in_place(migrating).events_sealed == 2
    assert [list(e.data) for e in raw.store.read_events(agent_name, run_id)] == [["osxe"], ["osxe"]]  # bound to their ids now
    assert [e.data for e in wrapped(raw, encryption).store.read_events(agent_name, run_id)] == [{"text": MARKER}] * 2
    assert encrypt_in_place(migrating).events_sealed == 0  # resumable: what is bound is left alone


def test_the_library_exports_an_encrypted_store_sealed_unless_asked_to_decrypt(tmp_path):
    from omnisync.transfer import export_sqlite

    with MemoryRouter("in_memory", encryption=keys()) as router, MemoryRouter("in_memory") as plain:
        router.store.append("agent", "s1", [Message("user", f"hello {MARKER}")])
        sealed, clear = io.StringIO(), io.StringIO()
        export_jsonl(router.store, sealed)
        export_jsonl(router.store, clear, decrypt=True)
        assert MARKER not in sealed.getvalue() and "osx1." in sealed.getvalue() and '"data_key"' in sealed.getvalue()
        assert MARKER in clear.getvalue() and "osx1." not in clear.getvalue()
        export_sqlite(router.store, tmp_path / "sealed.db")
        assert MARKER.encode() not in (tmp_path / "sealed.db").read_bytes()
        with pytest.raises(ConfigurationError, match="decrypt needs the keys"):
            export_jsonl(plain.store, io.StringIO(), decrypt=True)


def test_a_copy_with_keys_on_one_side_only_is_refused_and_writes_nothing(raw, agent_name):
    from omnisync.errors import TransferError
    from omnisync.transfer import copy_store

    encryption = keys()
    sealed = wrapped(raw, encryption).store
    sealed.append(agent_name, "s1", [Message("user", f"hello {MARKER}")])
    with MemoryRouter("in_memory") as plain, MemoryRouter("in_memory", encryption=keys()) as keyed:
        with pytest.raises(TransferError, match="opened with encryption keys and the destination without.*Nothing was written.*export --decrypt"):
            copy_store(sealed, plain.store)
        for target in (keyed.store, plain.store):  # the source opened without its keys
            with pytest.raises(TransferError, match=f"holds encrypted values \\(agent {agent_name!r}\\) and is opened without encryption keys.*Nothing was written"):
                copy_store(raw.store, target)
        assert plain.store.sessions() == [] and keyed.store.sessions() == []
        assert copy_store(sealed, keyed.store).sessions == 1  # keys on both sides: opened, sealed again by the destination
        assert [m.content for m in keyed.store.history(agent_name, "s1")] == [f"hello {MARKER}"]
    assert [m.content for m in sealed.history(agent_name, "s1")] == [f"hello {MARKER}"]  # the source lost nothing


def test_the_command_line_refuses_a_copy_of_an_encrypted_store_without_keys(tmp_path, monkeypatch, capsys):
    from omnisync.cli.main import main as cli_main

    monkeypatch.setenv("OMNISYNC_ENCRYPTION_KEYS", f"k1:{base64.b64encode(os.urandom(32)).decode()}")
    source, target = f"sqlite:///{tmp_path / 'source.db'}", f"sqlite:///{tmp_path / 'target.db'}"
    with MemoryRouter("sql", url=source) as router:
        router.store.append("agent", "s1", [Message("user", f"hello {MARKER}")])
    monkeypatch.delenv("OMNISYNC_ENCRYPTION_KEYS")
    capsys.readouterr()
    assert cli_main(["copy", "--from", source, "--to", target]) == 1
    assert "is opened without encryption keys" in capsys.readouterr().err
    with MemoryRouter("sql", url=target) as router:
        assert router.store.sessions() == []


def test_without_encryption_configured_cryptography_is_never_imported():
    import subprocess
    import sys

    code = (
        "import sys, omnisync; from omnisync import MemoryRouter, OmniCoreAgent; from omnisync.messages import Message\n"
        "r = MemoryRouter('in_memory'); r.store.append('a', 's', [Message('user', 'hi')]); r.store.history('a', 's')\n"
        "print(sorted(m for m in sys.modules if m.startswith('cryptography')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMNISYNC_ENCRYPTION_KEYS"}
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout.strip() == "[]"


def test_encryption_without_cryptography_installed_says_what_to_install(monkeypatch):
    import sys

    from omnisync.encryption import envelope
    from omnisync.errors import MissingDependencyError

    envelope._cipher.cache_clear()
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers.aead", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'omnisync\[encryption\]'"):
        MemoryRouter("in_memory", encryption=keys()).store
    envelope._cipher.cache_clear()



def test_fork_undo_and_search_work_sealed_and_no_word_reaches_an_index(raw, agent_name, monkeypatch):
    install(monkeypatch, echo)
    router = wrapped(raw, keys())
    with make_agent(agent_name, router=router) as agent:
        agent.run(f"the vault code is {MARKER}", session_id="s1")
        agent.run("and the door is blue", session_id="s1")
        forked = agent.fork_session("s1")
        assert [m["content"] for m in agent.get_session_history(forked)] == [m["content"] for m in agent.get_session_history("s1")]
        undone = agent.undo(forked)
        assert [m["content"] for m in undone] == ["and the door is blue", "echo: and the door is blue"]
        hits = agent.search_history("vault code")
        assert {(h["session_id"], h["role"]) for h in hits} == {("s1", "user"), ("s1", "assistant"), (forked, "user"), (forked, "assistant")}
        assert all("vault code" in h["snippet"] for h in hits)
        assert agent.search_history("door", session_id=forked) == []  # undone: inactive, not found
    assert "vault" not in raw_text(raw.store) and MARKER not in raw_text(raw.store)  # the index keeps no word of a sealed message
    assert raw.store.search_messages(agent_name, ["vault"]) == []  # the backend's own index: nothing to find
