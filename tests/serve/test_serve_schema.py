"""The OpenAPI description the server serves, held to by a running server: schemathesis sends
generated requests (valid and not) to every route, and no answer may be a 5xx or differ from
what the description declares (status, content type, body schema).

The server is real (uvicorn on a free port) with a SQLite store and the scripted model, so a
value the store cannot keep or a model reply the server mishandles shows up here.
"""

from __future__ import annotations

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)
from helpers.serve_servers import scripted_model_server, uvicorn_server
from helpers.tool_agents import SYSTEM, counting_tools

from omnisync import MemoryRouter, OmniCoreAgent
from omnisync.serve import create_app
from omnisync.serve.openapi import describe

TOKEN = "schema-token-0123456789abcdef"
AGENT = "assistant"
EXAMPLES = 25  # per route: the whole module runs in well under a minute
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance, negative_data_rejection]

schema = schemathesis.openapi.from_dict(describe())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    router = MemoryRouter("sql", url=f"sqlite:///{tmp_path_factory.mktemp('schema')}/memory.db")
    with scripted_model_server() as model_url:
        config = {"model": "gpt-5.4-mini", "base_url": model_url, "api_key": "test", "max_retries": 0}
        agent = OmniCoreAgent(name=AGENT, system_instruction=SYSTEM, model_config=config, memory_router=router, local_tools=counting_tools())
        app = create_app(agent, tokens={TOKEN: [AGENT]})
        with uvicorn_server(app) as base:
            response = requests.post(f"{base}/agents/{AGENT}/sessions/seed/runs", json={"message": "hello"}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            assert response.status_code == 200, response.text  # a session and a run exist for the list routes
            yield base, app
        agent.cleanup()
    router.close()


@pytest.fixture(scope="module")
def base_url(server):
    return server[0]


def test_the_server_serves_this_description_and_it_describes_every_route_of_the_api(server):
    base, app = server
    served = requests.get(base + "/openapi.json", timeout=10)
    assert served.status_code == 200
    assert served.json() == describe()
    described = {(method.upper(), path) for path, item in served.json()["paths"].items() for method in item}
    routes = {(method, route.path) for route in app.routes for method in route.methods - {"HEAD"}}
    not_api = {("GET", "/"), ("GET", "/static/page.js"), ("GET", "/static/page.css"), ("GET", "/openapi.json")}
    assert not_api <= routes
    assert described == routes - not_api


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_route_answers_as_described(case, base_url):
    if "agent" in (case.path_parameters or {}):
        case.path_parameters["agent"] = AGENT  # a random name is a 404 and reaches nothing behind it
    for name, value in list((case.query or {}).items()):
        if value is None or value == []:  # requests sends no such parameter: send the one meant
            case.query[name] = "x"
    case.call_and_validate(base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}, checks=CHECKS, timeout=30)
