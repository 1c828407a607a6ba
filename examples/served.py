"""An agent to serve: `omnisync serve examples.served:agent` puts it behind HTTP.

Its model is any OpenAI-compatible server (OPENAI_BASE_URL, OPENAI_API_KEY, and OMNISYNC_MODEL /
OMNISYNC_MAX_TOKENS as in every example);
its memory is the store OMNISYNC_SERVE_STORE names ("sql", "redis", "mongodb", with that
kind's URL variable), else a SQLite file beside the working directory, so a restart keeps the
sessions and two workers share them. delete_file asks a person first: approve it over HTTP.
"""

import os

from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry

MODEL = os.environ.get("OMNISYNC_MODEL", "gpt-5.4-mini")
# On a server of your own, a modest output limit: a small local model may write until its context is full.
LOCAL_LIMIT = 128 if os.environ.get("OPENAI_BASE_URL") else None
MAX_TOKENS = int(os.environ["OMNISYNC_MAX_TOKENS"]) if os.environ.get("OMNISYNC_MAX_TOKENS") else LOCAL_LIMIT
STORE = os.environ.get("OMNISYNC_SERVE_STORE")

tools = ToolRegistry()


@tools.register_tool()
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tools.register_tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (a person approves it first). This example only says it did."""
    return f"deleted {path}"


agent = OmniCoreAgent(
    name="assistant",
    system_instruction="You are a helpful assistant. Answer in plain text, briefly.",
    model_config={"provider": "openai", "model": MODEL, "max_tokens": MAX_TOKENS},
    memory_router=MemoryRouter(STORE) if STORE else MemoryRouter("sql", url="sqlite:///served.db"),
    local_tools=tools,
)
