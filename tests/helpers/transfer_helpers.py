"""A store worth moving, and what a faithful copy of it must keep: shared by the transfer and CLI tests.

:func:`fill` writes a session folded twice with ``retention_policy="keep"`` (a tool exchange
among the folded messages), a session folded with ``"delete"`` (so its seqs have a gap), a
second agent with the same session id, and run records, one of them awaiting approval, one
with the events a server stored while it ran.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from omnisync.messages import SUMMARY_PREFIX, Message, utcnow
from omnisync.run_record import AWAITING_APPROVAL, COMPLETED, FOLD, IDEMPOTENCY, SESSION, RunRecord
from omnisync.stores.base import MemoryStore
from helpers.store_contract import reply, tool_exchange, user

AGENT = "assistant"
PENDING = [
    {"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "atlas"}'}},
    {"id": "call_b", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "/tmp/x"}'}},
]


DONE_EVENTS = [
    ("run_started", {"run_id": "run-done", "session_id": "s2", "resumed": False}),
    ("text_delta", {"run_id": "run-done", "text": "done"}),
    ("run_finished", {"run_id": "run-done", "result": {"response": "done", "status": "completed"}}),
]


def summary(text: str, first: int, last: int, folded: int) -> Message:
    content = f"{SUMMARY_PREFIX} {text}"
    metadata = {"summary": {"first_seq": first, "last_seq": last, "folded": folded, "model": "test"}}
    return Message(role="user", content=content, metadata=metadata, tokens=12)


def fill(store: MemoryStore) -> None:
    # assistant/s1: seqs 2..16; [2, 8] folded into 9, then [9, 12] into 13, both kept inactive.
    tool = tool_exchange("call_t")
    tool = [replace(tool[0], run_id="run-old"), replace(tool[1], run_id="run-old", name="lookup")]
    store.append(AGENT, "s1", [user("My project is called Atlas."), reply("Noted."), *tool])
    store.append(AGENT, "s1", [user("It ships on Friday."), reply("Got it."), user("The team is Ada and Linus."), reply("Noted, Ada and Linus.")])
    assert store.fold(AGENT, "s1", summary("Atlas; a lookup.", 2, 8, 4), first_seq=2, last_seq=8, expected_count=4, delete=False)
    assert store.fold(AGENT, "s1", summary("Atlas ships Friday.", 9, 12, 3), first_seq=9, last_seq=12, expected_count=3, delete=False)
    # assistant/s2: [2, 6] folded into 7 and deleted; 8 and 10 stay.
    store.append(AGENT, "s2", [user("one"), reply("two"), user("three"), reply("four"), user("five")])
    assert store.fold(AGENT, "s2", summary("one to three", 2, 6, 3), first_seq=2, last_seq=6, expected_count=3, delete=True)
    # helper/s1: the same session id, another agent.
    store.append("helper", "s1", [user("helper question"), reply("helper answer")])

    now = utcnow()
    waiting = RunRecord(
        run_id="run-wait", agent=AGENT, session_id="s1", status="running", loaded_seq=(13, 16), first_written_seq=14,
        usage={"prompt_tokens": 40, "completion_tokens": 8}, created_at=now, updated_at=now,
    )
    waiting = store.save_run(waiting, expected_version=None)
    store.save_run(waiting.evolve(status=AWAITING_APPROVAL, step=1, pending_calls=PENDING), expected_version=waiting.version)
    done = RunRecord(
        run_id="run-done", agent=AGENT, session_id="s2", status=COMPLETED, response="done", loaded_seq=(7, 8),
        first_written_seq=10, created_at=now + timedelta(seconds=1), updated_at=now, finished_at=now,
    )
    store.save_run(done, expected_version=None)
    store.append_events(AGENT, "run-done", DONE_EVENTS)
    store.save_run(RunRecord(run_id="run-h", agent="helper", session_id="s1", status=COMPLETED, created_at=now), expected_version=None)
    # Beside the runs, the records of other kinds an agent keeps: they travel too.
    for record in kept_beside_runs(now):
        store.save_run(record, expected_version=None)


def kept_beside_runs(now):
    """A session's lease (held by run-wait), a finished summary claim and an idempotency key's record."""
    return [
        RunRecord(run_id="session-s1", agent=AGENT, session_id="s1", kind=SESSION, lease_owner="run-wait", created_at=now, updated_at=now),
        RunRecord(run_id="fold-s2", agent=AGENT, session_id="s2", kind=FOLD, status=COMPLETED, loaded_seq=(2, 6), created_at=now, finished_at=now),
        RunRecord(run_id="idempotency-s2", agent=AGENT, session_id="s2", kind=IDEMPOTENCY, status=COMPLETED, lease_owner="run-done", created_at=now),
    ]


def snapshot(store: MemoryStore) -> dict:
    """Every session's messages (all fields but seq, time and a summary's seq range) and every run."""
    sessions = {}
    for info in store.sessions():
        rows = []
        for m in store.history(info.agent, info.session_id, include_inactive=True):
            metadata = {k: v for k, v in m.metadata.items() if k != "summary"}
            if m.is_summary:
                metadata["summary"] = {k: v for k, v in m.metadata["summary"].items() if k not in ("first_seq", "last_seq")}
            rows.append((m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.status, m.is_summary, metadata, m.tokens, m.run_id))
        sessions[(info.agent, info.session_id)] = rows
    runs = {}
    for agent in (AGENT, "helper"):
        for r in store.list_runs(agent):
            runs[(agent, r.run_id)] = {k: v for k, v in r.to_record().items() if k not in ("first_written_seq", "loaded_seq")}
            runs[(agent, r.run_id)]["stored events"] = [(e.id, e.name, e.data) for e in store.read_events(agent, r.run_id)]
    return {"sessions": sessions, "runs": runs}


def seqs(store: MemoryStore, agent: str, session_id: str) -> list[tuple[int, str, bool]]:
    return [(m.seq, m.status, m.is_summary) for m in store.history(agent, session_id, include_inactive=True)]
