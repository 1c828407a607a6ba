"""Run state changes in one place: decisions are final, fold claims have their own kind, grants, cancels."""

import pytest

from omnisync import MemoryRouter, ToolRegistry, run_state
from omnisync.errors import DecisionFinalError, RunConflictError, RunNotFoundError, RunStateError
from omnisync.run_record import FOLD, RUN
from helpers.agent_helpers import echo, make_agent
from helpers.fake_http import completion, install

CALL = {"id": "call_1", "type": "function", "function": {"name": "delete_file", "arguments": '{"path": "x"}'}}


def approval_agent(monkeypatch, name="ops#1"):
    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    install(monkeypatch, [completion(None, [CALL]), completion("done")])
    return make_agent(name, local_tools=tools)


def test_a_decision_is_final_the_same_one_again_changes_nothing(monkeypatch):
    agent = approval_agent(monkeypatch)
    paused = agent.run("delete x", session_id="s")
    store = agent.memory_router.store
    first = run_state.decide(store, agent.name, paused["run_id"], "call_1", approved=False, reason="no")
    again = run_state.decide(store, agent.name, paused["run_id"], "call_1", approved=False)
    assert again.version == first.version and again.decisions == {"call_1": {"approved": False, "reason": "no"}}
    with pytest.raises(DecisionFinalError, match="'call_1' of run .* was already denied, and a decision is final"):
        agent.resolve_approval(paused["run_id"], "call_1", approved=True)
    assert run_state.load(store, agent.name, paused["run_id"]).decisions["call_1"]["approved"] is False
    assert agent.resume(paused["run_id"])["response"] == "done"
    with pytest.raises(DecisionFinalError):  # still final once the run has moved on
        run_state.decide(store, agent.name, paused["run_id"], "call_1", approved=True)


def test_names_may_hold_a_hash_now_that_fold_claims_have_their_own_kind(monkeypatch):
    install(monkeypatch, echo)
    config = {"memory_config": {"value": 2, "summary": {"enabled": True}}}
    agent = make_agent("team#support", agent_config=config)
    for message in ("one", "two", "three"):
        agent.run(message, session_id="s")
    assert agent.get_session_history("s")[0]["content"].startswith("[CONVERSATION SUMMARY]")
    store = agent.memory_router.store
    kinds = sorted(r.kind for r in store.list_runs("team#support"))
    assert kinds.count(FOLD) >= 1 and kinds.count(RUN) == 3
    assert [r["kind"] for r in agent.list_runs()] == [RUN, RUN, RUN]  # claims are not runs
    claim = next(r for r in store.list_runs("team#support") if r.kind == FOLD)
    with pytest.raises(RunNotFoundError):
        agent.get_run(claim.run_id)


def test_a_fold_claim_is_taken_once_and_again_after_a_failure():
    with MemoryRouter("in_memory") as router:
        store = router.store
        claim = run_state.claim_fold(store, "a", "s", 0, 6)
        assert claim is not None and claim.kind == FOLD and claim.agent == "a"
        assert run_state.claim_fold(store, "a", "s", 0, 6) is None  # held
        run_state.end_fold(store, claim, "model down")
        retaken = run_state.claim_fold(store, "a", "s", 0, 6)
        assert retaken is not None
        run_state.end_fold(store, retaken, None)
        assert run_state.claim_fold(store, "a", "s", 0, 6) is None  # done


def test_grant_and_cancel(monkeypatch):
    agent = approval_agent(monkeypatch)
    store = agent.memory_router.store
    paused = agent.run("delete x", session_id="s")
    with pytest.raises(RunStateError, match="not awaiting_budget"):
        run_state.grant(store, agent.name, paused["run_id"], extra_steps=1)
    cancelled = agent.cancel_run(paused["run_id"], reason="changed my mind")
    assert (cancelled["status"], cancelled["error"]) == ("cancelled", "cancelled: changed my mind")
    assert run_state.load(store, agent.name, paused["run_id"]).expires_at
    with pytest.raises(RunStateError, match="already cancelled"):
        agent.cancel_run(paused["run_id"])
    with pytest.raises(RunStateError, match="cancelled; only a paused"):
        agent.resume(paused["run_id"])


def test_cancelling_a_running_run_with_no_driver_here_leaves_a_request_its_driver_reads(monkeypatch):
    agent = approval_agent(monkeypatch)
    agent._runner.cancel_wait_seconds = 0.2
    store = agent.memory_router.store
    token = run_state.new_token()
    record = run_state.create(store, run_state.new_record(agent.name, "s", token=token, budget={}, loaded_seq=None, lease_seconds=300))
    asked = agent.cancel_run(record.run_id, reason="enough")
    assert (asked["status"], asked["cancel_requested"]) == ("running", True)
    assert run_state.cancel_requested(store, agent.name, record.run_id) == "cancelled: enough"
    assert run_state.load(store, agent.name, record.run_id).lease_owner == token  # its driver still holds it
    assert [r.run_id for r in run_state.list_runs(store, agent.name)] == [record.run_id]  # a request is not a run


def test_only_run_state_saves_writes_run_records():
    """run_state's docstring says it is the only writer of run records, and that inside it
    ``saves.py`` alone hands a record to the store: no other module (but the stores, which save
    what they are given) calls a store's record writes, encryption's data key records and
    ``omnisync encrypt`` included."""
    import ast
    from pathlib import Path

    import omnisync

    package = Path(omnisync.__file__).parent
    writes = {"save_run", "save_runs", "append_and_save_run"}
    found = []
    for path in package.rglob("*.py"):
        relative = path.relative_to(package)
        if relative.parts[0] == "stores" or relative == Path("run_state/saves.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in writes:
                found.append(f"{relative}:{node.lineno} {node.func.attr}")
    assert found == []
    assert "save_run" in (package / "run_state" / "saves.py").read_text(encoding="utf-8")  # the one writer is there
