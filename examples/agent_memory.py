"""The reference page's first example, blocking: a conversation the agent remembers (in this process)."""

from omnisync import OmniCoreAgent


def main() -> None:
    agent = OmniCoreAgent(
        name="assistant",
        system_instruction="You are a helpful assistant. Answer in plain text, briefly.",
        model_config={"provider": "openai", "model": "gpt-5.4-mini"},
    )
    agent.run("My project is called Atlas.", session_id="user_123")
    result = agent.run("What is my project called?", session_id="user_123")
    print(result["response"])

    for message in agent.get_session_history("user_123"):
        print(message["role"], "|", message["content"][:60])
    agent.cleanup()


main()
