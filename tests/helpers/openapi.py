"""OpenAI's OpenAPI description, as validators for what we send and what hand-written cassettes answer.

Reads only the vendored subset in tests/openapi_spec/ (see its README), so a clone of the
repository alone validates everything.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

VENDORED_PATH = Path(__file__).resolve().parents[1] / "openapi_spec" / "openapi.json"


def spec_path() -> Path:
    return VENDORED_PATH


@lru_cache(maxsize=None)
def _registry() -> Registry:
    spec = json.loads(VENDORED_PATH.read_text(encoding="utf-8"))
    return Registry().with_resource("spec", Resource(spec, DRAFT202012))


@lru_cache(maxsize=None)
def _validator(schema_name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"spec#/components/schemas/{schema_name}"}, registry=_registry())


class OpenAPI:
    def errors(self, schema_name: str, document: object) -> list[str]:
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(schema_name).iter_errors(document)]

    def check_request(self, body: object) -> None:
        problems = self.errors("CreateChatCompletionRequest", body)
        assert not problems, problems

    def check_response(self, body: object) -> None:
        problems = self.errors("CreateChatCompletionResponse", body)
        assert not problems, problems

    def check_stream_chunk(self, chunk: object) -> None:
        problems = self.errors("CreateChatCompletionStreamResponse", chunk)
        assert not problems, problems


def openapi_or_skip() -> OpenAPI:
    """Kept for the tests that call it: the vendored description is always there, so nothing skips."""
    return OpenAPI()


def stream_chunk_errors(chunk: object) -> list[str]:
    """Problems of one streamed chunk against CreateChatCompletionStreamResponse.

    That schema marks fields ``nullable: true`` (an OpenAPI 3.0 keyword a 3.1 validator ignores)
    where OpenAI sends null on every chunk (finish_reason, logprobs, usage), so null is let through there.
    """
    path = spec_path()
    assert path is not None
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _nullable_validator(str(path)).iter_errors(chunk)]


@lru_cache(maxsize=None)
def _nullable_validator(path: str, schema_name: str = "CreateChatCompletionStreamResponse") -> Draft202012Validator:
    def allow_null(node: object) -> object:
        if isinstance(node, list):
            return [allow_null(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: allow_null(value) for key, value in node.items()}
        if node.pop("nullable", False):
            return {"anyOf": [node, {"type": "null"}]}
        return node

    spec = allow_null(json.loads(Path(path).read_text()))
    registry = Registry().with_resource("spec", Resource(spec, DRAFT202012))
    return Draft202012Validator({"$ref": f"spec#/components/schemas/{schema_name}"}, registry=registry)
