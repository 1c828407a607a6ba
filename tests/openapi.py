"""OpenAI's OpenAPI description, as validators for what we send and what hand-written cassettes answer."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "openai-openapi" / "openapi.json"


def spec_path() -> Path | None:
    given = os.environ.get("OMNISYNC_OPENAPI")
    path = Path(given) if given else DEFAULT_PATH
    return path if path.exists() else None


@lru_cache(maxsize=None)
def _validator(schema_name: str) -> Draft202012Validator:
    path = spec_path()
    assert path is not None
    spec = json.loads(path.read_text())
    registry = Registry().with_resource("spec", Resource(spec, DRAFT202012))
    return Draft202012Validator({"$ref": f"spec#/components/schemas/{schema_name}"}, registry=registry)


class OpenAPI:
    def errors(self, schema_name: str, document: object) -> list[str]:
        return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator(schema_name).iter_errors(document)]

    def check_request(self, body: object) -> None:
        problems = self.errors("CreateChatCompletionRequest", body)
        assert not problems, problems

    def check_response(self, body: object) -> None:
        problems = self.errors("CreateChatCompletionResponse", body)
        assert not problems, problems


def openapi_or_skip() -> OpenAPI:
    if spec_path() is None:
        reason = f"OpenAI's openapi.json is not at {DEFAULT_PATH} and OMNISYNC_OPENAPI is not set"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return OpenAPI()
