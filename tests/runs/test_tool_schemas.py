"""Tool schemas and argument checks, each run twice: with pydantic, and with the hand-written subset."""

import dataclasses
import enum
import json
import os
import sys
import typing
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator

from omnisync.errors import ConfigurationError
from omnisync.tools import ToolRegistry, signature
from helpers.agent_helpers import make_agent
from helpers.fake_http import completion, install
from helpers.openapi import openapi_or_skip

try:  # pydantic reads only typing_extensions' TypedDict before Python 3.12
    from typing_extensions import TypedDict
except ImportError:
    from typing import TypedDict


class Color(str, enum.Enum):
    RED = "red"
    BLUE = "blue"


class Priority(enum.Enum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class _Street(TypedDict):
    street: str


class Address(_Street, total=False):
    zip: str


@dataclasses.dataclass
class Node:
    name: str
    children: "list[Node]"


def pydantic_or_skip():
    """Skip without pydantic, except under CI, where the test extra must have installed it."""
    if signature.load_pydantic() is None:
        reason = "pydantic is not installed (pip install 'omnisync[pydantic]')"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.fixture(params=["pydantic", "subset"])
def mode(request, monkeypatch):
    """pydantic describes the parameters, or (pydantic hidden from omnisync) the hand-written subset does."""
    if request.param == "subset":
        monkeypatch.setattr(signature, "load_pydantic", lambda: None)
    else:
        pydantic_or_skip()
    return request.param


def register(function, name=None):
    tools = ToolRegistry()
    tools.register_tool(name)(function)
    return tools.get(name or function.__name__)


def probe(hint):
    """A tool ``probe(value: hint)`` and the list of every value it received."""
    received = []

    def probe(value):
        received.append(value)
        return "ok"

    probe.__annotations__ = {"value": hint}
    return register(probe), received


# hint, [(JSON the model may send, the value the function must receive, whether that JSON fits the schema as sent)],
# JSON values that must be refused
CASES = {
    "int": (int, [("7", 7, True), ("4.0", 4, True), ('"2"', 2, False)], ["two", [1], None, 2.5]),
    "float": (float, [("2.5", 2.5, True), ("1", 1.0, True), ('"2.5"', 2.5, False)], ["x", {}]),
    "str": (str, [('"a"', "a", True), ("5", "5", False)], [[], None, {}]),
    "bool": (bool, [("true", True, True), ('"false"', False, False)], ["maybe", [], None]),
    "union": (int | str, [("3", 3, True), ('"3"', "3", True), ('"x"', "x", True)], [[], {}, None]),
    "typing.Union": (typing.Union[int, list[int]], [("1", 1, True), ('["1", 2]', [1, 2], False)], ["x", {}]),
    "optional": (Optional[int], [("null", None, True), ('"4"', 4, False)], ["x", []]),
    "literal": (Literal["a", "b"], [('"a"', "a", True)], ["c", 1, None]),
    "str enum": (Color, [('"red"', Color.RED, True)], ["green", 1]),
    "int enum": (Priority, [("2", Priority.HIGH, True)], [3, "high"]),
    "list": (list[int], [("[1, 2]", [1, 2], True), ("[]", [], True), ('["1"]', [1], False)], ["1", ["x"], {}]),
    "bare list": (list, [('[1, "a"]', [1, "a"], True)], ["a", {}]),
    "set": (set[str], [('["a", "b"]', {"a", "b"}, True), ('["a", "a"]', {"a"}, False)], ["a", [[]]]),
    "tuple": (tuple[int, str], [('[1, "a"]', (1, "a"), True)], [[1], [1, "a", 2], ["x", "a"]]),
    "Sequence": (Sequence[int], [("[1, 2]", [1, 2], True)], ["1", {}]),
    "Mapping": (Mapping[str, bool], [('{"a": true}', {"a": True}, True)], [{"a": []}, []]),
    "dict": (dict[str, int], [('{"a": 1}', {"a": 1}, True), ('{"a": "1"}', {"a": 1}, False)], [{"a": "x"}, [], "a"]),
    "dataclass": (Point, [('{"x": 1, "y": 2}', Point(1, 2), True), ('{"x": "1"}', Point(1, 0), False)], [{"y": 1}, {"x": 1, "z": 2}, "p"]),
    "TypedDict": (
        Address,
        [('{"street": "Main"}', {"street": "Main"}, True), ('{"street": "a", "zip": "1"}', {"street": "a", "zip": "1"}, True)],
        [{}, {"street": []}, {"street": "a", "city": "b"}],
    ),
    "list of dataclasses": (list[Point], [('[{"x": 1}]', [Point(1, 0)], True)], [[{"x": "a"}], [1]]),
    "optional TypedDict": (Optional[Address], [("null", None, True), ('{"street": "s"}', {"street": "s"}, True)], [{"zip": "1"}, 1]),
    "any": (Any, [('{"k": [1]}', {"k": [1]}, True), ("null", None, True)], []),
}


@pytest.mark.parametrize("case", CASES)
def test_schema_is_a_valid_function_tool(mode, case):
    hint, _, _ = CASES[case]
    tool, _ = probe(hint)
    assert tool.signature.backend == mode
    problems = openapi_or_skip().errors("ChatCompletionTool", tool.schema())
    assert not problems, problems
    Draft202012Validator.check_schema(tool.parameters)  # FunctionParameters is a JSON schema object
    assert tool.parameters["type"] == "object" and tool.parameters["required"] == ["value"]
    assert tool.parameters["additionalProperties"] is False


@pytest.mark.parametrize("case", CASES)
def test_accepted_arguments_arrive_coerced(mode, case):
    hint, accepted, _ = CASES[case]
    tool, received = probe(hint)
    validator = Draft202012Validator(tool.parameters)
    for sent, expected, fits in accepted:
        assert tool.call(f'{{"value": {sent}}}') == "ok", sent
        assert received[-1] == expected and type(received[-1]) is type(expected), sent
        assert validator.is_valid({"value": json.loads(sent)}) is fits, sent


@pytest.mark.parametrize("case", CASES)
def test_refused_arguments_fail_the_schema_and_the_check(mode, case):
    hint, _, refused = CASES[case]
    tool, received = probe(hint)
    validator = Draft202012Validator(tool.parameters)
    for value in refused:
        assert not validator.is_valid({"value": value}), value  # what the model was told excludes it
        result = tool.call({"value": value})
        assert result.startswith("Error: the arguments do not fit probe(value: "), result
        assert result.split("): ", 1)[1].startswith("value"), result  # the message says where it went wrong
    assert received == []


def test_add_receives_integers(mode):
    def add(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    tool = register(add)
    assert tool.call('{"x": "2", "y": "3"}') == "5"
    assert tool.call({"x": 2, "y": "3"}) == "5"  # arguments some servers send as an object
    problem = {  # as the README shows them
        "pydantic": "x: Input should be a valid integer, unable to parse string as an integer (got 'two')",
        "subset": "x: expected an integer (got 'two')",
    }[mode]
    assert tool.call({"x": "two", "y": 3}) == f"Error: the arguments do not fit add(x: integer, y: integer): {problem}"


def test_missing_and_unknown_arguments_are_named(mode):
    def lookup(city: str, days: int = 1) -> str:
        return city

    tool = register(lookup)
    assert tool.call({}) == "Error: the arguments do not fit lookup(city: string, days: integer): missing a required argument: 'city'"
    assert tool.call({"city": "Rome", "town": "x"}).endswith(": 'town' is not a parameter")
    assert tool.call(None).endswith("missing a required argument: 'city'")
    assert tool.call("[1]") == "Error: the arguments for lookup must be a JSON object, not list."


def test_a_mismatch_nested_deep_says_where(mode):
    tool, _ = probe(list[Point])
    result = tool.call({"value": [{"x": 1}, {"x": "a"}]})
    assert "value.1.x: " in result and "'a'" in result


def test_defaults_stay_the_functions_own(mode):
    def greet(name: str, greeting: str = "hello", *, times: int = 1, punctuation: Optional[str] = None) -> str:
        return f"{greeting} {name}" * times + (punctuation or "")

    tool = register(greet)
    assert tool.parameters["required"] == ["name"]
    assert tool.call({"name": "Ada"}) == "hello Ada"
    assert tool.call({"name": "Ada", "times": "2", "punctuation": None}) == "hello Adahello Ada"


def test_positional_only_and_variadic_parameters(mode):
    def scale(value: float, factor: float = 2.0, /, *rest: int, **options: str) -> float:
        return value * factor

    tool = register(scale)
    assert list(tool.parameters["properties"]) == ["value", "factor"]
    assert tool.call({"value": "1.5"}) == "3.0"
    assert tool.call({"value": 1, "factor": 3}) == "3.0"


def test_an_error_inside_the_tool_is_not_an_argument_error(mode):
    def divide(a: int, b: int) -> float:
        return a / b

    assert register(divide).call({"a": 1, "b": "0"}) == "Error: divide raised ZeroDivisionError: division by zero"


def test_unannotated_parameters_take_any_json(mode):
    def echo(value, count: int = 1):  # noqa: ANN001, ANN202
        return [value] * count

    tool = register(echo)
    assert tool.parameters["properties"]["value"] == {}
    assert tool.call({"value": {"a": [1]}, "count": "2"}) == '[{"a": [1]}, {"a": [1]}]'


def test_the_subset_names_what_it_cannot_describe_and_the_way_out(monkeypatch):
    monkeypatch.setattr(signature, "load_pydantic", lambda: None)

    def when(moment: datetime) -> str:
        return moment.isoformat()

    with pytest.raises(ConfigurationError, match=r"datetime is not in the built-in subset .*pip install 'omnisync\[pydantic\]'"):
        register(when)
    with pytest.raises(ConfigurationError, match="Node refers to itself; recursive types need pydantic"):
        probe(Node)


def test_pydantic_covers_more_than_the_subset():
    pydantic_or_skip()

    def when(moment: datetime) -> str:
        return moment.isoformat()

    tool = register(when)
    assert tool.parameters["properties"]["moment"] == {"type": "string", "format": "date-time"}
    assert tool.call({"moment": "2026-12-03T09:00:00"}) == "2026-12-03T09:00:00"
    tree, received = probe(Node)
    assert "$defs" in tree.parameters and not openapi_or_skip().errors("ChatCompletionTool", tree.schema())
    assert tree.call({"value": {"name": "a", "children": [{"name": "b", "children": []}]}}) == "ok"
    assert received == [Node("a", [Node("b", [])])]


def test_stdlib_typeddict_works_on_every_python(mode):
    class Stdlib(typing.TypedDict):
        n: int

    tool, received = probe(Stdlib)
    assert tool.call({"value": {"n": "1"}}) == "ok" and received == [{"n": 1}]
    if mode == "pydantic" and sys.version_info < (3, 12):
        assert tool.signature.backend == "subset"  # pydantic refuses typing.TypedDict there; the subset takes it


def test_generated_titles_are_left_out_but_a_field_called_title_stays(mode):
    class Book(TypedDict):
        title: str

    tool, _ = probe(Book)
    text = repr(tool.parameters)
    assert "'title': {'type': 'string'}" in text and "'title': 'Book'" not in text


def test_schemas_do_not_depend_on_what_is_installed_for_plain_hints(monkeypatch):
    def search(query: str, limit: int = 5, tags: Optional[list[str]] = None, exact: bool = False) -> list[str]:
        """Search the notes."""
        return []

    with_whatever_is_installed = register(search).schema()
    monkeypatch.setattr(signature, "load_pydantic", lambda: None)
    assert register(search).schema() == with_whatever_is_installed


@pytest.mark.parametrize("name", ["has space", "x" * 65, "dots.not.allowed", "ünïcode"])
def test_tool_names_the_api_would_refuse_are_refused_at_registration(name):
    def tool() -> str:
        return "x"

    with pytest.raises(ConfigurationError, match="letters, digits, underscores or dashes"):
        ToolRegistry().register_tool(name=name)(tool)


def test_a_run_hands_the_tool_integers_and_the_model_gets_the_sum(monkeypatch):
    received = []
    tools = ToolRegistry()

    @tools.register_tool()
    def add(x: int, y: int) -> int:
        """Add two integers."""
        received.append((x, y))
        return x + y

    call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"x": "2", "y": "3"}'}}
    http = install(monkeypatch, [completion(None, tool_calls=[call]), completion("5")])
    with make_agent(local_tools=tools) as agent:
        result = agent.run("2 + 3?", session_id="sum")
    assert result["response"] == "5" and received == [(2, 3)]
    assert http.sent[0]["tools"] == tools.schemas()
    assert http.sent[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}


def test_pydantic_models_and_field_constraints_reach_the_schema_and_the_check():
    pydantic_or_skip()
    from pydantic import BaseModel, Field

    class Order(BaseModel):
        item: str
        quantity: int = 1

    def place(order: Order, copies: typing.Annotated[int, Field(description="How many copies", ge=1)] = 1) -> str:
        return f"{copies} x {order.quantity} {order.item}"

    tool = register(place)
    assert tool.parameters["properties"]["copies"] == {"type": "integer", "description": "How many copies", "minimum": 1}
    assert not openapi_or_skip().errors("ChatCompletionTool", tool.schema())
    assert tool.call({"order": {"item": "tea", "quantity": "2"}, "copies": "3"}) == "3 x 2 tea"
    assert tool.call({"order": {"item": "tea"}, "copies": 0}).endswith("copies: Input should be greater than or equal to 1 (got 0)")
