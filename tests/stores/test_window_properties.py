"""Property tests: over random sessions of plain and tool messages, a window never splits a
tool exchange, never exceeds its bound, and keeps order."""

from hypothesis import given, settings
from hypothesis import strategies as st

from omnisync.messages import Message
from omnisync.stores.in_memory import InMemoryStore
from omnisync.stores.sql.store import SQLStore
from omnisync.stores.sql.sqlite import SQLiteStore

plain = st.builds(lambda role, tokens: [Message(role=role, content="x", tokens=tokens)], st.sampled_from(["user", "assistant"]), st.integers(1, 50))


@st.composite
def exchange(draw):
    results = draw(st.integers(1, 3))
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(results)]
    return [Message(role="assistant", content=None, tool_calls=calls, tokens=draw(st.integers(1, 50)))] + [
        Message(role="tool", content="r", tool_call_id=f"c{i}", tokens=draw(st.integers(1, 50))) for i in range(results)
    ]


sessions = st.lists(st.one_of(plain, exchange()), min_size=0, max_size=40)
STORES = [InMemoryStore(), SQLStore("sqlite://"), SQLiteStore("sqlite://")]


def check(window, stored, bound_messages=None, bound_tokens=None):
    seqs = [m.seq for m in window]
    assert seqs == sorted(seqs)
    if window:
        suffix = stored[-len(window):]
        assert [m.seq for m in suffix] == seqs  # the most recent messages, contiguous
        assert not window[0].is_tool_result  # never starts inside an exchange
    if bound_messages is not None:
        assert len(window) <= bound_messages
    if bound_tokens is not None:
        assert sum(m.tokens for m in window) <= bound_tokens


@settings(max_examples=60, deadline=None)
@given(sessions, st.integers(1, 30), st.integers(1, 400))
def test_windows_keep_their_promises(steps, max_messages, max_tokens):
    for index, store in enumerate(STORES):
        session = f"s{id(steps)}-{index}"
        for step in steps:
            store.append("agent", session, step)
        stored = store.history("agent", session)
        window = store.window("agent", session, max_messages=max_messages)
        check(window, stored, bound_messages=max_messages)
        expected = stored[-max_messages:] if stored else []
        while expected and expected[0].is_tool_result:
            expected = expected[1:]
        assert [m.seq for m in window] == [m.seq for m in expected]  # nothing left out that fits
        check(store.window("agent", session, max_tokens=max_tokens), stored, bound_tokens=max_tokens)
        both = store.window("agent", session, max_messages=max_messages, max_tokens=max_tokens)
        check(both, stored, bound_messages=max_messages, bound_tokens=max_tokens)
        store.clear("agent", session)
