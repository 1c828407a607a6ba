"""The agent bench/serve_load.py serves: ``omnisync serve served_agent:agent`` (run from bench/).

Its store and model come from the environment, so every worker process builds the same agent:

    SERVE_LOAD_KIND     the store's kind: "sql" (SQLite, PostgreSQL) or "redis"
    SERVE_LOAD_URL      the store's URL
    SERVE_LOAD_PREFIX   Redis only: the key prefix (one per bench row, deleted afterwards)
    SERVE_LOAD_AGENT    the agent's name (one per bench row, deleted afterwards)
    SERVE_LOAD_MODEL    the instant local model's base URL (bench/model_server.py)
    SERVE_LOAD_CHUNKS   optional: the answer's length in streamed chunks (its max_tokens), else the model's 57 words

serve_load.py calls :func:`build` itself for the runs it makes directly, so both sides run the
same agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from omnisync import MemoryRouter, OmniCoreAgent


def build(env: Mapping[str, str]) -> OmniCoreAgent:
    kind, url = env["SERVE_LOAD_KIND"], env["SERVE_LOAD_URL"]
    options = {"prefix": env["SERVE_LOAD_PREFIX"]} if kind == "redis" else {}
    model = {"provider": "openai", "model": "bench", "base_url": env["SERVE_LOAD_MODEL"], "api_key": "bench", "max_retries": 0}
    if env.get("SERVE_LOAD_CHUNKS"):
        model["max_tokens"] = int(env["SERVE_LOAD_CHUNKS"])  # bench/model_server.py streams that many chunks
    return OmniCoreAgent(
        name=env["SERVE_LOAD_AGENT"],
        system_instruction="You answer briefly.",
        model_config=model,
        memory_router=MemoryRouter(kind, url=url, **options),
        agent_config={"memory_config": {"mode": "sliding_window", "value": 20}},
    )


if "SERVE_LOAD_AGENT" in os.environ:  # the server's import; serve_load.py imports this module for build() alone
    agent = build(os.environ)
