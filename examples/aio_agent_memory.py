"""The reference page's example "A conversation the agent remembers", as printed there; only the import line changed."""

import asyncio
from omnisync.aio import OmniCoreAgent

async def main():
    agent = OmniCoreAgent(
        name="assistant",
        system_instruction="You are a helpful assistant. Answer in plain text, briefly.",
        model_config={"provider": "openai", "model": "gpt-5.4-mini"},
    )
    await agent.run("My project is called Atlas.", session_id="user_123")
    result = await agent.run("What is my project called?", session_id="user_123")
    print(result["response"])

    for message in await agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:60])
    await agent.cleanup()
asyncio.run(main())
