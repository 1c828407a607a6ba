"""Run state: the only writer of run records and leases.

Every change of a run's record (:mod:`.runs`), of a lease beside it (:mod:`.leases`: which
run holds a session, which driver folds a range of messages, which run an idempotency key
started) and every cancel request is made here, as one compare-and-set save on the record's
version, handed to the store by :mod:`.saves` alone (the modules above decide what to save).
Claims belong to drivers (:mod:`.drivers`), not processes; :mod:`.keeper` keeps a
driven run's lease and reads its cancel request while it waits. Encryption at rest's data key
records, and records ``omnisync encrypt`` seals in place, are saved here too (:mod:`.data_keys`).
"""

from .drivers import new_token
from .keeper import KEEPER, WATCH_SECONDS, Watch
from .leases import (
    Lease,
    bind_key,
    claim_fold,
    end_fold,
    holds_session,
    idempotency_key_id,
    judge_session,
    release_key,
    release_session,
    reserve_key,
    session_holder,
    session_lease_id,
    take_session,
)
from .runs import (
    add_model_call,
    cancel_request_id,
    cancel_requested,
    claim,
    clear,
    create,
    create_in_free_session,
    decide,
    ended,
    fail,
    fence_session,
    finish,
    finish_with_messages,
    grant,
    list_runs,
    load,
    new_record,
    new_run_id,
    pause,
    prune,
    request_cancel,
    restore,
    save_progress,
    take_over,
)

__all__ = [
    "KEEPER",
    "WATCH_SECONDS",
    "Lease",
    "Watch",
    "add_model_call",
    "bind_key",
    "cancel_request_id",
    "cancel_requested",
    "claim",
    "claim_fold",
    "clear",
    "create",
    "create_in_free_session",
    "decide",
    "end_fold",
    "ended",
    "fail",
    "fence_session",
    "finish",
    "finish_with_messages",
    "grant",
    "holds_session",
    "idempotency_key_id",
    "judge_session",
    "list_runs",
    "load",
    "new_record",
    "new_run_id",
    "new_token",
    "pause",
    "prune",
    "release_key",
    "release_session",
    "request_cancel",
    "reserve_key",
    "restore",
    "save_progress",
    "session_holder",
    "session_lease_id",
    "take_over",
    "take_session",
]
