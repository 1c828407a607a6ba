"""The reference page's windows example, blocking: a window of 4 messages, the rest summarized."""

import os
from omnisync import OmniCoreAgent


# Any OpenAI-compatible server: OPENAI_BASE_URL, and OMNISYNC_MODEL / OMNISYNC_MAX_TOKENS (see the README).
MODEL = os.environ.get("OMNISYNC_MODEL", "gpt-5.4-mini")
# On a server of your own, a modest output limit: a small local model may write until its context is full.
LOCAL_LIMIT = 128 if os.environ.get("OPENAI_BASE_URL") else None
MAX_TOKENS = int(os.environ["OMNISYNC_MAX_TOKENS"]) if os.environ.get("OMNISYNC_MAX_TOKENS") else LOCAL_LIMIT


def main() -> None:
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
        result = agent.run(message, session_id="user_123")
    print(result["response"])

    # no sleep needed: reading the history waits for a pending summary
    for message in agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:90].replace("\n", " "))
    agent.cleanup()


main()
