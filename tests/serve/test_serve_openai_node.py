"""A second language: the official ``openai`` npm client holds a two-turn conversation with ``omnisync serve``.

Needs Node.js and npm (CI has both and reaches npm; elsewhere the test is skipped saying why).
The client is installed from tests/node/package-lock.json on first use.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from helpers.backends import IN_CI
from test_serve_openai import TOKEN, Served, model_url, sent, user_texts  # noqa: F401  (model_url, sent: fixtures)

from omnisync import MemoryRouter

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node"), shutil.which("npm")
    if None in found:
        if IN_CI:
            pytest.fail("Node.js and npm are needed for the npm client test (CI must have them)")
        pytest.skip("Node.js or npm is not installed")
    if not (NODE_DIR / "node_modules" / "openai").is_dir():
        subprocess.run([found[1], "ci", "--no-audit", "--no-fund", "--silent"], cwd=NODE_DIR, check=True, timeout=300)
    return str(found[0])


def test_the_npm_client_holds_a_conversation(node, model_url, sent, tmp_path):  # noqa: F811  (the imported fixtures)
    router = MemoryRouter("sql", url=f"sqlite:///{tmp_path}/memory.db")
    served = Served(f"oai-node-{uuid.uuid4().hex[:8]}", model_url, router)
    served.start()
    try:
        done = subprocess.run(
            [node, "two_turns.mjs", served.base + "/v1", TOKEN, served.name], cwd=NODE_DIR, capture_output=True, text=True, timeout=120
        )
    finally:
        served.stop()
        router.close()
        router.close()
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["texts"] == ["echo: my name is Ada", "echo: what is my name?", "echo: and again?"]
    assert seen["items"] == [["user", "my name is Ada"], ["assistant", "echo: my name is Ada"], ["user", "what is my name?"], ["assistant", "echo: what is my name?"]]
    assert user_texts(sent[-1]) == ["my name is Ada", "what is my name?", "and again?"]
