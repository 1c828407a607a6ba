"""The reference page's example "Long conversations: windows and summaries", as printed there; only the import line changed."""

import asyncio
from omnisync.aio import OmniCoreAgent

async def main():
    agent = OmniCoreAgent(
        name="assistant",
        system_instruction="You are a helpful assistant. Answer in plain text, in one short sentence.",
        model_config={"provider": "openai", "model": "gpt-5.4-mini"},
        agent_config={
            "memory_config": {
                "mode": "sliding_window",
                "value": 4,  # the run sees at most 4 messages of history
                "summary": {"enabled": True, "retention_policy": "keep"},
            }
        },
    )
    for message in [
        "My project is called Atlas.",
        "It ships on Friday.",
        "The team is Ada, Grace and Linus.",
        "Who is on the team, and what is the project called?",
    ]:
        result = await agent.run(message, session_id="user_123")
    print(result["response"])

    await asyncio.sleep(1)  # the summary is saved in the background
    for message in await agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:90].replace("\n", " "))
    await agent.cleanup()

asyncio.run(main())
