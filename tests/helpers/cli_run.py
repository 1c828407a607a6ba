"""The omnisync command run as users run it (``python -m omnisync.cli`` in a subprocess), with an
environment that holds none of the machine's store variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from omnisync.stores.registry import KINDS

REPO = Path(__file__).resolve().parents[2]  # the checkout: its omnisync, and examples/
STORE_VARIABLES = tuple(name for kind in KINDS.values() for name in (kind.environment, *kind.settings) if name)
"""Every variable a store reads, as the registry declares them: no test inherits the machine's."""


def cli(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "omnisync.cli", *args], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )


def environment(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in STORE_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(variables)
    return env


def assert_one_line_failure(result: subprocess.CompletedProcess[str], status: int = 1) -> None:
    assert result.returncode == status, result
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
