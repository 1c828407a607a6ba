"""The reference page's example "A conversation the agent remembers", as printed there; only the import line changed
(and, as in every example, the model and its output limit come from the environment)."""

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
        system_instruction="You are a helpful assistant. Answer in plain text, briefly.",
        model_config={"provider": "openai", "model": MODEL, "max_tokens": MAX_TOKENS},
    )
    await agent.run("My project is called Atlas.", session_id="user_123")
    result = await agent.run("What is my project called?", session_id="user_123")
    print(result["response"])

    for message in await agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:60])
    await agent.cleanup()
asyncio.run(main())
