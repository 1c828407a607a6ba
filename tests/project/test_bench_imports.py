"""Every name a bench script takes from omnisync is there: a module moved or a name renamed
must not leave a benchmark that fails when its figures are made again."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(BENCH.glob("*.py")) if BENCH.is_dir() else []


def _taken(script: Path) -> list[tuple[str, str]]:
    """(module, name) of every ``from omnisync... import name``, inside functions too."""
    taken = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "omnisync" and not node.level:
            taken += [(node.module, alias.name) for alias in node.names]
    return taken


def _missing(module_name: str, name: str) -> bool:
    module = importlib.import_module(module_name)
    if hasattr(module, name):
        return False
    try:
        importlib.import_module(f"{module_name}.{name}")
    except ModuleNotFoundError:
        return True
    return False


@pytest.mark.skipif(not SCRIPTS, reason="no bench/ beside the tests (a copy of the tests alone)")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_every_name_a_bench_script_imports_from_omnisync_exists(script):
    missing = [f"{module}.{name}" for module, name in _taken(script) if _missing(module, name)]
    assert missing == []
