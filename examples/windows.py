"""The reference page's windows example, blocking: a window of 4 messages, the rest summarized."""

from omnisync import OmniCoreAgent


def main() -> None:
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
        result = agent.run(message, session_id="user_123")
    print(result["response"])

    # no sleep needed: reading the history waits for a pending summary
    for message in agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:90].replace("\n", " "))
    agent.cleanup()


main()
