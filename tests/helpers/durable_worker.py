"""One process's part in a durable-run test: start, resume, or approve-and-resume a run.

    python -m omnisync.testing --cassette C tests/helpers/durable_worker.py KIND URL AGENT LEDGER ACTION ARG

Prints one JSON line: {"result": ...} or {"error": class name, "message": ...}.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for helpers

from omnisync import MemoryRouter  # noqa: E402
from omnisync.errors import OmnisyncError  # noqa: E402
from helpers.tool_agents import tool_agent  # noqa: E402


def main(kind, url, agent_name, ledger, action, argument):
    router = MemoryRouter(kind, url=url)
    agent = tool_agent(router, ledger=ledger, name=agent_name, run_lease_seconds=int(os.environ.get("LEASE", "300")))
    try:
        if action == "start":
            result = agent.run(argument, session_id="durable", on_busy=os.environ.get("ON_BUSY", "wait"))
        elif action == "approve_resume":
            run = agent.get_run(argument)
            for call in run["pending_calls"]:
                agent.resolve_approval(argument, call["id"], approved=True)
            result = agent.resume(argument)
        else:
            result = agent.resume(argument)
        print(json.dumps({"result": result}))
    except OmnisyncError as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
    finally:
        agent.cleanup()
        router.close()


main(*sys.argv[1:])
