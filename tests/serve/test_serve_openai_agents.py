"""The OpenAI Agents SDK against ``omnisync serve``: an agent with a function tool and an
``OpenAIConversationsSession``, both on the served ``/v1`` API, for two turns.

The SDK keeps the conversation in the server's Conversations API and sends each model call
the whole history (with its tool calls and their results); the upstream is the scripted model.
"""

from __future__ import annotations

import asyncio

import openai
import pytest

pytest.importorskip("agents", reason="openai-agents is not installed (the test-agents extra; the lowest session leaves it out: it needs pydantic>=2.12.2)")

from agents import Agent, OpenAIConversationsSession, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled  # noqa: E402
from test_serve_openai import TOKEN, model_url, router, sent, served, user_texts  # noqa: E402, F401  (fixtures)

set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"rainy in {city}"


def test_an_agents_sdk_agent_with_a_tool_holds_a_conversation_session(served, sent):  # noqa: F811  (the imported fixtures)
    async def two_turns() -> tuple[str, str, list[str]]:
        client = openai.AsyncOpenAI(base_url=served.base + "/v1", api_key=TOKEN, max_retries=0)
        agent = Agent(name="helper", instructions="Be brief.", tools=[get_weather], model=OpenAIResponsesModel(model=served.name, openai_client=client))
        session = OpenAIConversationsSession(openai_client=client)
        first = await Runner.run(agent, 'use get_weather({"city": "Oslo"})', session=session)
        second = await Runner.run(agent, "what did I ask?", session=session)
        kinds = [item.get("type", "message") for item in await session.get_items()]
        await client.close()
        return first.final_output, second.final_output, kinds

    first, second, kinds = asyncio.run(two_turns())
    assert (first, second) == ("Done: rainy in Oslo", "echo: what did I ask?")
    assert kinds == ["message", "function_call", "function_call_output", "message", "message", "message"]
    assert user_texts(sent[-1]) == ['use get_weather({"city": "Oslo"})', "what did I ask?"]  # the second turn was given the first
    assert any(m["role"] == "tool" and m["content"] == "rainy in Oslo" for m in sent[-1]["messages"])
