"""Leases: claims on something other than a run, kept beside the runs in the same store.

- a **session lease** says which run holds a session (one run per session at a time);
- a **fold claim** says which driver summarizes a range of a session's messages;
- an **idempotency key** says which run a served request with that key started.

Each is a :class:`Lease`, stored as a record of its own kind (the store keeps every kind in
one place, so they expire and move with the runs). Every lease is created, saved and ended
here, with the store's compare-and-set on its version: of two writers, one wins.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from ..errors import ConfigurationError, RunConflictError, SessionBusyError
from ..messages import utcnow
from ..run_record import COMPLETED, FAILED, FOLD, IDEMPOTENCY, PAUSED_STATUSES, RUNNING, SESSION, RunRecord
from ..stores.base import MemoryStore
from .drivers import new_token
from . import saves

FOLD_CLAIM_SECONDS = 300
FOLD_CLAIM_KEPT_DAYS = 1


@dataclass(frozen=True)
class Lease:
    """One lease. ``holder``: the run holding a session, the driver token folding a range, or
    the run an idempotency key started; ``until``: when an unfinished holder loses it;
    ``fingerprint``: an idempotency key's request hash; ``span``: a fold claim's (first, last) seq."""

    kind: str
    agent: str
    session_id: str
    lease_id: str
    holder: str | None = None
    until: datetime | None = None
    status: str = RUNNING
    fingerprint: str | None = None
    span: tuple[int, int] | None = None
    error: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime | None = None
    version: int = 0

    def is_live(self, now: datetime) -> bool:
        return self.until is not None and self.until > now

    def evolve(self, **changes: Any) -> Lease:
        return replace(self, **changes)

    def to_record(self) -> RunRecord:
        """The stored form (a record of the lease's kind beside the runs)."""
        return RunRecord(
            run_id=self.lease_id,
            agent=self.agent,
            session_id=self.session_id,
            kind=self.kind,
            status=self.status,
            loaded_seq=self.span,
            response=self.fingerprint,
            error=self.error,
            lease_owner=self.holder,
            lease_until=self.until,
            created_at=self.created_at,
            updated_at=self.updated_at,
            finished_at=self.finished_at,
            expires_at=self.expires_at,
            version=self.version,
        )

    @classmethod
    def from_record(cls, record: RunRecord) -> Lease:
        return cls(
            kind=record.kind,
            agent=record.agent,
            session_id=record.session_id,
            lease_id=record.run_id,
            holder=record.lease_owner,
            until=record.lease_until,
            status=record.status,
            fingerprint=record.response,
            span=record.loaded_seq,
            error=record.error,
            created_at=record.created_at,
            updated_at=record.updated_at,
            finished_at=record.finished_at,
            expires_at=record.expires_at,
            version=record.version,
        )


def _new(kind: str, agent: str, session_id: str, lease_id: str, *, holder: str | None, seconds: int, **fields: Any) -> Lease:
    now = utcnow()
    return Lease(kind, agent, session_id, lease_id, holder=holder, until=now + timedelta(seconds=seconds), created_at=now, updated_at=now, **fields)


def _save(store: MemoryStore, lease: Lease, expected_version: int | None) -> Lease:
    return Lease.from_record(saves.save(store, lease.to_record(), expected_version))


def _load(store: MemoryStore, agent: str, lease_id: str) -> Lease | None:
    record = store.load_run(agent, lease_id)
    return Lease.from_record(record) if record is not None else None


def _ended(lease: Lease, status: str, kept_days: int | None, **changes: Any) -> Lease:
    now = utcnow()
    expires = now + timedelta(days=kept_days) if kept_days is not None else None
    return lease.evolve(status=status, until=None, updated_at=now, finished_at=now, expires_at=expires, **changes)


# --- session leases --------------------------------------------------------------------


def session_lease_id(session_id: str) -> str:
    return "session-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def session_holder(store: MemoryStore, agent: str, session_id: str) -> str | None:
    """The id of the run that last took the session, or None."""
    lease = _load(store, agent, session_lease_id(session_id))
    return lease.holder if lease is not None else None


def holds_session(store: MemoryStore, record: RunRecord) -> bool:
    return session_holder(store, record.agent, record.session_id) == record.run_id


def take_session(store: MemoryStore, agent: str, session_id: str, run_id: str, *, lease_seconds: int) -> RunRecord | None:
    """One attempt to make ``run_id`` the run that holds ``session_id``.

    A session is held by the last run that took it while that run is running with a live
    lease or paused; a run that finished frees it. Returns None once ``run_id`` holds it;
    the holder's record when that run was abandoned (running, its lease ran out), which the
    caller must close before trying again; raises SessionBusyError when a live or paused run
    holds it, RunConflictError when another run took it first. Taking it again is free.

    The lease itself is live for ``lease_seconds`` when taken, so a run that has taken it but
    not yet saved its own record still holds it.
    """
    stored, holder = store.load_lease(agent, session_lease_id(session_id))
    lease = Lease.from_record(stored) if stored is not None else None
    wanted, abandoned = judge_session(lease, holder, agent, session_id, run_id, lease_seconds=lease_seconds)
    if wanted is not None:
        _save(store, wanted, lease.version if lease is not None else None)
    return abandoned


def judge_session(
    lease: Lease | None, holder: RunRecord | None, agent: str, session_id: str, run_id: str, *, lease_seconds: int
) -> tuple[Lease | None, RunRecord | None]:
    """What :func:`take_session` decides from the session's lease and its holder, writing nothing.

    Returns the lease to save over ``lease`` (None when ``run_id`` holds it already), and the
    holder's record when that run was abandoned (then nothing is to be saved yet); raises
    SessionBusyError when a live or paused run holds the session.
    """
    now = utcnow()
    if lease is not None and lease.holder == run_id:
        return None, None
    if lease is not None and lease.holder is not None:
        if holder is None:
            if lease.is_live(now):
                raise SessionBusyError(f"session {session_id!r} is held by run {lease.holder}, which is starting", run_id=lease.holder)
        elif holder.status in PAUSED_STATUSES:
            raise SessionBusyError(
                f"session {session_id!r} is held by run {holder.run_id}, which is {holder.status}: "
                f"resolve it and resume it (or cancel it with cancel_run({holder.run_id!r})) before the session runs again",
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
    wanted = _new(SESSION, agent, session_id, session_lease_id(session_id), holder=run_id, seconds=lease_seconds)
    if lease is not None:
        wanted = wanted.evolve(created_at=lease.created_at)
    return wanted, None


def release_session(store: MemoryStore, agent: str, session_id: str, run_id: str) -> None:
    """Give the session up for a run that never started (its record was not created)."""
    lease = _load(store, agent, session_lease_id(session_id))
    if lease is not None and lease.holder == run_id:
        _save(store, lease.evolve(holder=None, until=None, updated_at=utcnow()), lease.version)


# --- summary claims --------------------------------------------------------------------


def claim_fold(store: MemoryStore, agent: str, session_id: str, first_seq: int, last_seq: int) -> Lease | None:
    """Claim the range ``first_seq..last_seq`` of a session for one summary, or None if another has it.

    The claim's id is derived from the range, so two drivers folding the same range race on
    one record: one creates it, the other finds it. A claim whose holder failed, or whose
    lease ran out, may be taken again.
    """
    key = hashlib.sha256(f"{session_id}\x00{first_seq}\x00{last_seq}".encode("utf-8", "surrogatepass")).hexdigest()[:32]
    wanted = _new(FOLD, agent, session_id, f"fold-{key}", holder=new_token(), seconds=FOLD_CLAIM_SECONDS, span=(first_seq, last_seq))
    try:
        return _save(store, wanted, None)
    except RunConflictError:
        pass
    existing = _load(store, agent, wanted.lease_id)
    if existing is None or existing.status == COMPLETED:
        return None
    if existing.status == RUNNING and existing.is_live(utcnow()):
        return None  # another driver is folding this range right now
    try:
        return _save(store, wanted.evolve(created_at=existing.created_at), existing.version)
    except RunConflictError:
        return None


def end_fold(store: MemoryStore, claim: Lease, error: str | None) -> Lease:
    """Mark a summary claim done (``error=None``) or failed; it is kept a day."""
    return _save(store, _ended(claim, COMPLETED if error is None else FAILED, FOLD_CLAIM_KEPT_DAYS, error=error), claim.version)


# --- idempotency keys ------------------------------------------------------------------


def idempotency_key_id(session_id: str, key: str) -> str:
    digest = hashlib.sha256(f"{session_id}\0{key}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{IDEMPOTENCY}-{digest[:40]}"


def reserve_key(store: MemoryStore, agent: str, session_id: str, key: str, fingerprint: str, start_seconds: int) -> str | None:
    """None when this request holds the key and starts the run; the run's id when an earlier request started it.

    Raises ConfigurationError when the key was used with another request, RunConflictError while
    another request is starting its run.
    """
    wanted = _new(IDEMPOTENCY, agent, session_id, idempotency_key_id(session_id, key), holder=None, seconds=start_seconds, fingerprint=fingerprint)
    try:
        _save(store, wanted, None)
        return None
    except RunConflictError:
        held = _load(store, agent, wanted.lease_id)
    if held is None:  # expired between the two calls
        raise RunConflictError("the Idempotency-Key's record changed while it was read; retry the request")
    if held.fingerprint != fingerprint:
        raise ConfigurationError("this Idempotency-Key was used for a different request in this session: use a new key for a new request")
    if held.holder is not None:
        return held.holder
    if held.status == RUNNING and held.is_live(utcnow()):
        raise RunConflictError("a request with this Idempotency-Key is starting its run now: retry in a moment")
    # the earlier request never started a run (it was refused, or its process died): this one tries
    retry = held.evolve(status=RUNNING, error=None, finished_at=None, expires_at=None, until=wanted.until, updated_at=wanted.updated_at)
    _save(store, retry, held.version)
    return None


def bind_key(store: MemoryStore, agent: str, session_id: str, key: str, run_id: str, retention_days: int | None) -> None:
    """The key's run has started: later requests with the key get ``run_id``."""
    _end_key(store, agent, idempotency_key_id(session_id, key), retention_days, COMPLETED, holder=run_id)


def release_key(store: MemoryStore, agent: str, session_id: str, key: str, error: str, retention_days: int | None) -> None:
    """The key's run did not start (a busy session...): a retry may try again."""
    _end_key(store, agent, idempotency_key_id(session_id, key), retention_days, FAILED, error=error)


def _end_key(store: MemoryStore, agent: str, lease_id: str, retention_days: int | None, status: str, **changes: Any) -> None:
    held = _load(store, agent, lease_id)
    if held is not None:
        _save(store, _ended(held, status, retention_days or None, **changes), held.version)
