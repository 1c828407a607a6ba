"""Every change of a run record's state, in one place: create, claim and lease, pause, decide,
grant, finish, cancel, fail, and the claims summaries take on a range of messages.

The agent's run loop, the command line and a server call these; nothing else writes a run
record. Each change is one compare-and-set save on the record's ``version``, so two writers
never both win: the loser gets :class:`~omnisync.errors.RunConflictError`. None of them needs
a model.
"""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from .errors import ConfigurationError, DecisionFinalError, RunConflictError, RunNotFoundError, RunStateError, SessionBusyError
from .messages import utcnow
from .run_record import (
    AWAITING_APPROVAL,
    AWAITING_BUDGET,
    CANCELLED,
    COMPLETED,
    FAILED,
    FOLD,
    PAUSED_STATUSES,
    RUN,
    RUNNING,
    SESSION,
    RunRecord,
)
from .stores.base import MemoryStore

OWNER = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"  # this process, as a lease holder
FOLD_CLAIM_SECONDS = 300
FOLD_CLAIM_KEPT_DAYS = 1


def new_run_id() -> str:
    return f"run_{uuid.uuid4().hex}"


# --- reading ---------------------------------------------------------------------------


def load(store: MemoryStore, agent: str, run_id: str) -> RunRecord:
    """The agent's run record, or RunNotFoundError naming the agent."""
    record = store.load_run(agent, run_id)
    if record is None or record.kind != RUN:
        raise RunNotFoundError(f"no run {run_id!r} for agent {agent!r} in this store")
    return record


def list_runs(store: MemoryStore, agent: str, status: str | None = None, session_id: str | None = None) -> list[RunRecord]:
    """The agent's run records, oldest first (leases and summary claims left out), read a page at a time."""
    return list(store.iter_runs(agent, status=status, session_id=session_id))


def prune(store: MemoryStore, agent: str, retention_days: int | None) -> int:
    """Delete the agent's records that finished more than ``retention_days`` ago; return how many."""
    if retention_days is None:
        return 0
    return store.prune_runs(agent, utcnow() - timedelta(days=retention_days))


# --- a run's life ----------------------------------------------------------------------


def new_record(
    agent: str,
    session_id: str,
    *,
    budget: dict[str, Any],
    loaded_seq: tuple[int, int] | None,
    lease_seconds: int,
    run_id: str | None = None,
    response_format: dict[str, Any] | None = None,
) -> RunRecord:
    """A new running record, leased to this process, not saved yet."""
    now = utcnow()
    return RunRecord(
        run_id=run_id or new_run_id(),
        agent=agent,
        session_id=session_id,
        status=RUNNING,
        budget=dict(budget),
        loaded_seq=loaded_seq,
        response_format=response_format,
        lease_owner=OWNER,
        lease_until=now + timedelta(seconds=lease_seconds),
        created_at=now,
        updated_at=now,
    )


def claim(
    store: MemoryStore,
    agent: str,
    run_id: str,
    *,
    lease_seconds: int,
    needs_approval: Callable[[dict[str, Any]], bool],
) -> RunRecord:
    """Take a paused run, or one whose lease ran out, to resume it here.

    Raises RunStateError for a finished run or an undecided approval, RunConflictError when
    another process holds the lease or claims it first.
    """
    record = load(store, agent, run_id)
    now = utcnow()
    if record.status == FAILED and not holds_session(store, record):
        raise RunStateError(
            f"run {run_id} failed and its session has moved on since (another run started in it), so it cannot be resumed; "
            "run its message again"
        )
    if record.is_finished and record.status != FAILED:
        raise RunStateError(f"run {run_id} is {record.status}; only a paused, failed or abandoned run can be resumed")
    if record.status == RUNNING and record.lease_until and record.lease_until > now and record.lease_owner != OWNER:
        raise RunConflictError(
            f"run {run_id} is being executed by another process (its lease runs until {record.lease_until.isoformat()}); "
            "resume it after that if that process died"
        )
    if record.status == AWAITING_APPROVAL:
        undecided = [c["id"] for c in record.pending_calls if needs_approval(c) and c["id"] not in record.decisions]
        if undecided:
            raise RunStateError(f"run {run_id} still waits for a decision on call(s) {', '.join(undecided)}: call resolve_approval first")
    claimed = record.evolve(
        status=RUNNING,
        budget_request=None,
        error=None,
        finished_at=None,
        expires_at=None,
        lease_owner=OWNER,
        lease_until=now + timedelta(seconds=lease_seconds),
        updated_at=now,
    )
    return store.save_run(claimed, expected_version=record.version)  # the loser of a race gets RunConflictError


def take_over(store: MemoryStore, record: RunRecord, lease_seconds: int) -> RunRecord:
    """Lease a paused run, or an abandoned one (running, its lease ran out), to this process to close it.

    The save raises the record's version, so whoever held it before can no longer write for it
    (every write of a run follows a save on the version it knows), and a resume racing with the
    close loses. Raises RunStateError for a finished run, RunConflictError for a live one.
    """
    if record.is_finished:
        raise RunStateError(f"run {record.run_id} is already {record.status}")
    now = utcnow()
    if record.status == RUNNING and record.lease_until and record.lease_until > now:
        raise RunConflictError(
            f"run {record.run_id} is running (its lease runs until {record.lease_until.isoformat()}); close it after that"
        )
    taken = record.evolve(lease_owner=OWNER, lease_until=now + timedelta(seconds=lease_seconds), updated_at=now)
    return store.save_run(taken, expected_version=record.version)


def save_progress(store: MemoryStore, record: RunRecord, lease_seconds: int) -> RunRecord:
    """Save a running record's progress (step, usage, pending calls) and renew its lease."""
    now = utcnow()
    renewed = record.evolve(updated_at=now, lease_until=now + timedelta(seconds=lease_seconds))
    return store.save_run(renewed, expected_version=record.version)


def pause(store: MemoryStore, record: RunRecord, status: str, **changes: Any) -> RunRecord:
    """Stop a running record to wait for an approval or a budget; the lease is given up."""
    if status not in PAUSED_STATUSES:
        raise ValueError(f"not a paused status: {status}")
    paused = record.evolve(status=status, lease_owner=None, lease_until=None, updated_at=utcnow(), **changes)
    return store.save_run(paused, expected_version=record.version)


def finish(
    store: MemoryStore,
    record: RunRecord,
    status: str,
    *,
    retention_days: int | None,
    response: str | None = None,
    error: str | None = None,
) -> RunRecord:
    """End a run as completed, failed or cancelled; it expires ``retention_days`` later."""
    return store.save_run(ended(record, status, retention_days=retention_days, response=response, error=error), expected_version=record.version)


def ended(record: RunRecord, status: str, *, retention_days: int | None, response: str | None = None, error: str | None = None) -> RunRecord:
    """The record of a run ended as completed, failed or cancelled, not saved yet (see :func:`finish`)."""
    now = utcnow()
    return record.evolve(
        status=status,
        response=response,
        error=error,
        pending_calls=[],
        lease_owner=None,
        lease_until=None,
        updated_at=now,
        finished_at=now,
        expires_at=now + timedelta(days=retention_days) if retention_days is not None else None,
    )


def fail(store: MemoryStore, record: RunRecord, error: str, *, retention_days: int | None) -> RunRecord:
    return finish(store, record, FAILED, retention_days=retention_days, error=error)


def cancel(store: MemoryStore, agent: str, run_id: str, *, retention_days: int | None, reason: str | None = None) -> RunRecord:
    """End a paused run, or one whose process died (its lease ran out), as cancelled."""
    record = load(store, agent, run_id)
    if record.is_finished:
        raise RunStateError(f"run {run_id} is already {record.status}")
    if record.status == RUNNING and record.lease_until and record.lease_until > utcnow():
        raise RunConflictError(f"run {run_id} is running (its lease runs until {record.lease_until.isoformat()}); cancel it after that")
    return finish(store, record, CANCELLED, retention_days=retention_days, error=f"cancelled: {reason}" if reason else "cancelled")


def decide(store: MemoryStore, agent: str, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> RunRecord:
    """Record the decision on one pending tool call.

    A decision is final: the same decision again changes nothing, the opposite one raises
    DecisionFinalError. A wrong state or call id raises RunStateError.
    """
    record = load(store, agent, run_id)
    earlier = record.decisions.get(call_id)
    if earlier is not None:
        if bool(earlier.get("approved")) == approved:
            return record
        verdict = "approved" if earlier.get("approved") else "denied"
        raise DecisionFinalError(
            f"call {call_id!r} of run {run_id} was already {verdict}, and a decision is final; "
            "to change course, let the run resume and ask again in a new run"
        )
    if record.status != AWAITING_APPROVAL:
        raise RunStateError(f"run {run_id} is {record.status}, not awaiting_approval")
    if call_id not in {c["id"] for c in record.pending_calls}:
        pending = ", ".join(c["id"] for c in record.pending_calls)
        raise RunStateError(f"run {run_id} has no pending call {call_id!r}; pending: {pending}")
    decisions = {**record.decisions, call_id: {"approved": approved, "reason": reason}}
    return store.save_run(record.evolve(decisions=decisions, updated_at=utcnow()), expected_version=record.version)


def grant(
    store: MemoryStore, agent: str, run_id: str, *, extra_tool_calls: int = 0, extra_tokens: int = 0, extra_steps: int = 0
) -> RunRecord:
    """Raise the limits of a run that awaits budget by these amounts (a limit it never had stays unset)."""
    extras = {"max_tool_calls": extra_tool_calls, "max_tokens": extra_tokens, "max_steps": extra_steps}
    for value in extras.values():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigurationError(f"grant_budget amounts must be whole numbers of at least 0, not {value!r}")
    if not any(extras.values()):
        raise ConfigurationError("grant_budget needs at least one of extra_tool_calls, extra_tokens, extra_steps")
    record = load(store, agent, run_id)
    if record.status != AWAITING_BUDGET:
        raise RunStateError(f"run {run_id} is {record.status}, not awaiting_budget")
    budget = dict(record.budget)
    for key, extra in extras.items():
        limit = budget.get(key)
        if extra and limit is not None:
            budget[key] = limit + extra
    return store.save_run(record.evolve(budget=budget, updated_at=utcnow()), expected_version=record.version)


def add_model_call(store: MemoryStore, agent: str, run_id: str, call: dict[str, Any], attempts: int = 5) -> RunRecord:
    """Append a model call made for a run after the fact (a summary its end led to) to the run's ``model_calls``.

    The run's own ``usage`` (what its budget counts) is left as it is. Retried on a concurrent
    change of the record; RunNotFoundError when the record is gone (pruned).
    """
    for attempt in range(attempts):
        record = load(store, agent, run_id)
        try:
            return store.save_run(record.evolve(model_calls=[*record.model_calls, call]), expected_version=record.version)
        except RunConflictError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


# --- session leases --------------------------------------------------------------------


def session_lease_id(session_id: str) -> str:
    return "session-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def session_holder(store: MemoryStore, agent: str, session_id: str) -> str | None:
    """The id of the run that last took the session, or None."""
    lease = store.load_run(agent, session_lease_id(session_id))
    return lease.lease_owner if lease is not None else None


def holds_session(store: MemoryStore, record: RunRecord) -> bool:
    return session_holder(store, record.agent, record.session_id) == record.run_id


def take_session(store: MemoryStore, agent: str, session_id: str, run_id: str, *, lease_seconds: int) -> RunRecord | None:
    """One attempt to make ``run_id`` the run that holds ``session_id``.

    A session is held by the last run that took it while that run is running with a live
    lease or paused; a run that finished frees it. Returns None once ``run_id`` holds it;
    the holder's record when that run was abandoned (running, its lease ran out), which the
    caller must close before trying again; raises SessionBusyError when a live or paused run
    holds it, RunConflictError when another run took it first. Taking it again is free.

    The lease record itself is leased for ``lease_seconds`` when taken, so a run that has
    taken it but not yet saved its own record still holds it.
    """
    lease, holder = store.load_lease(agent, session_lease_id(session_id))
    wanted, abandoned = judge_session(lease, holder, agent, session_id, run_id, lease_seconds=lease_seconds)
    if wanted is not None:
        store.save_run(wanted, expected_version=lease.version if lease is not None else None)
    return abandoned


def judge_session(
    lease: RunRecord | None, holder: RunRecord | None, agent: str, session_id: str, run_id: str, *, lease_seconds: int
) -> tuple[RunRecord | None, RunRecord | None]:
    """What :func:`take_session` decides from the session's lease and its holder, writing nothing.

    Returns the lease record to save over ``lease`` (None when ``run_id`` holds it already),
    and the holder's record when that run was abandoned (then nothing is to be saved yet);
    raises SessionBusyError when a live or paused run holds the session.
    """
    now = utcnow()
    if lease is not None and lease.lease_owner == run_id:
        return None, None
    if lease is not None and lease.lease_owner is not None:
        if holder is None:
            if lease.lease_until and lease.lease_until > now:
                raise SessionBusyError(
                    f"session {session_id!r} is held by run {lease.lease_owner}, which is starting", run_id=lease.lease_owner
                )
        elif holder.status in PAUSED_STATUSES:
            raise SessionBusyError(
                f"session {session_id!r} is held by run {holder.run_id}, which is {holder.status}: "
                f"resolve it and resume it (or cancel it) before the session runs again",
                run_id=holder.run_id,
                paused=True,
            )
        elif holder.status == RUNNING:
            if holder.lease_until and holder.lease_until > now:
                raise SessionBusyError(
                    f"session {session_id!r} is busy: run {holder.run_id} is running in it (its lease runs until "
                    f"{holder.lease_until.isoformat()})",
                    run_id=holder.run_id,
                )
            return None, holder
    wanted = RunRecord(
        run_id=session_lease_id(session_id),
        agent=agent,
        session_id=session_id,
        kind=SESSION,
        status=RUNNING,
        lease_owner=run_id,
        lease_until=now + timedelta(seconds=lease_seconds),
        created_at=lease.created_at if lease is not None else now,
        updated_at=now,
    )
    return wanted, None


def release_session(store: MemoryStore, agent: str, session_id: str, run_id: str) -> None:
    """Give the session up for a run that never started (its record was not created)."""
    lease = store.load_run(agent, session_lease_id(session_id))
    if lease is not None and lease.lease_owner == run_id:
        store.save_run(lease.evolve(lease_owner=None, lease_until=None, updated_at=utcnow()), expected_version=lease.version)


# --- summary claims --------------------------------------------------------------------


def claim_fold(store: MemoryStore, agent: str, session_id: str, first_seq: int, last_seq: int) -> RunRecord | None:
    """Claim the range ``first_seq..last_seq`` of a session for one summary, or None if another has it.

    The claim's id is derived from the range, so two processes folding the same range race
    on one record: one creates it, the other finds it. A claim whose holder failed, or whose
    lease ran out, may be taken again.
    """
    now = utcnow()
    key = hashlib.sha256(f"{session_id}\x00{first_seq}\x00{last_seq}".encode()).hexdigest()[:32]
    wanted = RunRecord(
        run_id=f"fold-{key}",
        agent=agent,
        session_id=session_id,
        kind=FOLD,
        status=RUNNING,
        loaded_seq=(first_seq, last_seq),
        lease_owner=OWNER,
        lease_until=now + timedelta(seconds=FOLD_CLAIM_SECONDS),
        created_at=now,
        updated_at=now,
    )
    try:
        return store.save_run(wanted, expected_version=None)
    except RunConflictError:
        pass
    existing = store.load_run(agent, wanted.run_id)
    if existing is None or existing.status == COMPLETED:
        return None
    if existing.status == RUNNING and existing.lease_until and existing.lease_until > now:
        return None  # another process is folding this range right now
    try:
        return store.save_run(wanted.evolve(created_at=existing.created_at), expected_version=existing.version)
    except RunConflictError:
        return None


def end_fold(store: MemoryStore, claim: RunRecord, error: str | None) -> RunRecord:
    """Mark a summary claim done (``error=None``) or failed; it is kept a day."""
    return finish(store, claim, COMPLETED if error is None else FAILED, retention_days=FOLD_CLAIM_KEPT_DAYS, error=error)
