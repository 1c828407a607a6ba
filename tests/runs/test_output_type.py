"""run(..., output_type=...): the response_format each call asks for, the answer read into the type, and the failures."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TypedDict

import pytest

from helpers.agent_helpers import echo, make_agent
from helpers.fake_http import completion, install
from omnisync import aio
from omnisync.errors import BadRequestError, ConfigurationError, OutputValidationError, StructuredOutputUnsupportedError
from omnisync.output import OutputType, fits_strict_mode
from omnisync.tools import ToolRegistry, signature
from helpers.openapi import OpenAPI
from helpers.tool_agents import SCRIPTED_MODEL


@dataclass
class City:
    name: str
    population: int
    landmarks: list[str]


class Weather(TypedDict):
    city: str
    celsius: float
    sunny: bool


@dataclass
class Loose:
    name: str
    note: str = ""
    tags: list[str] = field(default_factory=list)


CITY_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}, "landmarks": {"type": "array", "items": {"type": "string"}}},
    "required": ["name", "population", "landmarks"],
    "additionalProperties": False,
}
CITY_FORMAT = {"type": "json_schema", "json_schema": {"name": "City", "schema": CITY_SCHEMA, "strict": True}}
PARIS = '{"name": "Paris", "population": 2100000, "landmarks": ["Louvre", "Eiffel Tower"]}'


@pytest.fixture(params=["pydantic", "subset"])
def backend(request, monkeypatch):
    """Each test once with pydantic describing the types, once with the hand-written subset."""
    if request.param == "subset":
        monkeypatch.setattr(signature, "load_pydantic", lambda: None)
    return request.param


def structured_agent(**kwargs):
    return make_agent(name="structured", model_config=SCRIPTED_MODEL, **kwargs)


def requests_with_format(http):
    return [body.get("response_format") for body in http.sent]


# --- from a cassette -----------------------------------------------------------------------


def test_a_dataclass_and_a_typeddict_from_a_cassette(omnisync_cassette, backend):
    agent = structured_agent()
    with omnisync_cassette("handwritten/structured_output"):
        first = agent.run(f"Describe Paris. answer {PARIS}", session_id="s", output_type=City)
        second = agent.run('And its weather now? answer {"city": "Paris", "celsius": 21, "sunny": true}', session_id="s", output_type=Weather)
    assert first["status"] == "completed" and first["response"] == PARIS
    assert first["output"] == City("Paris", 2100000, ["Louvre", "Eiffel Tower"])
    assert second["output"] == {"city": "Paris", "celsius": 21.0, "sunny": True}
    assert type(second["output"]["celsius"]) is float  # coerced to the declared type
    record = agent.get_run(first["run_id"])
    assert record["response_format"] == CITY_FORMAT
    assert record["model_calls"][0]["kind"] == "step"
    assert record["model_calls"][0]["usage"]["completion_tokens_details"] == {"reasoning_tokens": 0, "audio_tokens": 0}
    assert [m["role"] for m in agent.get_session_history("s")] == ["user", "assistant"] * 2


def test_the_response_format_is_the_same_from_either_backend_and_valid_for_openai(backend):
    assert OutputType.of(City).response_format == CITY_FORMAT
    weather = OutputType.of(Weather).response_format
    assert weather["json_schema"]["schema"]["properties"]["celsius"] == {"type": "number"}
    for response_format in (CITY_FORMAT, weather):
        OpenAPI().check_request({"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": response_format})


# --- mocked HTTP: what is sent, and each way an answer fails ---------------------------------


def test_only_the_run_that_asks_sends_response_format(monkeypatch):
    http = install(monkeypatch, lambda body: completion(PARIS))
    agent = make_agent()
    assert agent.run("plain", session_id="s")["response"] == PARIS
    typed = agent.run("typed", session_id="s", output_type=City)
    assert "output" not in agent.run("plain again", session_id="s")
    assert requests_with_format(http) == [None, CITY_FORMAT, None]
    assert typed["output"].landmarks == ["Louvre", "Eiffel Tower"]


def test_a_json_schema_dict_is_sent_as_given_and_its_answer_parsed(monkeypatch):
    schema = {"title": "Answer sheet", "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
    http = install(monkeypatch, lambda body: completion('{"n": 3, "extra": true}'))
    result = make_agent().run("count", output_type=schema)
    assert http.sent[0]["response_format"] == {"type": "json_schema", "json_schema": {"name": "Answer_sheet", "schema": schema, "strict": True}}
    assert result["output"] == {"n": 3, "extra": True}  # a bare schema is parsed, not checked: pass a type for that
    whole = {"type": "json_schema", "json_schema": {"name": "sheet", "schema": schema, "strict": True}}
    assert OutputType.of(whole).response_format == whole  # a whole response_format is taken as it is


def test_an_answer_that_is_not_json_fails_the_run_and_keeps_the_answer(monkeypatch):
    install(monkeypatch, lambda body: completion("Paris has about two million people."))
    agent = make_agent()
    with pytest.raises(OutputValidationError) as caught:
        agent.run("Describe Paris", session_id="s", output_type=City)
    error = caught.value
    assert error.text == "Paris has about two million people."
    assert "is not JSON" in str(error) and "City" in str(error) and error.problems[0].startswith("not JSON")
    record = agent.get_run(error.run_id)
    assert record["status"] == "failed" and record["error"].startswith("OutputValidationError: the model's answer is not JSON")
    assert record["response_format"] == CITY_FORMAT
    assert agent.get_session_history("s")[-1] == {"role": "assistant", "content": "Paris has about two million people."}


def test_an_answer_that_does_not_fit_names_each_problem(monkeypatch, backend):
    install(monkeypatch, lambda body: completion('{"name": "Paris", "population": "many"}'))
    agent = make_agent()
    with pytest.raises(OutputValidationError) as caught:
        agent.run("Describe Paris", session_id="s", output_type=City)
    problems = " ".join(caught.value.problems)
    assert "landmarks" in problems and "missing" in problems
    if backend == "pydantic":  # the subset stops at the first problem
        assert "population" in problems
    assert caught.value.text == '{"name": "Paris", "population": "many"}'
    assert agent.get_run(caught.value.run_id)["status"] == "failed"


def test_an_answer_cut_off_by_the_output_limit_says_so(monkeypatch):
    def cut(body):
        answer = completion('{"name": "Par')
        answer["choices"][0]["finish_reason"] = "length"
        return answer

    install(monkeypatch, cut)
    with pytest.raises(OutputValidationError, match="cut off by the model's output limit"):
        make_agent().run("Describe Paris", output_type=City)


def test_a_fenced_json_answer_is_read(monkeypatch):
    install(monkeypatch, lambda body: completion(f"```json\n{PARIS}\n```"))
    assert make_agent().run("Describe Paris", output_type=City)["output"].name == "Paris"


def test_a_server_without_json_schema_support_is_named_as_such(monkeypatch):
    refusal = {"error": {"message": "response_format of type json_schema is not supported", "type": "invalid_request_error", "param": "response_format", "code": None}}
    install(monkeypatch, lambda body: (400, refusal, {}))
    agent = make_agent()
    with pytest.raises(StructuredOutputUnsupportedError) as caught:
        agent.run("Describe Paris", session_id="s", output_type=City)
    assert isinstance(caught.value, BadRequestError) and caught.value.status_code == 400
    assert "does not support structured output" in str(caught.value) and "json_schema is not supported" in str(caught.value)
    [record] = agent.list_runs(session_id="s")
    assert record["status"] == "failed" and "StructuredOutputUnsupportedError" in record["error"]


def test_another_bad_request_stays_what_it_was(monkeypatch):
    other = {"error": {"message": "messages: too long", "type": "invalid_request_error", "param": "messages", "code": None}}
    install(monkeypatch, lambda body: (400, other, {}))
    with pytest.raises(BadRequestError) as caught:
        make_agent().run("Describe Paris", output_type=City)
    assert not isinstance(caught.value, StructuredOutputUnsupportedError)


def test_summary_calls_do_not_ask_for_the_runs_output_type(monkeypatch):
    def answer(body):
        if body["messages"][0]["content"].startswith("You write the running summary"):
            return echo(body)
        return completion(PARIS)

    http = install(monkeypatch, answer)
    agent = make_agent(agent_config={"memory_config": {"mode": "sliding_window", "value": 2, "summary": {"enabled": True}}})
    for question in ("one", "two", "three"):
        agent.run(question, session_id="s", output_type=City)
    agent.get_session_history("s")  # waits for the folds
    summaries = [b for b in http.sent if b["messages"][0]["content"].startswith("You write the running summary")]
    runs = [b for b in http.sent if b not in summaries]
    assert summaries and all("response_format" not in b for b in summaries)
    assert len(runs) == 3 and all(b["response_format"] == CITY_FORMAT for b in runs)


def test_a_paused_run_keeps_its_format_and_resume_reads_the_answer(monkeypatch):
    tools = ToolRegistry()

    @tools.register_tool(requires_approval=True)
    def census(city: str) -> int:
        """The population of a city (asks a person first)."""
        return 2100000

    call = {"id": "c1", "type": "function", "function": {"name": "census", "arguments": '{"city": "Paris"}'}}
    answers = [completion(None, [call]), completion(PARIS), completion(None, [{**call, "id": "c2"}]), completion(PARIS)]
    http = install(monkeypatch, answers)
    agent = make_agent(local_tools=tools)
    paused = agent.run("Describe Paris", session_id="s", output_type=City)
    assert paused["status"] == "awaiting_approval" and "output" not in paused
    agent.resolve_approval(paused["run_id"], "c1", True)
    resumed = agent.resume(paused["run_id"], output_type=City)
    assert resumed["output"] == City("Paris", 2100000, ["Louvre", "Eiffel Tower"])
    assert requests_with_format(http) == [CITY_FORMAT, CITY_FORMAT]

    again = agent.run("Again", session_id="s", output_type=City)
    agent.resolve_approval(again["run_id"], "c2", True)
    assert agent.resume(again["run_id"])["output"] == json.loads(PARIS)  # no type given: the stored schema, read as JSON
    assert requests_with_format(http)[2:] == [CITY_FORMAT, CITY_FORMAT]


def test_streamed_runs_ask_for_the_format_and_read_the_answer(monkeypatch):
    from helpers.fake_stream import Streamed, chunk, sse
    from helpers.fake_stream import install as install_stream

    body = sse([chunk(role="assistant", content=""), chunk(PARIS[:20]), chunk(PARIS[20:]), chunk(finish_reason="stop")])
    http = install_stream(monkeypatch, [Streamed(body)])
    agent = make_agent()
    with agent.stream("Describe Paris", session_id="s", output_type=City) as stream:
        list(stream)
    assert stream.result["output"] == City("Paris", 2100000, ["Louvre", "Eiffel Tower"])
    assert http.sent[0]["response_format"] == CITY_FORMAT and http.sent[0]["stream"] is True


def test_the_async_twin_takes_output_type(monkeypatch):
    install(monkeypatch, lambda body: completion(PARIS))

    async def main():
        async with aio.OmniCoreAgent(name="a", system_instruction="", model_config=make_agent().model_config) as agent:
            return await agent.run("Describe Paris", output_type=City)

    assert asyncio.run(main())["output"] == City("Paris", 2100000, ["Louvre", "Eiffel Tower"])


# --- what output_type accepts --------------------------------------------------------------


class Plain:
    pass


@pytest.mark.parametrize("bad", ["City", 3, {}, object, Plain])
def test_what_cannot_be_an_output_type_is_refused_before_any_call(monkeypatch, backend, bad):
    http = install(monkeypatch, lambda body: completion(PARIS))
    with pytest.raises(ConfigurationError, match="output_type"):
        make_agent().run("Describe Paris", output_type=bad)
    assert http.sent == []


def test_strict_only_when_the_schema_allows_it(backend):
    assert OutputType.of(Loose).response_format["json_schema"]["strict"] is False  # fields with defaults are not required
    assert OutputType.of(list[int]).response_format["json_schema"]["strict"] is False  # the root is not an object
    nested = {"type": "object", "properties": {"inner": {"type": "object", "properties": {"a": {"type": "string"}}, "required": []}}, "required": ["inner"], "additionalProperties": False}
    assert fits_strict_mode(nested) is False
    nested["properties"]["inner"].update(required=["a"], additionalProperties=False)
    assert fits_strict_mode(nested) is True


def test_a_pydantic_model_with_constraints(monkeypatch):
    pydantic = pytest.importorskip("pydantic")

    class Rating(pydantic.BaseModel):
        stars: int = pydantic.Field(ge=1, le=5)
        comment: str

    sent = OutputType.of(Rating).response_format
    assert sent["json_schema"]["name"] == "Rating" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"]["properties"]["stars"] == {"type": "integer", "minimum": 1, "maximum": 5}
    install(monkeypatch, [completion('{"stars": 4, "comment": "good"}'), completion('{"stars": 9, "comment": "wow"}')])
    agent = make_agent()
    assert agent.run("Rate it", session_id="s", output_type=Rating)["output"] == Rating(stars=4, comment="good")
    with pytest.raises(OutputValidationError, match="stars"):
        agent.run("Rate it again", session_id="s", output_type=Rating)
