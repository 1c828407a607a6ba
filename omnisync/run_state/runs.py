"""Every change of a run record's state: create, claim and lease, renew, pause, decide, grant,
finish, fail, close, and the cancel requests a running run's driver observes.

Each change is one compare-and-set save on the record's ``version``, so two writers never
both win: the loser gets :class:`~omnisync.errors.RunConflictError`. A running record's
``lease_owner`` is the token of the driver executing it (:mod:`.drivers`), so a second driver,
in this process or another, cannot claim it while its lease lasts. None of them needs a model.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from ..errors import ConfigurationError, DecisionFinalError, RunConflictError, RunNotFoundError, RunStateError
from ..messages import Message, utcnow
from ..run_record import AWAITING_APPROVAL, AWAITING_BUDGET, CANCEL, CANCELLED, COMPLETED, FAILED, PAUSED_STATUSES, RUN, RUNNING, RunRecord
from ..stores.base import MemoryStore
from ..telemetry import current_traceparent, link_to
from .drivers import new_token
from .leases import Lease, holds_session
from . import saves

CANCEL_REQUEST_KEPT_DAYS = 1


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
    token: str,
    budget: dict[str, Any],
    loaded_seq: tuple[int, int] | None,
    lease_seconds: int,
    message: Any = None,
    run_id: str | None = None,
    response_format: dict[str, Any] | None = None,
    extra_body: dict[str, Any] | None = None,
) -> RunRecord:
    """A new running record, leased to the driver ``token``, not saved yet.

    ``message`` (the user's) is kept in the record until the run first writes to the session,
    so a run whose process died before that can still be resumed.
    """
    now = utcnow()
    return RunRecord(
        run_id=run_id or new_run_id(),
        agent=agent,
        session_id=session_id,
        status=RUNNING,
        budget=dict(budget),
        loaded_seq=loaded_seq,
        response_format=response_format,
        extra_body=extra_body,
        trace_parent=current_traceparent(),
        message=message,
        lease_owner=token,
        lease_until=now + timedelta(seconds=lease_seconds),
        created_at=now,
        updated_at=now,
    )


def create(store: MemoryStore, record: RunRecord) -> RunRecord:
    """Save a new record (its session already taken)."""
    return saves.save(store, record, None)


def create_in_free_session(store: MemoryStore, lease: Lease, lease_version: int | None, record: RunRecord) -> RunRecord:
    """Take a free session and save the run's new record in one write (both or neither)."""
    return saves.save_together(store, [(lease.to_record(), lease_version), (record, None)])[1]


def claim(
    store: MemoryStore,
    agent: str,
    run_id: str,
    *,
    token: str,
    lease_seconds: int,
    needs_approval: Callable[[dict[str, Any]], bool],
) -> RunRecord:
    """Take a paused run, or one whose lease ran out, for the driver ``token`` to resume it.

    Raises RunStateError for a finished run or an undecided approval, RunConflictError when
    another driver (in this process or another) holds the lease or claims it first.
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
    if record.status == RUNNING and record.lease_until and record.lease_until > now:
        raise RunConflictError(
            f"run {run_id} is being executed by another driver (its lease runs until {record.lease_until.isoformat()}); "
            "resume it after that if that driver died"
        )
    if record.status == AWAITING_APPROVAL:
        undecided = [c["id"] for c in record.pending_calls if needs_approval(c) and c["id"] not in record.decisions]
        if undecided:
            raise RunStateError(f"run {run_id} still waits for a decision on call(s) {', '.join(undecided)}: call resolve_approval first")
    link_to(record.trace_parent)  # the span resuming the run joins the trace of the one that paused it
    claimed = record.evolve(
        trace_parent=current_traceparent(),
        status=RUNNING,
        budget_request=None,
        error=None,
        finished_at=None,
        expires_at=None,
        lease_owner=token,
        lease_until=now + timedelta(seconds=lease_seconds),
        updated_at=now,
    )
    return saves.save(store, claimed, record.version)  # the loser of a race gets RunConflictError


def take_over(store: MemoryStore, record: RunRecord, lease_seconds: int, *, token: str) -> RunRecord:
    """Lease a paused run, or an abandoned one (running, its lease ran out), to the driver ``token`` to close it.

    The save raises the record's version, so whoever held it before can no longer write for it
    (every write of a run follows a save on the version it knows), and a resume racing with the
    close loses. Raises RunStateError for a finished run, RunConflictError for a live one.
    """
    if record.is_finished:
        raise RunStateError(f"run {record.run_id} is already {record.status}")
    now = utcnow()
    if record.status == RUNNING and record.lease_until and record.lease_until > now:
        raise RunConflictError(f"run {record.run_id} is running (its lease runs until {record.lease_until.isoformat()}); close it after that")
    taken = record.evolve(lease_owner=token, lease_until=now + timedelta(seconds=lease_seconds), updated_at=now)
    return saves.save(store, taken, record.version)


def save_progress(store: MemoryStore, record: RunRecord, lease_seconds: int) -> RunRecord:
    """Save a running record's progress (step, usage, pending calls) and renew its lease."""
    now = utcnow()
    renewed = record.evolve(updated_at=now, lease_until=now + timedelta(seconds=lease_seconds))
    return saves.save(store, renewed, record.version)


def pause(store: MemoryStore, record: RunRecord, status: str, **changes: Any) -> RunRecord:
    """Stop a running record to wait for an approval or a budget; the lease is given up."""
    if status not in PAUSED_STATUSES:
        raise ValueError(f"not a paused status: {status}")
    paused = record.evolve(status=status, lease_owner=None, lease_until=None, updated_at=utcnow(), **changes)
    return saves.save(store, paused, record.version)


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
    return saves.save(store, ended(record, status, retention_days=retention_days, response=response, error=error), record.version)


def finish_with_messages(
    store: MemoryStore,
    record: RunRecord,
    messages: Sequence[Message],
    status: str,
    *,
    retention_days: int | None,
    response: str | None,
    error: str | None = None,
) -> tuple[list[Message], RunRecord]:
    """Write the run's last messages and end it, in one go where the store can (both or neither)."""
    end = ended(record, status, retention_days=retention_days, response=response, error=error)
    return saves.append_and_save(store, record.agent, record.session_id, messages, end, record.version)


def ended(record: RunRecord, status: str, *, retention_days: int | None, response: str | None = None, error: str | None = None) -> RunRecord:
    """The record of a run ended as completed, failed or cancelled, not saved yet (see :func:`finish`)."""
    now = utcnow()
    return record.evolve(
        status=status,
        response=response,
        error=error,
        pending_calls=[],
        message=None,
        lease_owner=None,
        lease_until=None,
        updated_at=now,
        finished_at=now,
        expires_at=now + timedelta(days=retention_days) if retention_days is not None else None,
    )


def fail(store: MemoryStore, record: RunRecord, error: str, *, retention_days: int | None) -> RunRecord:
    return finish(store, record, FAILED, retention_days=retention_days, error=error)


def restore(store: MemoryStore, record: RunRecord, version: int) -> RunRecord:
    """Write a record moved from another store (an import or a copy), brought to the ``version``
    it had there, so a save its owner makes on that version still fits."""
    saved = saves.save(store, record, None)
    while saved.version < version:
        saved = saves.save(store, record, saved.version)
    return saved


# --- cancelling a run wherever it is driven ---------------------------------------------


def cancel_request_id(run_id: str) -> str:
    return f"cancel-{run_id}"


def request_cancel(store: MemoryStore, agent: str, run_id: str, reason: str | None) -> None:
    """Ask the driver of a running run, in whatever process, to stop it: a request stored beside
    the run, which the driver reads while it waits (:mod:`.keeper`) and at each step. A second
    request changes nothing."""
    now = utcnow()
    request = Lease(
        CANCEL,
        agent,
        load(store, agent, run_id).session_id,
        cancel_request_id(run_id),
        holder=run_id,
        status=COMPLETED,
        error=f"cancelled: {reason}" if reason else "cancelled",
        created_at=now,
        updated_at=now,
        finished_at=now,  # pruned with the runs, a day after at the latest
        expires_at=now + timedelta(days=CANCEL_REQUEST_KEPT_DAYS),
    )
    try:
        saves.save(store, request.to_record(), None)
    except RunConflictError:
        pass  # already asked


def cancel_requested(store: MemoryStore, agent: str, run_id: str) -> str | None:
    """The error a cancelled run ends with, if its cancel was requested; else None."""
    request = store.load_run(agent, cancel_request_id(run_id))
    return request.error if request is not None and request.kind == CANCEL else None


def fence_session(store: MemoryStore, agent: str, session_id: str | None, *, token: str, retention_days: int | None) -> list[str]:
    """Before a session (or every session of the agent, ``session_id=None``) is cleared: end each
    unfinished run in it cancelled, so what such a run would write later never lands in the
    cleared session (its driver's next save fails on the changed version, and every write of a
    run follows a save). Returns the ids of the runs ended."""
    ended_ids: list[str] = []
    for status in (RUNNING, AWAITING_APPROVAL, AWAITING_BUDGET):
        for record in list(store.iter_runs(agent, status=status, session_id=session_id)):
            taken = record.evolve(lease_owner=token)
            try:
                finish(store, taken, CANCELLED, retention_days=retention_days, error="cancelled: its session was cleared while it ran")
            except RunConflictError:
                continue  # it ended (or moved on) meanwhile: its next save shows whether it still may write
            ended_ids.append(record.run_id)
    return ended_ids


def clear(store: MemoryStore, agent: str, session_id: str | None, *, retention_days: int | None) -> int:
    """Clear a session (or, with None, every session of the agent), fenced: the runs still going
    or paused in it end cancelled first (:func:`fence_session`). Returns how many messages went."""
    fence_session(store, agent, session_id, token=new_token(), retention_days=retention_days)
    return store.clear(agent, session_id)


# --- decisions and budgets --------------------------------------------------------------


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
    return saves.save(store, record.evolve(decisions=decisions, updated_at=utcnow()), record.version)


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
    return saves.save(store, record.evolve(budget=budget, updated_at=utcnow()), record.version)


def add_model_call(store: MemoryStore, agent: str, run_id: str, call: dict[str, Any], attempts: int = 5) -> RunRecord:
    """Append a model call made for a run after the fact (a summary its end led to) to the run's ``model_calls``.

    The run's own ``usage`` (what its budget counts) is left as it is. Retried on a concurrent
    change of the record; RunNotFoundError when the record is gone (pruned).
    """
    for attempt in range(attempts):
        record = load(store, agent, run_id)
        try:
            return saves.save(store, record.evolve(model_calls=[*record.model_calls, call]), record.version)
        except RunConflictError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
