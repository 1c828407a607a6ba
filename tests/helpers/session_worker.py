"""One process's share of runs in a session that another process runs in at the same time.

    python tests/helpers/session_worker.py KIND URL AGENT SESSION RUNS

The model is mocked HTTP that refuses unpaired tool calls as OpenAI does; every run asks for a
tool. Prints one JSON line: {"completed": n, "refused": [...], "errors": [...]}.
"""

import json
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for helpers

import requests  # noqa: E402

from omnisync import MemoryRouter, OmniCoreAgent, ToolRegistry  # noqa: E402
from omnisync.errors import OmnisyncError  # noqa: E402
from helpers.agent_helpers import LOCAL_MODEL  # noqa: E402
from helpers.fake_http import ScriptedAdapter, completion  # noqa: E402


def model(body):
    last = body["messages"][-1]
    if last["role"] == "tool":
        return completion(f"done: {last['content']}")
    call = {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Paris"}'}}
    return completion(None, [call])


def main(kind, url, agent_name, session, runs):
    adapter = ScriptedAdapter(model)
    original = requests.Session.__init__

    def session_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.mount("http://", adapter)

    requests.Session.__init__ = session_init
    tools = ToolRegistry()

    @tools.register_tool()
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    completed, errors = 0, []
    with MemoryRouter(kind, url=url) as router:
        agent = OmniCoreAgent(agent_name, "You are a test.", LOCAL_MODEL, memory_router=router, local_tools=tools,
                              agent_config={"session_wait_seconds": 120})
        for i in range(int(runs)):
            try:
                completed += agent.run(f"weather {os.getpid()} {i}", session_id=session)["status"] == "completed"
            except OmnisyncError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        agent.cleanup()
    print(json.dumps({"completed": completed, "refused": adapter.refused, "errors": errors}))


main(*sys.argv[1:])
