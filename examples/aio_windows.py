"""The reference page's example "Long conversations: windows and summaries", as printed there; only the import line changed
(and, as in every example, the model and its output limit come from the environment). No sleep before reading the history:
it waits for a pending summary."""

import asyncio
import os
from omnisync.aio import OmniCoreAgent

# Any OpenAI-compatible server: OPENAI_BASE_URL, and OMNISYNC_MODEL / OMNISYNC_MAX_TOKENS (see the README).
MODEL = os.environ.get("OMNISYNC_MODEL", "gpt-5.4-mini")
# On a server of your own, a modest output limit: a small local model may write until its context is full.
LOCAL_LIMIT = 128 if os.environ.get("OPENAI_BASE_URL") else None
MAX_TOKENS = int(os.environ["OMNISYNC_MAX_TOKENS"]) if os.environ.get("OMNISYNC_MAX_TOKENS") else LOCAL_LIMIT


async def main():
    agent = OmniCoreAgent(
        name="assistant",
        system_instruction="You are a helpful assistant. Answer in plain text, in one short sentence.",
        model_config={"provider": "openai", "model": MODEL, "max_tokens": MAX_TOKENS},
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

    # no sleep needed: reading the history waits for a pending summary
    for message in await agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:90].replace("\n", " "))
    await agent.cleanup()

asyncio.run(main())
