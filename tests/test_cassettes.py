"""Every cassette: requests valid against OpenAI's description, hand-written answers too, no secrets."""

import json
from pathlib import Path

import pytest
import yaml

from omnisync.model.client import parse_completion
from omnisync.testing import SCRUBBED_HEADERS
from openapi import openapi_or_skip

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"
ALL = sorted(CASSETTES.glob("*/*.yaml"))


def interactions(path):
    return yaml.safe_load(path.read_text())["interactions"]


def test_there_are_recorded_and_hand_written_cassettes():
    kinds = {path.parent.name for path in ALL}
    assert kinds == {"recorded", "handwritten"}, kinds


@pytest.mark.parametrize("path", ALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_cassette_requests_and_answers(path):
    openapi = openapi_or_skip()
    for interaction in interactions(path):
        request, response = interaction["request"], interaction["response"]
        assert request["uri"].endswith("/chat/completions")
        openapi.check_request(json.loads(request["body"]))
        body = json.loads(response["body"]["string"])
        if path.parent.name == "handwritten":
            openapi.check_response(body)
        assert parse_completion(body).content is not None or parse_completion(body).tool_calls
        headers = {name.lower() for name in [*request["headers"], *response["headers"]]}
        assert not headers & set(SCRUBBED_HEADERS), headers & set(SCRUBBED_HEADERS)
