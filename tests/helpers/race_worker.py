"""One process's part in tests/runs/test_driver_races.py: drive a run against a model on loopback.

    python tests/helpers/race_worker.py STORE_KIND URL AGENT MODEL_URL ACTION LEASE

ACTION is ``stream`` (prints the run's result as one JSON line when it ends) or ``run``.
"""

import json
import sys

from omnisync import MemoryRouter, OmniCoreAgent
from omnisync.run_events import RunFinished
from helpers.agent_helpers import LOCAL_MODEL


def main(kind: str, url: str, name: str, model_url: str, action: str, lease: str) -> None:
    with MemoryRouter(kind, url=url) as router:
        agent = OmniCoreAgent(
            name=name,
            system_instruction="You are a test.",
            model_config={**LOCAL_MODEL, "base_url": model_url, "timeout": 120},
            memory_router=router,
            agent_config={"run_lease_seconds": int(lease)},
        )
        if action == "stream":
            with agent.stream("hello", session_id="s") as stream:
                for event in stream:
                    if isinstance(event, RunFinished):
                        print(json.dumps(event.result), flush=True)
        else:
            print(json.dumps(agent.run("hello", session_id="s")), flush=True)


main(*sys.argv[1:])
