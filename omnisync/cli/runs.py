"""``runs``, ``approve`` and ``deny``: durable run records, and the approvals they wait for.

A decision is recorded exactly as ``OmniCoreAgent.resolve_approval`` records it: the run is
loaded, its status and call id checked, and the record saved with a compare-and-set on its
version, so a decision never overwrites a change made meanwhile. No model is needed; the
agent's process (or any other that reaches the store) then calls ``agent.resume(run_id)``.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import run_state
from ..router import MemoryRouter
from ..run_record import AWAITING_APPROVAL, RunRecord
from ..usage import STEP, SUMMARY, session_usage
from .output import nonempty, note, print_json_items, table, when


def runs(args: argparse.Namespace, router: MemoryRouter) -> int:
    """Every agent's runs, whether or not it has sessions (:meth:`MemoryStore.run_agents`), printed a
    page at a time as the store reads them (:meth:`MemoryStore.iter_runs`), as ``sessions`` is."""
    store = router.store
    agents = [args.agent] if args.agent else store.run_agents()
    found = nonempty(r for agent in agents for r in store.iter_runs(agent, status=args.status, session_id=args.session))
    if args.json:
        print_json_items(r.to_record() for r in found or ())
    elif found is not None:
        table(
            ("RUN", "AGENT", "SESSION", "STATUS", "STEP", "TOKENS", "UPDATED", "WAITING FOR"),
            ((r.run_id, r.agent, r.session_id, r.status, r.step, _tokens(r), when(r.updated_at), _waiting_for(r)) for r in found),
        )
    else:
        note("no run records" + (f" with status {args.status}" if args.status else ""))
    return 0


def _tokens(record: RunRecord) -> str:
    """Total tokens of the run's model calls, prompt/completion, and what its summaries added: ``57 (29/28) +20 summary``."""
    if not record.model_calls:  # a record written before model calls were kept
        return _counts(record.usage)
    spent = session_usage(record.model_calls, runs=1)
    shown = _counts(spent["by_kind"][STEP])
    summaries = spent["by_kind"][SUMMARY]
    if spent["model_calls"][SUMMARY]:
        shown += f" +{summaries.get('total_tokens', '?')} summary"
    return shown


def _counts(usage: dict[str, Any]) -> str:
    if not usage:
        return "-"
    return f"{usage.get('total_tokens', '?')} ({usage.get('prompt_tokens', '?')}/{usage.get('completion_tokens', '?')})"


def _waiting_for(record: RunRecord) -> str:
    if record.status == AWAITING_APPROVAL:
        undecided = [c for c in record.pending_calls if c["id"] not in record.decisions]
        return ", ".join(f"{c['id']} ({c.get('function', {}).get('name', '?')})" for c in undecided)
    if record.budget_request:
        return f"budget: {record.budget_request}"
    return ""


def approve(args: argparse.Namespace, router: MemoryRouter) -> int:
    return _decide(args, router, approved=True)


def deny(args: argparse.Namespace, router: MemoryRouter) -> int:
    return _decide(args, router, approved=False)


def _decide(args: argparse.Namespace, router: MemoryRouter, *, approved: bool) -> int:
    saved = run_state.decide(router.store, args.agent, args.run_id, args.call_id, approved, args.reason)
    undecided = [c["id"] for c in saved.pending_calls if c["id"] not in saved.decisions]
    verdict = "approved" if approved else "denied"
    print(f"{verdict} call {args.call_id} of run {args.run_id} (agent {args.agent!r})")
    if undecided:
        note(f"still waiting for a decision on: {', '.join(undecided)}")
    else:
        note(f"every pending call is decided: resume the run with agent.resume({args.run_id!r})")
    return 0
