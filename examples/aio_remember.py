"""The reference page's example "Keep it across restarts", as printed there; only the import line changed."""

import asyncio
import os
import sys

os.environ.setdefault("DATABASE_URL", "sqlite:///./memory.db")

from omnisync.aio import MemoryRouter, OmniCoreAgent

async def main(message: str):
    agent = OmniCoreAgent(
        name="assistant",
        system_instruction="You are a helpful assistant. Answer in plain text, briefly.",
        model_config={"provider": "openai", "model": "gpt-5.4-mini"},
        memory_router=MemoryRouter("sql"),
    )
    result = await agent.run(message, session_id="user_123")
    print(result["response"])
    await agent.cleanup()
asyncio.run(main(sys.argv[1]))
