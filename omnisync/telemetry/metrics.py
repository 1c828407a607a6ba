"""The metrics: the GenAI conventions' two client histograms, and omnisync's runs and session waits.

- ``gen_ai.client.token.usage`` (``{token}``): each model call's input and output tokens
  (``gen_ai.token.type``), with the conventions' bucket advice.
- ``gen_ai.client.operation.duration`` (``s``): each model call and each run (``invoke_agent``).
- ``omnisync.agent.runs`` (``{run}``): runs by how they ended or paused (``omnisync.run.status``).
- ``omnisync.session.wait.duration`` (``s``): time a run waited for a busy session.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from . import api

TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]


@dataclass(frozen=True)
class Instruments:
    token_usage: Any
    operation_duration: Any
    runs: Any
    session_wait: Any


@functools.cache
def instruments() -> Instruments:
    """Created once, on the global meter provider (a proxy until the application sets one)."""
    meter = api.meter()
    return Instruments(
        token_usage=meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        ),
        operation_duration=meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        ),
        runs=meter.create_counter("omnisync.agent.runs", unit="{run}", description="Runs of an agent, by how they ended or paused."),
        session_wait=meter.create_histogram(
            "omnisync.session.wait.duration",
            unit="s",
            description="Time a run waited for its session, held by another run.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        ),
    )


def model_call(attributes: dict[str, Any], seconds: float, usage: dict[str, Any] | None) -> None:
    """One model call: its duration and, when known, its tokens."""
    if not api.metering():
        return
    found = instruments()
    found.operation_duration.record(seconds, attributes)
    if usage and "error.type" not in attributes:
        for kind, key in (("input", "prompt_tokens"), ("output", "completion_tokens")):
            if isinstance(usage.get(key), int):
                found.token_usage.record(usage[key], {**attributes, "gen_ai.token.type": kind})


def run_ended(attributes: dict[str, Any], seconds: float, status: str) -> None:
    if not api.metering():
        return
    found = instruments()
    found.operation_duration.record(seconds, attributes)
    found.runs.add(1, {**attributes, "omnisync.run.status": status})


def session_waited(agent: str, seconds: float) -> None:
    if not api.metering():
        return
    instruments().session_wait.record(seconds, {"gen_ai.agent.name": agent})
