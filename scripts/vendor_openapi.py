"""Cut the schemas omnisync's tests validate against out of OpenAI's full OpenAPI description.

    python scripts/vendor_openapi.py path/to/openai-openapi/openapi.json

writes tests/openapi_spec/openapi.json: the roots below and every schema they reach through
``$ref``, at the same ``#/components/schemas/...`` paths, so references resolve unchanged.
The output depends only on the input file (no dates), so a test can compare it with a fresh cut.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOTS = (
    "CreateChatCompletionRequest",
    "CreateChatCompletionResponse",
    "CreateChatCompletionStreamResponse",
    "ChatCompletionTool",
    "ErrorResponse",
    # the Responses and Conversations API omnisync serves (omnisync/serve/openai_api/)
    "CreateResponse",
    "Response",
    "ResponseStreamEvent",
    "ResponseItemList",
    "CreateConversationBody",
    "UpdateConversationBody",
    "ConversationResource",
    "DeletedConversationResource",
    "ConversationItem",
    "ConversationItemList",
    "InputItem",
    "ListModelsResponse",
    "Model",
)
SCHEMA_PREFIX = "#/components/schemas/"
OUTPUT = Path(__file__).resolve().parents[1] / "tests" / "openapi_spec" / "openapi.json"


def references(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith(SCHEMA_PREFIX):
                raise ValueError(f"unexpected $ref outside components/schemas: {ref}")
            yield ref[len(SCHEMA_PREFIX):]
        for value in node.values():
            yield from references(value)
    elif isinstance(node, list):
        for value in node:
            yield from references(value)


def cut(full: dict[str, Any], source_sha256: str) -> dict[str, Any]:
    schemas = full["components"]["schemas"]
    wanted: set[str] = set()
    pending = list(ROOTS)
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        pending.extend(references(schemas[name]))
    return {
        "openapi": full["openapi"],
        "info": {
            **full["info"],
            "x-omnisync-vendored": {
                "roots": list(ROOTS),
                "source_sha256": source_sha256,
                "note": "a subset made by scripts/vendor_openapi.py; see README.md beside this file",
            },
        },
        "components": {"schemas": {name: schemas[name] for name in schemas if name in wanted}},
    }


def render(source: Path) -> str:
    raw = source.read_bytes()
    subset = cut(json.loads(raw), hashlib.sha256(raw).hexdigest())
    return json.dumps(subset, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="OpenAI's full openapi.json")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    options = parser.parse_args(argv)
    text = render(options.source)
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(text, encoding="utf-8")
    count = len(json.loads(text)["components"]["schemas"])
    print(f"wrote {options.output} ({count} schemas, {len(text.encode()) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
