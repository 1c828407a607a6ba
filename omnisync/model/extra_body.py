"""``extra_body``: a server's own request options (llama.cpp's ``top_k``, ``min_p``, ``grammar``,
``cache_prompt``; vLLM's ``guided_json``...), merged into every request body as given.

Checked when model_config is built (and per call): names are strings, values are JSON, and no
name is one omnisync sets itself, so an option can never silently replace the messages, the
model, the tools or a sampling option that has a model_config key of its own. OpenAI's own API
refuses names it does not know; these are for servers that take them.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigurationError
from .http_options import check_mapping

SET_BY_OMNISYNC = {  # name -> what to do instead
    "model": "set model_config 'model'",
    "messages": "omnisync sends the conversation itself",
    "tools": "register tools with local_tools",
    "tool_choice": "omnisync sets it with the tools",
    "stream": "call agent.stream() for a streamed run",
    "stream_options": "omnisync asks for usage itself when it streams",
}


def check_extra_body(value: Any, sampling_options: tuple[str, ...], where: str = "model_config extra_body") -> dict[str, Any]:
    """``value`` as a dict to merge into request bodies, or a ConfigurationError naming the field and the fix."""
    value = check_mapping(where, value, "a server's own options, such as {'top_k': 40}")
    for name in value:
        if name in SET_BY_OMNISYNC:
            raise ConfigurationError(f"{where} cannot set {name!r}: omnisync sets it on every request ({SET_BY_OMNISYNC[name]})")
        if name in sampling_options:
            raise ConfigurationError(f"{where} cannot set {name!r}: it is a model_config option of its own; pass model_config {name!r} instead")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{where} must hold JSON values (strings, numbers, booleans, None, lists, dicts): {exc}") from exc
    return dict(value)
