"""A tiny OTLP/HTTP trace receiver for the tests (ours, not OpenTelemetry's Collector).

    python tests/helpers/otlp_collector.py OUT

Listens on a free loopback port (printed as its first line of output), takes
``POST /v1/traces`` bodies (``application/x-protobuf``), decodes them with
``opentelemetry-proto`` and appends one JSON line per span to OUT: its name, trace and
span ids (hex), parent id and attributes.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse


def _value(value: Any) -> Any:
    found = MessageToDict(value)
    return next(iter(found.values())) if found else None


class Receiver(BaseHTTPRequestHandler):
    out = ""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with open(self.out, "a") as file:
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        line = {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex() or None,
                            "scope": scope.scope.name,
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                        }
                        file.write(json.dumps(line) + "\n")
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


if __name__ == "__main__":
    Receiver.out = sys.argv[1]
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    print(server.server_address[1], flush=True)
    server.serve_forever()
