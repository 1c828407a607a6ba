"""What the benchmark writes and how it times it: ~300-character messages, interleaved medians."""

from __future__ import annotations

import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from omnisync.messages import Message
from omnisync.tokens import estimate_tokens, message_tokens

AGENT = "bench"
FILL_CHUNK = 500  # messages per append while filling a session (setup, not measured)
TOKEN_BUDGET = 2_000  # the token window measured (~26 messages of ~77 tokens)
LARGE_TOKEN_BUDGET = 20_000  # a token window that needs two 256-message pages

_WORDS = (
    "the a to and of in for on with is it that this be you can your we our not are as at by from or "
    "agent memory session window message token store run model tool answer question config value file "
    "server user assistant request response context history summary budget limit cost time step call "
    "please could would should check update setting project order account invoice shipping address "
    "yesterday tomorrow morning report number total price discount customer support ticket issue fix "
    "deploy build test branch release version error warning timeout retry database cache index query"
).split()


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        target = rng.randint(280, 320)
        words: list[str] = []
        length = 0
        while length < target:
            word = rng.choice(_WORDS)
            words.append(word)
            length += len(word) + 1
        sentence = " ".join(words)[:target].rstrip()
        texts.append(sentence[0].upper() + sentence[1:] + ".")
    return texts


USER_TEXTS = _texts(64, seed=1)
ASSISTANT_TEXTS = _texts(64, seed=2)
_TOKENS = {
    text: message_tokens(estimate_tokens, {"role": "user", "content": text}) for text in USER_TEXTS + ASSISTANT_TEXTS
}


def chat(index: int) -> dict[str, str]:
    """The index-th message of a conversation, as a chat dict (users on even, assistant on odd)."""
    if index % 2 == 0:
        return {"role": "user", "content": USER_TEXTS[(index // 2) % len(USER_TEXTS)]}
    return {"role": "assistant", "content": ASSISTANT_TEXTS[(index // 2) % len(ASSISTANT_TEXTS)]}


def tokens_of(text: str) -> int:
    return _TOKENS[text]


def run_id(index: int) -> str:
    return f"run_{index:032x}"


def message(index: int) -> Message:
    """The index-th message as our store takes it: tokens counted at write, run id as a run sets it."""
    item = chat(index)
    return Message(role=item["role"], content=item["content"], tokens=tokens_of(item["content"]), run_id=run_id(index // 2))


def messages(start: int, count: int) -> list[Message]:
    return [message(i) for i in range(start, start + count)]


def record(index: int, created_at: str) -> dict[str, Any]:
    """The index-th message as a plain dict of the same fields (for the raw baselines)."""
    item = chat(index)
    return {
        "role": item["role"],
        "content": item["content"],
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "metadata": {},
        "tokens": tokens_of(item["content"]),
        "run_id": run_id(index // 2),
        "created_at": created_at,
    }


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def micros() -> int:
    """Now, in integer microseconds since the epoch (how the raw SQL baselines store times)."""
    return time.time_ns() // 1000


def mean_chars() -> float:
    return statistics.mean(len(t) for t in USER_TEXTS + ASSISTANT_TEXTS)


def mean_tokens() -> float:
    return statistics.mean(_TOKENS.values())


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- timing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """How long to spend on one measured operation."""

    seconds: float  # per operation, warm-up excluded
    max_reps: int
    min_reps: int
    warmup: int


@dataclass
class Sample:
    median_ns: float
    reps: int


def measure(fns: dict[str, Callable[[], Any]], budget: Budget) -> dict[str, Sample]:
    """Median wall time of each function, the functions interleaved call by call.

    Interleaving means a burst of noise from other processes hits every contender alike, so
    the ratios hold even when the absolute figures wobble. Each function gets as many calls
    as fit in ``budget.seconds`` (judged from its warm-up), between ``min_reps`` and ``max_reps``.
    """
    gc.collect()
    reps: dict[str, int] = {}
    for name, fn in fns.items():
        times = []
        for _ in range(max(1, budget.warmup)):
            start = time.perf_counter_ns()
            fn()
            times.append(time.perf_counter_ns() - start)
            if times[-1] > budget.seconds * 1e9 / max(budget.min_reps, 1):
                break  # a slow operation: one warm-up call is enough to size it
        estimate = max(statistics.median(times), 1.0)
        reps[name] = int(min(budget.max_reps, max(budget.min_reps, budget.seconds * 1e9 // estimate)))
    samples: dict[str, list[int]] = {name: [] for name in fns}
    remaining = dict(reps)
    while any(remaining.values()):
        for name, fn in fns.items():
            if remaining[name]:
                start = time.perf_counter_ns()
                fn()
                samples[name].append(time.perf_counter_ns() - start)
                remaining[name] -= 1
    return {name: Sample(statistics.median(times), len(times)) for name, times in samples.items()}


def calls_per_operation(budget: Budget) -> int:
    """The most calls :func:`measure` makes of one function (warm-up included)."""
    return budget.max_reps + max(1, budget.warmup)


# --- memory ---------------------------------------------------------------------------


def process_memory() -> dict[str, float]:
    """This process's resident set now and at its peak, in MiB (from /proc/self/status)."""
    found: dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    found[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return found
