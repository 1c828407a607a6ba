"""Reading a run record and deciding on its pending tool calls, for the agent and the command line alike."""

from __future__ import annotations

from .errors import RunNotFoundError, RunStateError
from .messages import utcnow
from .run_record import AWAITING_APPROVAL, RunRecord
from .stores.base import MemoryStore


def load_run(store: MemoryStore, agent: str, run_id: str) -> RunRecord:
    """The run record, or RunNotFoundError naming the agent."""
    record = store.load_run(agent, run_id)
    if record is None:
        raise RunNotFoundError(f"no run {run_id!r} for agent {agent!r} in this store")
    return record


def record_decision(store: MemoryStore, agent: str, run_id: str, call_id: str, approved: bool, reason: str | None) -> RunRecord:
    """Record the decision on one pending call (compare-and-set); raises RunStateError for a wrong state or call."""
    record = load_run(store, agent, run_id)
    if record.status != AWAITING_APPROVAL:
        raise RunStateError(f"run {run_id} is {record.status}, not awaiting_approval")
    if call_id not in {c["id"] for c in record.pending_calls}:
        pending = ", ".join(c["id"] for c in record.pending_calls)
        raise RunStateError(f"run {run_id} has no pending call {call_id!r}; pending: {pending}")
    decisions = {**record.decisions, call_id: {"approved": approved, "reason": reason}}
    return store.save_run(record.evolve(decisions=decisions, updated_at=utcnow()), expected_version=record.version)
