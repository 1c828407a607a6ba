"""OpenAI's Conversations and Responses API, served: the official ``openai`` client against ``omnisync serve``.

The upstream model is cassettes/scripted_model.py (it echoes the last user message), its
requests recorded, so "remembers" is checked on what the model was sent. Every JSON answer
of the ``/v1`` routes is validated against OpenAI's published schemas (tests/openapi_spec/).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid

import openai
import pydantic
import pytest
import requests
from helpers.backend_routers import BACKENDS, open_router
from helpers.openapi import OpenAPI
from helpers.serve_servers import scripted_model, scripted_model_server, uvicorn_server
from helpers.tool_agents import gated_agent

from omnisync import MemoryRouter, OmniCoreAgent
from omnisync.serve import create_app

TOKEN = "token-for-the-openai-tests-0123"
OTHER_TOKEN = "token-for-another-agent-012345"
GATE = threading.Event()
SCHEMAS = OpenAPI()


@pytest.fixture(scope="module")
def model_url():
    with scripted_model_server() as url:
        yield url


@pytest.fixture
def sent(monkeypatch):
    """Every request body the upstream model got, in order."""
    bodies: list[dict] = []
    answer = scripted_model.answer

    def recording(body):
        bodies.append(body)
        return answer(body)

    monkeypatch.setattr(scripted_model, "answer", recording)
    return bodies


def make_agent(name: str, model_url: str, router: MemoryRouter | None) -> OmniCoreAgent:
    return gated_agent(name, model_url, router, GATE)


class Served:
    """A server of one agent (``name``) on ``router``, restartable: a new app and new agent objects on the same store."""

    def __init__(self, name: str, model_url: str, router: MemoryRouter) -> None:
        self.name, self.model_url, self.router = name, model_url, router
        self._server = None
        self._clients: list[openai.OpenAI] = []
        self.base = ""

    def start(self) -> None:
        agents = {self.name: make_agent(self.name, self.model_url, self.router), "other": make_agent(f"{self.name}-other", self.model_url, self.router)}
        self._agents = agents
        self._server = uvicorn_server(create_app(agents, tokens={TOKEN: [self.name], OTHER_TOKEN: ["other"]}))
        self.base = self._server.__enter__()

    def stop(self) -> None:
        while self._clients:
            self._clients.pop().close()
        self._server.__exit__(None, None, None)
        for agent in self._agents.values():
            agent.cleanup()

    def client(self, token: str = TOKEN) -> openai.OpenAI:
        client = openai.OpenAI(base_url=self.base + "/v1", api_key=token, max_retries=0, timeout=30)
        self._clients.append(client)
        return client

    def raw(self, method: str, path: str, token: str = TOKEN, **options) -> requests.Response:
        return requests.request(method, self.base + path, headers={"Authorization": f"Bearer {token}"}, timeout=30, **options)


@pytest.fixture(params=BACKENDS)
def router(request, tmp_path, monkeypatch):
    yield from open_router(request.param, tmp_path, monkeypatch)


@pytest.fixture
def served(router, model_url):
    GATE.clear()
    server = Served(f"oai-{uuid.uuid4().hex[:10]}", model_url, router)
    server.start()
    yield server
    GATE.set()
    server.stop()


@pytest.fixture
def in_memory(model_url):
    GATE.clear()
    router = MemoryRouter("in_memory")
    server = Served(f"oai-{uuid.uuid4().hex[:10]}", model_url, router)
    server.start()
    yield server
    GATE.set()
    server.stop()
    router.close()


def valid(schema: str, document: object) -> object:
    problems = SCHEMAS.errors(schema, document)
    assert not problems, (schema, problems[:5], document)
    return document


def user_texts(body: dict) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in body["messages"] if m["role"] == "user"]


def test_a_conversation_remembers_its_responses_across_a_restart(served, sent):
    client = served.client()
    conversation = client.conversations.create(metadata={"topic": "names"}, items=[{"type": "message", "role": "user", "content": "hello there"}])
    valid("ConversationResource", served.raw("GET", f"/v1/conversations/{conversation.id}").json())

    raw = client.responses.with_raw_response.create(model=served.name, conversation=conversation.id, input="my name is Ada")
    first = raw.parse()
    valid("Response", raw.http_response.json())
    assert first.status == "completed" and first.output_text == "echo: my name is Ada"
    assert first.conversation is not None and first.conversation.id == conversation.id

    served.stop()  # a new process would have only the store: so does the new server
    served.start()
    client = served.client()
    second = client.responses.create(model=served.name, conversation={"id": conversation.id}, input="what is my name?")
    assert second.output_text == "echo: what is my name?"
    assert user_texts(sent[-1]) == ["hello there", "my name is Ada", "what is my name?"]
    assert {"role": "assistant", "content": "echo: my name is Ada"}.items() <= next(m for m in sent[-1]["messages"] if m["role"] == "assistant").items()

    listed = served.raw("GET", f"/v1/conversations/{conversation.id}/items", params={"order": "asc", "limit": 3}).json()
    valid("ConversationItemList", listed)
    assert [(i["type"], i["role"]) for i in listed["data"]] == [("message", "user"), ("message", "user"), ("message", "assistant")]
    assert listed["has_more"] is True
    rest = client.conversations.items.list(conversation.id, order="asc", after=listed["last_id"])
    assert [i.content[0].text for i in rest.data] == ["what is my name?", "echo: what is my name?"]
    newest = client.conversations.items.list(conversation.id, limit=1)
    assert newest.data[0].content[0].text == "echo: what is my name?"

    item = valid("ConversationItem", served.raw("GET", f"/v1/conversations/{conversation.id}/items/{listed['data'][1]['id']}").json())
    assert item["content"][0]["text"] == "my name is Ada"
    added = client.conversations.items.create(conversation.id, items=[{"type": "message", "role": "user", "content": "a note"}])
    assert [i.content[0].text for i in added.data] == ["a note"]

    updated = client.conversations.update(conversation.id, metadata={"topic": "renamed"})
    assert client.conversations.retrieve(conversation.id).metadata == updated.metadata == {"topic": "renamed"}

    after_delete = served.raw("DELETE", f"/v1/conversations/{conversation.id}/items/{added.data[0].id}").json()
    assert valid("ConversationResource", after_delete)["id"] == conversation.id
    assert [i.content[0].text for i in client.conversations.items.list(conversation.id).data][:2] == ["echo: what is my name?", "what is my name?"]
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.delete(added.data[0].id, conversation_id=conversation.id)
    client.conversations.items.delete(listed["data"][0]["id"], conversation_id=conversation.id)
    third = client.responses.create(model=served.name, conversation=conversation.id, input="and now?")
    assert third.output_text == "echo: and now?" and user_texts(sent[-1]) == ["my name is Ada", "what is my name?", "and now?"]  # the deleted are not sent

    deleted = served.raw("DELETE", f"/v1/conversations/{conversation.id}").json()
    assert valid("DeletedConversationResource", deleted)["deleted"] is True
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation.id)


def test_previous_response_id_continues_its_session_across_a_restart(served, sent):
    client = served.client()
    first = client.responses.create(model=served.name, input="I like tea", instructions="Answer briefly.", temperature=0.25, max_output_tokens=64)
    assert sent[-1]["temperature"] == 0.25 and 64 in (sent[-1].get("max_tokens"), sent[-1].get("max_completion_tokens"))
    assert sent[-1]["messages"][0]["role"] == "system" and sent[-1]["messages"][0]["content"].endswith("Answer briefly.")
    assert first.instructions == "Answer briefly." and first.temperature == 0.25 and first.max_output_tokens == 64

    served.stop()
    served.start()
    client = served.client()
    raw = client.responses.with_raw_response.create(model=served.name, input=[{"role": "user", "content": "what do I like?"}], previous_response_id=first.id)
    second = raw.parse()
    assert user_texts(sent[-1]) == ["I like tea", "what do I like?"]
    assert "temperature" not in sent[-1]  # each response's own options: none carried over
    assert second.previous_response_id == first.id

    fetched = served.raw("GET", f"/v1/responses/{second.id}").json()
    valid("Response", fetched)
    assert fetched["output"] == raw.http_response.json()["output"]
    inputs = served.raw("GET", f"/v1/responses/{second.id}/input_items").json()
    valid("ResponseItemList", inputs)
    assert inputs["data"][0]["content"][0]["text"] == "what do I like?"

    assert client.responses.delete(first.id) is None
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)


def test_models_are_the_tokens_agents_and_other_agents_do_not_exist(served):
    models = served.raw("GET", "/v1/models").json()
    assert [m["id"] for m in valid("ListModelsResponse", models)["data"]] == [served.name]
    first = served.client().responses.create(model=served.name, input="mine")
    other = served.client(OTHER_TOKEN)
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError) as refused:
        other.responses.create(model=served.name, input="not yours")
    assert refused.value.body["param"] == "model"


def test_a_streamed_response_is_the_responses_event_stream(in_memory, sent):
    client = in_memory.client()
    with client.responses.stream(model=in_memory.name, input="stream this please") as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert final.output_text == "echo: stream this please"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "echo: stream this please"
    assert sent[-1]["stream"] is True

    with in_memory.raw("POST", "/v1/responses", json={"model": in_memory.name, "input": "stream this please", "stream": True}, stream=True) as answer:
        raw_events = [json.loads(line[len("data: "):]) for line in answer.iter_lines(decode_unicode=True) if line.startswith("data: ")]
    assert [e["type"] for e in raw_events] == kinds
    for event in raw_events:
        valid("ResponseStreamEvent", event)


def test_the_agents_own_tools_run_on_the_server_and_show_as_mcp_calls(in_memory):
    raw = in_memory.client().responses.with_raw_response.create(model=in_memory.name, input='use lookup({"city": "Oslo"})')
    valid("Response", raw.http_response.json())
    response = raw.parse()
    calls = [item for item in response.output if item.type == "mcp_call"]
    assert [(c.name, c.output, c.server_label) for c in calls] == [("lookup", "sunny in Oslo", in_memory.name)]
    assert response.output_text == "Done: sunny in Oslo"


def test_an_approval_is_an_incomplete_response_that_says_so_and_the_run_goes_on_once_decided(in_memory):
    answer = in_memory.raw("POST", "/v1/responses", json={"model": in_memory.name, "input": 'use delete_file({"path": "/tmp/x"})'}).json()
    assert valid("Response", answer)["status"] == "incomplete"
    waiting = answer["omnisync"]
    assert waiting["status"] == "awaiting_approval" and [a["tool"] for a in waiting["approvals"]] == ["delete_file"]
    run = f"/agents/{in_memory.name}/runs/{waiting['run_id']}"
    assert in_memory.raw("POST", run + "/approvals", json={"call_id": waiting["approvals"][0]["id"], "approved": True}).status_code == 200
    assert in_memory.raw("POST", run + "/resume", json={}).json()["status"] == "completed"
    done = in_memory.client().responses.retrieve(answer["id"])
    assert done.status == "completed" and done.output_text == "Done: deleted /tmp/x"


class City(pydantic.BaseModel):
    city: str


def test_structured_output_is_parsed_by_responses_parse(in_memory, sent):
    parsed = in_memory.client().responses.parse(model=in_memory.name, input='answer {"city": "Paris"}', text_format=City)
    assert parsed.output_parsed == City(city="Paris")
    assert sent[-1]["response_format"]["type"] == "json_schema"


def test_a_background_response_is_polled_and_cancelled(in_memory):
    client = in_memory.client()
    started = client.responses.create(model=in_memory.name, input="use wait({})", background=True)
    assert started.status == "in_progress" and started.background is True
    assert client.responses.retrieve(started.id).status == "in_progress"
    threading.Timer(0.5, GATE.set).start()  # the tool returns; the run stops at its next step
    cancelled = client.responses.cancel(started.id)
    assert cancelled.status == "cancelled"
    assert client.responses.retrieve(started.id).status == "cancelled"


def test_a_background_response_is_polled_until_it_completes(in_memory):
    client = in_memory.client()
    started = client.responses.create(model=in_memory.name, input="later", background=True)
    deadline = time.monotonic() + 20
    while (polled := client.responses.retrieve(started.id)).status == "in_progress" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert polled.status == "completed" and polled.output_text == "echo: later"


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"reasoning": {"effort": "low"}}, "reasoning"),
        ({"no_such_field": 1}, "no_such_field"),
        ({"input": [{"type": "reasoning", "summary": []}]}, "input[0].type"),
        ({"text": {"format": {"type": "json_object"}}}, "text.format"),
        ({"temperature": 3}, "temperature"),
    ],
)
def test_what_is_not_supported_is_a_400_naming_the_field(in_memory, extra, param):
    answer = in_memory.raw("POST", "/v1/responses", json={"model": in_memory.name, "input": "hi", **extra})
    assert answer.status_code == 400, answer.text
    assert valid("ErrorResponse", answer.json())["error"]["param"] == param


def test_without_a_token_the_answer_is_401_in_openais_shape(in_memory):
    with pytest.raises(openai.AuthenticationError):
        in_memory.client("wrong-token-0123456789abcdef").models.list()
    answer = requests.get(in_memory.base + "/v1/models", timeout=10)
    assert answer.status_code == 401 and valid("ErrorResponse", answer.json())


def test_the_async_client_holds_a_conversation(in_memory, sent):
    async def talk() -> list[str]:
        client = openai.AsyncOpenAI(base_url=in_memory.base + "/v1", api_key=TOKEN, max_retries=0)
        conversation = await client.conversations.create()
        texts = []
        for text in ("one", "two"):
            response = await client.responses.create(model=in_memory.name, conversation=conversation.id, input=text)
            texts.append(response.output_text)
        await client.close()
        return texts

    assert asyncio.run(talk()) == ["echo: one", "echo: two"]
    assert user_texts(sent[-1]) == ["one", "two"]


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_a_function_tool_round_trip_through_previous_response_id(served, sent):
    client = served.client()
    raw = client.responses.with_raw_response.create(model=served.name, input='use get_weather({"city": "Oslo"})', tools=[WEATHER_TOOL])
    valid("Response", raw.http_response.json())
    first = raw.parse()
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Oslo"})]
    assert first.status == "completed" and sent[-1]["tools"][-1]["function"]["name"] == "get_weather"

    served.stop()  # the client ran its tool meanwhile; a restarted server picks up from the store
    served.start()
    client = served.client()
    output = {"type": "function_call_output", "call_id": calls[0].call_id, "output": "rainy, 7 C"}
    second = client.responses.create(model=served.name, previous_response_id=first.id, input=[output], tools=[WEATHER_TOOL])
    assert second.output_text == "Done: rainy, 7 C"
    assert [m["role"] for m in sent[-1]["messages"]][-3:] == ["user", "assistant", "tool"]
    assert client.responses.retrieve(first.id).output[0].type == "function_call"  # the first response's output stays its own
    inputs = valid("ResponseItemList", served.raw("GET", f"/v1/responses/{second.id}/input_items").json())
    assert inputs["data"][0]["type"] == "function_call_output"


def test_a_function_tool_round_trip_in_a_conversation_streamed(in_memory, sent):
    client = in_memory.client()
    conversation = client.conversations.create()
    with client.responses.stream(model=in_memory.name, conversation=conversation.id, input='use get_weather({"city": "Rome"})', tools=[WEATHER_TOOL]) as stream:
        kinds = [event.type for event in stream]
        first = stream.get_final_response()
    assert "response.function_call_arguments.delta" in kinds
    with in_memory.raw("POST", "/v1/responses", json={"model": in_memory.name, "input": 'use get_weather({"city": "Bern"})', "tools": [WEATHER_TOOL], "stream": True}, stream=True) as answer:
        for line in answer.iter_lines(decode_unicode=True):
            if line.startswith("data: "):
                valid("ResponseStreamEvent", json.loads(line[len("data: "):]))
    call = next(item for item in first.output if item.type == "function_call")
    second = client.responses.create(
        model=in_memory.name, conversation=conversation.id, input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}], tools=[WEATHER_TOOL]
    )
    assert second.output_text == "Done: sunny"
    items = client.conversations.items.list(conversation.id, order="asc").data
    assert [item.type for item in items] == ["message", "function_call", "function_call_output", "message"]


def test_a_tool_named_like_the_agents_own_is_refused(in_memory):
    answer = in_memory.raw("POST", "/v1/responses", json={"model": in_memory.name, "input": "hi", "tools": [{**WEATHER_TOOL, "name": "lookup"}]})
    assert answer.status_code == 400 and valid("ErrorResponse", answer.json())["error"]["param"] == "tools[0].name"


def test_previous_response_id_of_an_earlier_response_branches_and_leaves_the_later_turns_be(served, sent):
    client = served.client()
    first = client.responses.create(model=served.name, input="first")
    second = client.responses.create(model=served.name, previous_response_id=first.id, input="second")
    branched = client.responses.create(model=served.name, previous_response_id=first.id, input="instead")
    assert user_texts(sent[-1]) == ["first", "instead"]
    client.responses.create(model=served.name, previous_response_id=second.id, input="third")
    assert user_texts(sent[-1]) == ["first", "second", "third"]
    client.responses.create(model=served.name, previous_response_id=branched.id, input="more")
    assert user_texts(sent[-1]) == ["first", "instead", "more"]


def test_a_background_response_may_be_streamed(in_memory):
    stream = in_memory.client().responses.create(model=in_memory.name, input="both", background=True, stream=True)
    kinds = [event.type for event in stream]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"


def test_items_page_oldest_first_a_page_of_messages_at_a_time_and_newest_first_alike(in_memory):
    client = in_memory.client()
    conversation = client.conversations.create(items=[{"type": "message", "role": "user", "content": f"note {n}"} for n in range(20)])
    client.conversations.items.create(conversation.id, items=[{"type": "message", "role": "assistant", "content": f"reply {n}"} for n in range(15)])
    oldest_first = [item.content[0].text for item in client.conversations.items.list(conversation.id, order="asc", limit=7)]  # every page
    newest_first = [item.content[0].text for item in client.conversations.items.list(conversation.id, order="desc", limit=9)]
    assert oldest_first == [f"note {n}" for n in range(20)] + [f"reply {n}" for n in range(15)] == newest_first[::-1]
    bad = in_memory.raw("GET", f"/v1/conversations/{conversation.id}/items", params={"order": "asc", "after": "msg_999999"})
    assert bad.status_code == 400 and valid("ErrorResponse", bad.json())["error"]["param"] == "after"
