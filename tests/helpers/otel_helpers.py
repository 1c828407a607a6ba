"""OpenTelemetry's SDK for the telemetry tests: one in-memory span exporter and metric reader per process.

OpenTelemetry lets a process set its global providers once, so they are set here on first use
and each test starts by clearing what earlier tests left.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@functools.cache
def providers() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tracer_provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return exporter, reader


def span_tree(spans: Iterable[ReadableSpan], shown: Iterable[str] = ()) -> str:
    """The spans as an indented tree, in start order, each with the attributes named in ``shown``."""
    spans = sorted(spans, key=lambda s: s.start_time or 0)
    by_id = {s.context.span_id: s for s in spans}
    lines = []

    def depth(span: ReadableSpan) -> int:
        level = 0
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
            level += 1
        return level

    for span in spans:
        attributes = span.attributes or {}
        told = " ".join(f"{name}={attributes[name]}" for name in shown if name in attributes)
        lines.append(f"{'  ' * depth(span)}{span.name}{'  ' + told if told else ''}".rstrip())
    return "\n".join(lines)


def metric_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Every data point of every metric, by metric name."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def every_value(spans: Iterable[ReadableSpan]) -> list[str]:
    """Every attribute, event attribute and status text of the spans, as strings."""
    values = []
    for span in spans:
        values.extend(str(v) for v in (span.attributes or {}).values())
        values.append(str(span.status.description))
        for event in span.events:
            values.append(event.name)
            values.extend(str(v) for v in (event.attributes or {}).values())
    return values
