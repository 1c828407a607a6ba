"""The streamed example with omnisync.aio: `async for` inside a running event loop."""

import asyncio
import os

from omnisync.aio import OmniCoreAgent
from omnisync.run_events import RunFinished, TextDelta


# Any OpenAI-compatible server: OPENAI_BASE_URL, and OMNISYNC_MODEL / OMNISYNC_MAX_TOKENS (see the README).
MODEL = os.environ.get("OMNISYNC_MODEL", "gpt-5.4-mini")
# On a server of your own, a modest output limit: a small local model may write until its context is full.
LOCAL_LIMIT = 128 if os.environ.get("OPENAI_BASE_URL") else None
MAX_TOKENS = int(os.environ["OMNISYNC_MAX_TOKENS"]) if os.environ.get("OMNISYNC_MAX_TOKENS") else LOCAL_LIMIT


async def main() -> None:
    agent = OmniCoreAgent(
        name="assistant",
        system_instruction="You are a helpful assistant. Answer in plain text, briefly.",
        model_config={"provider": "openai", "model": MODEL, "max_tokens": MAX_TOKENS},
    )
    for question in ["My project is called Atlas.", "What is my project called?"]:
        async with agent.stream(question, session_id="user_123") as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    print(event.text, end="", flush=True)
                elif isinstance(event, RunFinished):
                    print(f"\n[{event.result['status']}]")

    for message in await agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:60])
    await agent.cleanup()


asyncio.run(main())
