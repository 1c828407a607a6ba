"""Token usage: read from what the server sent, kept per model call, added up.

A usage is a dict of whole numbers (``prompt_tokens``, ``completion_tokens``,
``total_tokens``) and, when the server sent them, the ``prompt_tokens_details`` and
``completion_tokens_details`` objects as given (their whole-number fields). Each model call
is kept on its run's record as a :data:`MODEL_CALL` entry: ``{"kind": "step" | "summary",
"usage": {...}}`` (with ``"model"`` when the server named it). A summary call is kept on the
record of the run whose end scheduled the fold, so a session's runs add up to all it cost.

A server that sends no usage (llama.cpp's streams send no usage chunk) gets it counted with the
agent's token counter instead (:func:`counted_usage`): the prompt's tokens, the reply's, and
``"estimated": True``. A total with any estimated call in it is marked estimated too. What the
server sent always wins.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .tokens import MESSAGE_OVERHEAD, TokenCounter, message_tokens

STEP = "step"  # a call of the run loop
SUMMARY = "summary"  # a call that folded old messages into a summary
CALL_KINDS = (STEP, SUMMARY)

_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
_DETAILS = ("prompt_tokens_details", "completion_tokens_details")
ESTIMATED = "estimated"  # True on a usage counted here, not sent by the server


def read_usage(raw: Any) -> dict[str, Any]:
    """The usage object of a response or of a stream's usage chunk, without what is not a count."""
    if not isinstance(raw, dict):
        return {}
    usage: dict[str, Any] = {key: raw[key] for key in _COUNTS if _is_count(raw.get(key))}
    for key in _DETAILS:
        details = raw.get(key)
        if isinstance(details, dict):
            counts = {name: value for name, value in details.items() if _is_count(value)}
            if counts:
                usage[key] = counts
    return usage


def counted_usage(
    sent: dict[str, Any],
    counter: TokenCounter,
    prompt_tokens: Sequence[int],
    reply: dict[str, Any],
    tools: Sequence[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The usage the server ``sent``; when it sent none, an estimate marked ``"estimated": True``.

    ``prompt_tokens`` are the counts of the messages the call was given (as the prompt builder
    priced them), ``tools`` the tool schemas it carried, ``reply`` the assistant message it got.
    """
    if sent:
        return sent
    prompt = sum(prompt_tokens) + (counter(json.dumps(list(tools), ensure_ascii=False)) if tools else 0)
    completion = message_tokens(counter, reply) - MESSAGE_OVERHEAD
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, ESTIMATED: True}


def add_usage(total: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """``total`` plus ``more``, key by key (detail objects added field by field); neither is changed."""
    summed = dict(total)
    for key, value in more.items():
        if key == ESTIMATED:
            if value is True:
                summed[ESTIMATED] = True
        elif isinstance(value, dict):
            summed[key] = add_usage(summed.get(key) or {}, value)
        elif _is_count(value):
            summed[key] = summed.get(key, 0) + value
    return summed


def model_call(kind: str, usage: dict[str, Any], model: str | None = None) -> dict[str, Any]:
    """One model call's entry on a run record."""
    entry: dict[str, Any] = {"kind": kind, "usage": usage}
    if model:
        entry["model"] = model
    return entry


def session_usage(calls: Iterable[dict[str, Any]], runs: int) -> dict[str, Any]:
    """The total of these model calls, also split by kind: what ``get_session_usage`` returns."""
    total: dict[str, Any] = {}
    by_kind: dict[str, dict[str, Any]] = {kind: {} for kind in CALL_KINDS}
    counted = {kind: 0 for kind in CALL_KINDS}
    for call in calls:
        kind = call.get("kind", STEP)
        usage = call.get("usage") or {}
        total = add_usage(total, usage)
        by_kind[kind] = add_usage(by_kind.get(kind, {}), usage)
        counted[kind] = counted.get(kind, 0) + 1
    return {"usage": total, "by_kind": by_kind, "model_calls": counted, "runs": runs}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
