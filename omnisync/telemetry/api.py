"""``opentelemetry-api``, when it is installed: looked for once, at the first run, never before.

Without the package (``pip install 'omnisync[otel]'``) :func:`enabled` is False and every hook
of :mod:`omnisync.telemetry` hands back what it was given: nothing is imported, nothing is
wrapped. With it, spans and metrics go to whatever providers the application set up (none:
OpenTelemetry's no-op ones).
"""

from __future__ import annotations

import functools
from typing import Any

INSTRUMENTATION = "omnisync"
_VERSION = "0.1.0"


@functools.cache
def enabled() -> bool:
    """True once ``opentelemetry-api`` is importable (checked once per process)."""
    try:
        import opentelemetry.trace  # noqa: F401
        import opentelemetry.metrics  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def tracer() -> Any:
    """omnisync's tracer, from the global provider (a proxy until the application sets one)."""
    from opentelemetry import trace

    return trace.get_tracer(INSTRUMENTATION, _VERSION)


@functools.cache
def meter() -> Any:
    """omnisync's meter, from the global provider (a proxy until the application sets one)."""
    from opentelemetry import metrics

    return metrics.get_meter(INSTRUMENTATION, _VERSION)


def tracing() -> bool:
    """True while the application has set a tracer provider: with none set every span would be a
    no-op, so omnisync skips making them (the cost of a run with a no-op tracer stays that of none)."""
    return enabled() and not isinstance(_trace().get_tracer_provider(), _stand_ins()[0])


def metering() -> bool:
    """True while the application has set a meter provider (see :func:`tracing`)."""
    return enabled() and not isinstance(_metrics().get_meter_provider(), _stand_ins()[1])


def active() -> bool:
    """True while spans or metrics go somewhere."""
    return tracing() or metering()


@functools.cache
def _trace() -> Any:
    from opentelemetry import trace

    return trace


@functools.cache
def _metrics() -> Any:
    from opentelemetry import metrics

    return metrics


@functools.cache
def _stand_ins() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """The providers OpenTelemetry answers with before the application sets its own."""
    from opentelemetry import metrics, trace
    from opentelemetry.metrics import _internal

    proxy_meters = getattr(_internal, "_ProxyMeterProvider", metrics.NoOpMeterProvider)
    return (trace.ProxyTracerProvider, trace.NoOpTracerProvider), (proxy_meters, metrics.NoOpMeterProvider)
