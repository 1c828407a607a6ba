"""One of two processes folding the same session at once.

    python -m omnisync.testing --cassette C tests/helpers/fold_worker.py KIND URL AGENT BARRIER_FILE
Prints {"folded": bool, "called_model": bool}.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for helpers

from omnisync import MemoryRouter, OmniCoreAgent  # noqa: E402
from helpers.tool_agents import SCRIPTED_MODEL  # noqa: E402


def main(kind, url, agent_name, barrier):
    with MemoryRouter(kind, url=url) as router:
        agent = OmniCoreAgent(
            name=agent_name,
            system_instruction="You are a test.",
            model_config=SCRIPTED_MODEL,
            memory_router=router,
            agent_config={"memory_config": {"value": 4, "summary": {"enabled": True}}},
        )
        calls = []
        original = agent._client.complete
        agent._client.complete = lambda *a, **k: calls.append(1) or original(*a, **k)
        while not os.path.exists(barrier):
            time.sleep(0.005)
        written = agent._summarizer.fold(router.store, "race")
        print(json.dumps({"folded": written is not None, "called_model": bool(calls)}))
        agent.cleanup()


main(*sys.argv[1:])
