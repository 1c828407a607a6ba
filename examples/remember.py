"""The reference page's second example, blocking: keep it across restarts, in a SQLite file.

    python examples/remember.py "My project is called Atlas and it ships on Friday."
    python examples/remember.py "When does my project ship, and what is it called?"
"""

import os
import sys

os.environ.setdefault("DATABASE_URL", "sqlite:///./memory.db")

from omnisync import MemoryRouter, OmniCoreAgent  # noqa: E402


# Any OpenAI-compatible server: OPENAI_BASE_URL, and OMNISYNC_MODEL / OMNISYNC_MAX_TOKENS (see the README).
MODEL = os.environ.get("OMNISYNC_MODEL", "gpt-5.4-mini")
# On a server of your own, a modest output limit: a small local model may write until its context is full.
LOCAL_LIMIT = 128 if os.environ.get("OPENAI_BASE_URL") else None
MAX_TOKENS = int(os.environ["OMNISYNC_MAX_TOKENS"]) if os.environ.get("OMNISYNC_MAX_TOKENS") else LOCAL_LIMIT


def main(message: str) -> None:
    agent = OmniCoreAgent(
        name="assistant",
        system_instruction="You are a helpful assistant. Answer in plain text, briefly.",
        model_config={"provider": "openai", "model": MODEL, "max_tokens": MAX_TOKENS},
        memory_router=MemoryRouter("sql"),
    )
    result = agent.run(message, session_id="user_123")
    print(result["response"])
    agent.cleanup()


if len(sys.argv) != 2:
    sys.exit(f'usage: python examples/remember.py "a message for the assistant"  (run it again with a question: it remembers)')
main(sys.argv[1])
