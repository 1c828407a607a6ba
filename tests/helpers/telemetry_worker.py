"""A process of the telemetry tests: one action on a tool agent, its spans written out as JSON.

    python tests/helpers/telemetry_worker.py ACTION STORE_URL AGENT MODEL_URL OUT [ARG]

ACTION ``run`` runs ARG as a message (session ``s-linked``), ``resume`` resumes run ARG;
OUT gets the finished spans (name, ids, parent, links, attributes) and the result. With
``OTLP_ENDPOINT`` set the spans go there through the OTLP/HTTP exporter instead.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for helpers

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from omnisync import MemoryRouter  # noqa: E402
from helpers.tool_agents import SCRIPTED_MODEL, tool_agent  # noqa: E402


def main(action: str, store_url: str, agent_name: str, model_url: str, out: str, argument: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "telemetry-worker"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    if os.environ.get("OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=os.environ["OTLP_ENDPOINT"])))
    trace.set_tracer_provider(provider)
    SCRIPTED_MODEL["base_url"] = model_url
    with MemoryRouter("sql", url=store_url) as router:
        agent = tool_agent(router, name=agent_name)
        result = agent.run(argument, session_id="s-linked") if action == "run" else agent.resume(argument)
        agent.cleanup()
    provider.shutdown()
    spans = [
        {
            "name": s.name,
            "trace_id": s.context.trace_id,
            "span_id": s.context.span_id,
            "parent": s.parent.span_id if s.parent else None,
            "links": [[link.context.trace_id, link.context.span_id] for link in s.links],
            "attributes": dict(s.attributes or {}),
        }
        for s in memory.get_finished_spans()
    ]
    Path(out).write_text(json.dumps({"result": dict(result), "spans": spans}))


if __name__ == "__main__":
    main(*sys.argv[1:])
