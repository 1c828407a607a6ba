"""Round trips and clocks measured the same way on every server, and the thresholds they are judged by."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import datetime, timezone

from .report import FAIL, OK, WARN, Report

PINGS = 5
SLOW_ROUND_TRIP_MS = 5.0
CLOCK_SKEW_WARN_S = 1.0



def median_round_trip_ms(ping: Callable[[], object]) -> float:
    """The median of ``PINGS`` calls of ``ping``, in milliseconds (after one call that warms the connection)."""
    ping()
    times = []
    for _ in range(PINGS):
        started = time.perf_counter()
        ping()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def judge_latency(report: Report, trips: int, ping: Callable[[], object]) -> None:
    """``trips``: about what one ``run()`` of one model call sends to the store, each kind's
    ``ROUND_TRIPS_PER_RUN`` (the bounds tests/stores/test_round_trips.py holds)."""
    median = median_round_trip_ms(ping)
    cost = f"{median:.2f} ms a round trip (median of {PINGS}); a run makes about {trips}: {median * trips:.1f} ms of each run"
    if median > SLOW_ROUND_TRIP_MS:
        report.add("latency", WARN, f"{cost}, above {SLOW_ROUND_TRIP_MS:g} ms a round trip", "run the agents in the server's zone (or the server in theirs): every round trip is paid about {trips} times a run".replace("{trips}", str(trips)))
    else:
        report.add("latency", OK, cost)


def clock_offset_s(read_server_time: Callable[[], datetime]) -> float:
    """The server's clock minus ours, in seconds, ours taken half-way through the round trip."""
    before = time.time()
    server = read_server_time()
    after = time.time()
    if server.tzinfo is None:  # BSON dates and Redis TIME are UTC
        server = server.replace(tzinfo=timezone.utc)
    return server.timestamp() - (before + after) / 2


def judge_clock(report: Report, offsets: dict[str, float], precision_s: float = 0.0) -> None:
    """``offsets``: server name -> its clock minus ours. Leases and expiry times are written with
    one host's clock and read with another's, or expired by the server's."""
    where, worst = max(offsets.items(), key=lambda item: abs(item[1]))
    side = "ahead of" if worst >= 0 else "behind"
    of = f" ({where})" if len(offsets) > 1 else ""
    detail = f"the server's clock{of} is {abs(worst):.3f} s {side} this machine's"
    if precision_s:
        detail += f" (to within {precision_s:g} s: the server reports no finer)"
    if abs(worst) > CLOCK_SKEW_WARN_S + precision_s:
        report.add(
            "clock",
            WARN,
            detail,
            "run NTP (chrony or systemd-timesyncd) on this machine and the server: run leases are written with one host's clock "
            "and checked with another's, so a skew of seconds lets a second worker take over a run that is still alive",
        )
    else:
        report.add("clock", OK, detail)


def version_tuple(text: str) -> tuple[int, ...]:
    """``"15.18 (Debian ...)"`` -> (15, 18); ``"v1.24.2"`` -> (1, 24, 2)."""
    digits = []
    for part in text.strip().lstrip("v").split()[0].split("."):
        number = "".join(c for c in part if c.isdigit())
        if not number:
            break
        digits.append(int(number))
    return tuple(digits)


def judge_version(report: Report, product: str, version: str, floor: tuple[int, ...], needs: str, tested: str) -> None:
    """FAIL below ``floor``, the oldest release the code can run on (``needs`` says why)."""
    shown = ".".join(map(str, floor))
    found = version_tuple(version)
    detail = f"{product} {version.split()[0] if version.strip() else '?'}"
    if found and found < floor:
        report.add("server", FAIL, f"{detail}, older than {shown}, the oldest omnisync runs on ({needs})", f"upgrade {product} to {shown} or later")
    else:
        report.add("server", OK, f"{detail}; omnisync needs {shown} or later ({needs}); tested with {tested}")


__all__ = ["FAIL", "OK", "WARN", "judge_clock", "judge_latency", "judge_version", "clock_offset_s", "median_round_trip_ms", "version_tuple"]
