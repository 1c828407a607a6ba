"""The record a run keeps in the memory store: its state, never a copy of the history."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

RUNNING = "running"
AWAITING_APPROVAL = "awaiting_approval"
AWAITING_BUDGET = "awaiting_budget"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"

RUN_STATUSES = (RUNNING, AWAITING_APPROVAL, AWAITING_BUDGET, COMPLETED, FAILED, CANCELLED)
PAUSED_STATUSES = (AWAITING_APPROVAL, AWAITING_BUDGET)
FINISHED_STATUSES = (COMPLETED, FAILED, CANCELLED)

RUN = "run"  # an agent's run
FOLD = "fold"  # a summary's claim on a range of messages, so one process folds it
SESSION = "session"  # a session's lease: which run holds it (``lease_owner`` is that run's id)
IDEMPOTENCY = "idempotency"  # a served request's Idempotency-Key: the run it started (omnisync.serve)
CANCEL = "cancel"  # a request to stop a running run, read by its driver wherever it runs (``lease_owner``: the run)
DATA_KEY = "data_key"  # a session's data key, wrapped by a master key (omnisync.encryption)
RUN_KINDS = (RUN, FOLD, SESSION, IDEMPOTENCY, CANCEL, DATA_KEY)

_TIME_FIELDS = ("created_at", "updated_at", "finished_at", "expires_at", "lease_until")


@dataclass(frozen=True)
class RunRecord:
    """One run's state. ``version`` grows by one on every save (compare-and-set).

    ``kind`` tells an agent's runs from the leases kept beside them (see :mod:`omnisync.run_state.leases`);
    a running run's ``lease_owner`` is the token of the driver executing it;
    ``finish_reason`` is the last model reply's (``"length"``: cut off by the output limit).
    ``usage`` adds up the run's own model calls (what its budget counts); ``model_calls`` keeps
    each call's usage with its kind, summary calls the run's end led to included (see
    :mod:`omnisync.usage`). ``response_format`` is what each of its calls asks for when the run
    has an ``output_type``, so a resumed run asks for the same. ``trace_parent`` names the
    trace span that last drove the run, so the span of a resume elsewhere links to it.
    """

    run_id: str
    agent: str
    session_id: str
    kind: str = RUN
    status: str = RUNNING
    step: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_calls_made: int = 0
    pending_calls: list[dict[str, Any]] = field(default_factory=list)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    budget: dict[str, int | None] = field(default_factory=dict)
    budget_request: dict[str, Any] | None = None
    loaded_seq: tuple[int, int] | None = None
    first_written_seq: int | None = None
    response: str | None = None
    error: str | None = None
    partial_response: str | None = None  # the text a broken stream delivered before it broke
    finish_reason: str | None = None
    response_format: dict[str, Any] | None = None
    extra_body: dict[str, Any] | None = None  # a server's own options the run was given, sent with each of its model calls
    trace_parent: str | None = None  # the W3C traceparent of the span that last drove the run (omnisync.telemetry)
    message: Any = None  # the user's message until the run first writes to its session (so a run killed before that can resume)
    lease_owner: str | None = None
    lease_until: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    finished_at: datetime | None = None
    expires_at: datetime | None = None
    version: int = 0

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    def evolve(self, **changes: Any) -> "RunRecord":
        return replace(self, **changes)

    def to_record(self) -> dict[str, Any]:
        record = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for name in _TIME_FIELDS:
            value = getattr(self, name)
            record[name] = value.isoformat() if value else None
        record["loaded_seq"] = list(self.loaded_seq) if self.loaded_seq else None
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "RunRecord":
        values = {name: record[name] for name in cls.__dataclass_fields__ if name in record}
        for name in _TIME_FIELDS:
            if isinstance(values.get(name), str):
                values[name] = datetime.fromisoformat(values[name])
        if values.get("loaded_seq"):
            values["loaded_seq"] = tuple(values["loaded_seq"])
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_record(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> "RunRecord":
        return cls.from_record(json.loads(text))
