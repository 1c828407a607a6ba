"""A tool-calling agent on any OpenAI-compatible server, then the same session continued
by an agent with no tools: a session's stored tool exchanges are sent again as they were."""

import os
from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry


# Any OpenAI-compatible server: OPENAI_BASE_URL, and OMNISYNC_MODEL / OMNISYNC_MAX_TOKENS (see the README).
MODEL = os.environ.get("OMNISYNC_MODEL", "gpt-5.4-mini")
# On a server of your own, a modest output limit: a small local model may write until its context is full.
LOCAL_LIMIT = 128 if os.environ.get("OPENAI_BASE_URL") else None
MAX_TOKENS = int(os.environ["OMNISYNC_MAX_TOKENS"]) if os.environ.get("OMNISYNC_MAX_TOKENS") else LOCAL_LIMIT

tools = ToolRegistry()


@tools.register_tool()
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def main() -> None:
    memory = MemoryRouter("in_memory")
    model = {"provider": "openai", "model": MODEL, "max_tokens": MAX_TOKENS}
    calculator = OmniCoreAgent(
        name="calculator",
        system_instruction="You are a calculator. Use the add tool to add numbers, then give the sum.",
        model_config=model,
        local_tools=tools,
        memory_router=memory,
        agent_config={"max_steps": 3},
    )
    first = calculator.run("What is 2 plus 3?", session_id="sums")
    print("run 1:", first["status"], "|", first["response"] or first.get("error"))

    reader = OmniCoreAgent(
        name="calculator",
        system_instruction="You are a calculator. Answer in plain text, briefly.",
        model_config=model,
        memory_router=memory,
    )
    second = reader.run("What did the add tool return?", session_id="sums")
    print("run 2:", second["status"], "|", second["response"])

    for message in reader.get_session_history("sums"):
        calls = ", ".join(f"{c['function']['name']}({c['function']['arguments']})" for c in message.get("tool_calls") or [])
        print(message["role"], "|", calls or str(message["content"])[:60])
    calculator.cleanup()
    reader.cleanup()


main()
