"""Every cassette: requests valid against OpenAI's description, hand-written answers too, no secrets."""

import json
from pathlib import Path

import pytest
import yaml

from omnisync.model.completion import parse_completion
from omnisync.model.sse import iter_events
from omnisync.model.stream import CompletionAssembler
from omnisync.testing import SCRUBBED_HEADERS
from helpers.openapi import openapi_or_skip, stream_chunk_errors

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
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
        sent = json.loads(request["body"])
        openapi.check_request(sent)
        for message in sent["messages"]:  # servers that type content as a plain string refuse null
            if message["role"] == "assistant" and message.get("tool_calls"):
                assert isinstance(message["content"], str), message
        content_type = {name.lower(): value for name, value in response["headers"].items()}.get("content-type", [""])[0]
        if content_type.startswith("text/event-stream"):
            answer = _streamed_answer(response["body"]["string"], check=path.parent.name == "handwritten")
        else:
            body = json.loads(response["body"]["string"])
            if path.parent.name == "handwritten":
                openapi.check_response(body)
            answer = parse_completion(body)
        assert answer.content is not None or answer.tool_calls
        headers = {name.lower() for name in [*request["headers"], *response["headers"]]}
        assert not headers & set(SCRUBBED_HEADERS), headers & set(SCRUBBED_HEADERS)


def _streamed_answer(text, *, check):
    """A streamed body's Completion; with ``check``, every chunk is valid against the stream chunk schema."""
    events = [event.data for event in iter_events([text.encode()])]
    assert events[-1] == "[DONE]", events[-1:]
    assembler = CompletionAssembler()
    for data in events[:-1]:
        chunk = json.loads(data)
        if check:
            assert not stream_chunk_errors(chunk), stream_chunk_errors(chunk)
        assembler.add(chunk)
    return assembler.completion()
